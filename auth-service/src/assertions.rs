//! Principal assertions for `Authenticate`: the content (principal, effective
//! scopes, grants) is computed from this request's live read, and every
//! answer is a new signature, for one call of the tool-service: audience the
//! tool-service, a unique `jti` (which the tool-service accepts once), and an
//! `exp` no later than the call's deadline (`valid_for`), the configured
//! bound (`assertion_ttl_secs`) and the presented token's `exp`.

use std::time::Duration;

use chataigne_common::assertion::AssertionContract;

use crate::error::AuthError;
use crate::tokens::{Claims, TokenKind, Tokens};

/// What an assertion says, before its times and `jti` are set.
pub struct Content {
    pub sub: String,
    pub client_id: String,
    pub scope: String,
    pub sid: String,
    pub grants: Option<chataigne_common::grants::Grants>,
}

/// A signed assertion and its `exp` (Unix seconds).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Issued {
    pub token: String,
    pub exp: i64,
}

/// Signs assertions, each for one call.
pub struct Assertions {
    ttl_secs: i64,
}

impl Assertions {
    pub fn new(ttl_secs: i64) -> Assertions {
        Assertions {
            ttl_secs: ttl_secs.max(1),
        }
    }

    /// The assertion of `content` for one call lasting at most `valid_for`
    /// (rounded up to whole seconds; `None`: the configured bound), made with
    /// a token expiring at `token_exp`.
    pub fn issue(
        &self,
        tokens: &Tokens,
        content: Content,
        token_exp: i64,
        valid_for: Option<Duration>,
        now_secs: i64,
    ) -> Result<Issued, AuthError> {
        let lifetime = valid_for.map_or(self.ttl_secs, |valid_for| {
            let secs = valid_for.as_millis().div_ceil(1000);
            i64::try_from(secs)
                .unwrap_or(i64::MAX)
                .clamp(1, self.ttl_secs)
        });
        let claims = Claims {
            iss: tokens.issuer().to_owned(),
            sub: content.sub,
            aud: AssertionContract::AUDIENCE.to_owned(),
            client_id: content.client_id,
            scope: content.scope,
            sid: content.sid,
            exp: now_secs.saturating_add(lifetime).min(token_exp),
            iat: now_secs,
            jti: uuid::Uuid::new_v4().simple().to_string(),
            grants: content.grants,
        };
        Ok(Issued {
            token: tokens.sign(TokenKind::Assertion, &claims)?,
            exp: claims.exp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{self, KeyRing};
    use chataigne_common::grants::{Grants, Membership};

    const NOW: i64 = 1_000_000;

    fn tokens() -> Tokens {
        let key = keys::generate().unwrap();
        Tokens::new(
            KeyRing::from_stored(&[key]).unwrap(),
            "https://auth.example".into(),
        )
    }

    fn content() -> Content {
        Content {
            sub: "usr_1".into(),
            client_id: "client".into(),
            scope: "orders.read".into(),
            sid: "ses_1".into(),
            grants: Some(Grants {
                platform_admin: false,
                memberships: vec![Membership {
                    organization_id: "org_a".into(),
                    location_id: None,
                    permissions: vec!["orders.read".into()],
                }],
            }),
        }
    }

    fn claims(tokens: &Tokens, issued: &Issued) -> Claims {
        tokens
            .verify(TokenKind::Assertion, &issued.token, "", NOW)
            .unwrap()
            .claims
    }

    #[test]
    fn every_answer_is_a_new_assertion_with_a_unique_id_for_the_tool_service() {
        let tokens = tokens();
        let assertions = Assertions::new(120);
        let first = assertions
            .issue(&tokens, content(), NOW + 3600, None, NOW)
            .unwrap();
        let again = assertions
            .issue(&tokens, content(), NOW + 3600, None, NOW)
            .unwrap();
        assert_ne!(again.token, first.token);
        let (first, again) = (claims(&tokens, &first), claims(&tokens, &again));
        assert_ne!(first.jti, again.jti);
        assert_eq!(first.jti.len(), 32);
        assert_eq!(first.aud, AssertionContract::AUDIENCE);
        assert_eq!(first.grants, content().grants);
    }

    #[test]
    fn the_lifetime_is_the_calls_deadline_bounded_by_the_ttl_and_the_token() {
        let tokens = tokens();
        let assertions = Assertions::new(120);
        let exp = |token_exp: i64, valid_for: Option<Duration>| {
            assertions
                .issue(&tokens, content(), token_exp, valid_for, NOW)
                .unwrap()
                .exp
        };
        // The call's deadline, rounded up to a whole second.
        assert_eq!(
            exp(NOW + 3600, Some(Duration::from_millis(15_000))),
            NOW + 15
        );
        assert_eq!(
            exp(NOW + 3600, Some(Duration::from_millis(14_001))),
            NOW + 15
        );
        assert_eq!(exp(NOW + 3600, Some(Duration::from_millis(1))), NOW + 1);
        // Never beyond the configured bound, nor the presented token.
        assert_eq!(exp(NOW + 3600, Some(Duration::from_secs(600))), NOW + 120);
        assert_eq!(exp(NOW + 3600, None), NOW + 120);
        assert_eq!(exp(NOW + 10, Some(Duration::from_secs(30))), NOW + 10);
    }
}
