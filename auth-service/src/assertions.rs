//! Principal assertions for `Authenticate`: the content (principal, effective
//! scopes, grants) is computed from this request's live read; when an
//! assertion with byte-identical content was signed by the current key
//! shortly before, that same assertion is returned instead of a new
//! signature. A reused assertion keeps its own `exp`, never later than the
//! presented token's, and is handed out only while at least half of its
//! lifetime remains.

use chataigne_common::expiring::ExpiringMap;
use chataigne_common::jws;

use crate::error::AuthError;
use crate::tokens::{Claims, TokenKind, Tokens};

/// Most reusable assertions remembered at once.
const REUSABLE_CAPACITY: usize = 16 * 1024;

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

/// Signs assertions, reusing one while its content is unchanged.
pub struct Assertions {
    ttl_secs: i64,
    reusable: ExpiringMap<[u8; 32], Issued>,
}

impl Assertions {
    pub fn new(ttl_secs: i64) -> Assertions {
        Assertions {
            ttl_secs: ttl_secs.max(1),
            reusable: ExpiringMap::new(REUSABLE_CAPACITY),
        }
    }

    /// The assertion of `content` for a token expiring at `token_exp`.
    pub fn issue(
        &self,
        tokens: &Tokens,
        content: Content,
        token_exp: i64,
        now_secs: i64,
    ) -> Result<Issued, AuthError> {
        let mut claims = Claims {
            iss: tokens.issuer().to_owned(),
            sub: content.sub,
            aud: crate::tokens::INTERNAL_AUDIENCE.to_owned(),
            client_id: content.client_id,
            scope: content.scope,
            sid: content.sid,
            exp: 0,
            iat: 0,
            jti: String::new(),
            grants: content.grants,
        };
        let keys = tokens.keys();
        // The exact bytes the content signs as, and the key that signs it.
        let body = serde_json::to_vec(&claims)
            .map_err(|e| AuthError::Internal(format!("serialising an assertion failed: {e}")))?;
        let key = jws::digest(&[keys.signing_kid().as_bytes(), &body]);
        if let Some(issued) = self.reusable.get(&key, now_secs)
            && issued.exp <= token_exp
        {
            return Ok(issued);
        }
        claims.iat = now_secs;
        claims.exp = (now_secs + self.ttl_secs).min(token_exp);
        claims.jti = uuid::Uuid::new_v4().simple().to_string();
        let issued = Issued {
            token: tokens.sign(TokenKind::Assertion, &claims)?,
            exp: claims.exp,
        };
        // Reusable until half of its lifetime is left.
        let reusable_until = claims.exp - self.ttl_secs / 2;
        if reusable_until > now_secs {
            self.reusable
                .insert(key, issued.clone(), reusable_until, now_secs);
        }
        Ok(issued)
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

    fn content(location: Option<&str>) -> Content {
        Content {
            sub: "usr_1".into(),
            client_id: "client".into(),
            scope: "orders.read".into(),
            sid: "ses_1".into(),
            grants: Some(Grants {
                platform_admin: false,
                memberships: vec![Membership {
                    organization_id: "org_a".into(),
                    location_id: location.map(Into::into),
                    permissions: vec!["orders.read".into()],
                }],
            }),
        }
    }

    #[test]
    fn unchanged_content_gets_the_same_assertion_until_half_its_lifetime() {
        let tokens = tokens();
        let assertions = Assertions::new(120);
        let first = assertions
            .issue(&tokens, content(None), NOW + 3600, NOW)
            .unwrap();
        assert_eq!(first.exp, NOW + 120);
        let again = assertions
            .issue(&tokens, content(None), NOW + 3600, NOW + 60)
            .unwrap();
        assert_eq!(again, first);
        let later = assertions
            .issue(&tokens, content(None), NOW + 3600, NOW + 61)
            .unwrap();
        assert_ne!(later.token, first.token);
        assert_eq!(later.exp, NOW + 61 + 120);
    }

    #[test]
    fn changed_grants_get_a_new_assertion_at_once() {
        let tokens = tokens();
        let assertions = Assertions::new(120);
        let first = assertions
            .issue(&tokens, content(None), NOW + 3600, NOW)
            .unwrap();
        let narrowed = assertions
            .issue(&tokens, content(Some("loc_1")), NOW + 3600, NOW + 1)
            .unwrap();
        assert_ne!(narrowed.token, first.token);
        let verified = tokens
            .verify(TokenKind::Assertion, &narrowed.token, "", NOW + 1)
            .unwrap();
        assert_eq!(verified.claims.grants, content(Some("loc_1")).grants);
    }

    #[test]
    fn a_reused_assertion_never_outlives_the_presented_token() {
        let tokens = tokens();
        let assertions = Assertions::new(120);
        let first = assertions
            .issue(&tokens, content(None), NOW + 3600, NOW)
            .unwrap();
        // Another token of the same session expiring sooner.
        let short = assertions
            .issue(&tokens, content(None), NOW + 30, NOW + 1)
            .unwrap();
        assert_ne!(short.token, first.token);
        assert_eq!(short.exp, NOW + 30);
    }

    #[test]
    fn a_new_signing_key_gets_a_new_assertion() {
        let tokens = tokens();
        let assertions = Assertions::new(120);
        let first = assertions
            .issue(&tokens, content(None), NOW + 3600, NOW)
            .unwrap();
        let mut newer = keys::generate().unwrap();
        newer.created_at_ms += 1000;
        tokens.replace_keys(KeyRing::from_stored(&[newer]).unwrap());
        let second = assertions
            .issue(&tokens, content(None), NOW + 3600, NOW + 1)
            .unwrap();
        assert_ne!(second.token, first.token);
        assert!(
            tokens
                .verify(TokenKind::Assertion, &second.token, "", NOW + 1)
                .is_ok()
        );
    }
}
