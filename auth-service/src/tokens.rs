//! Signing and verification of the two JWT kinds: OAuth access tokens
//! (`typ` "at+jwt", audience = resource URL) and principal assertions
//! (`typ` "principal+jwt", audience "chataigne-internal"). ES256 only.

use std::sync::{Arc, RwLock};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, Header, Validation};
use serde::{Deserialize, Serialize};

use crate::error::{AuthError, AuthFailure};
use crate::keys::KeyRing;

/// Audience of principal assertions.
pub const INTERNAL_AUDIENCE: &str = "chataigne-internal";
/// Clock skew tolerated on `exp`, `nbf` and `iat`: a token is refused from
/// 5 s after its `exp`, and until 5 s before its `nbf` (when it has one).
const LEEWAY_SECS: u64 = 5;

/// Which kind of token is signed or expected.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Access,
    Assertion,
}

impl TokenKind {
    fn typ(self) -> &'static str {
        match self {
            TokenKind::Access => "at+jwt",
            TokenKind::Assertion => "principal+jwt",
        }
    }

    fn accepts_typ(self, typ: &str) -> bool {
        let typ = typ.strip_prefix("application/").unwrap_or(typ);
        typ.eq_ignore_ascii_case(self.typ())
    }
}

/// Claims of both token kinds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub sub: String,
    pub aud: String,
    pub client_id: String,
    /// Space-separated scopes.
    pub scope: String,
    pub sid: String,
    pub exp: i64,
    pub iat: i64,
    pub jti: String,
    /// Principal assertions only: the principal's live grants when they were
    /// signed, absent when they exceed the bound (the tool-service then asks
    /// `Authorize` / `ResolveAccess`). Never set on access tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grants: Option<chataigne_common::grants::Grants>,
}

/// A verified token: its claims and the `kid` of the key that signed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub claims: Claims,
    pub kid: String,
}

/// Signs and verifies tokens with this process's keys for one issuer. The key
/// ring is replaced as a whole when keys are rotated or reloaded.
pub struct Tokens {
    keys: RwLock<Arc<KeyRing>>,
    issuer: String,
    template: Validation,
    assertion_validation: Validation,
}

impl Tokens {
    pub fn new(keys: KeyRing, issuer: String) -> Tokens {
        let mut template = Validation::new(Algorithm::ES256);
        template.leeway = LEEWAY_SECS;
        template.validate_exp = true;
        template.validate_nbf = true;
        template.set_issuer(&[&issuer]);
        template.set_required_spec_claims(&["exp", "iat", "iss", "aud", "sub"]);
        let mut assertion_validation = template.clone();
        assertion_validation.set_audience(&[INTERNAL_AUDIENCE]);
        Tokens {
            keys: RwLock::new(Arc::new(keys)),
            issuer,
            template,
            assertion_validation,
        }
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The current key ring.
    pub fn keys(&self) -> Arc<KeyRing> {
        match self.keys.read() {
            Ok(keys) => keys.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the key ring (rotation, reload).
    pub fn replace_keys(&self, ring: KeyRing) {
        let ring = Arc::new(ring);
        match self.keys.write() {
            Ok(mut keys) => *keys = ring,
            Err(poisoned) => *poisoned.into_inner() = ring,
        }
    }

    /// Whether the `kid` of `token` is in the current ring (false for
    /// unreadable tokens and tokens without a `kid`).
    pub fn knows_kid_of(&self, token: &str) -> bool {
        jsonwebtoken::decode_header(token)
            .ok()
            .and_then(|header| header.kid)
            .is_some_and(|kid| self.keys().decoding_key(&kid).is_some())
    }

    /// The kind a token claims to be by its `typ` (unverified).
    pub fn claimed_kind(token: &str) -> Option<TokenKind> {
        let typ = jsonwebtoken::decode_header(token).ok()?.typ?;
        [TokenKind::Access, TokenKind::Assertion]
            .into_iter()
            .find(|kind| kind.accepts_typ(&typ))
    }

    /// Signs `claims` as a token of `kind` with the current key.
    pub fn sign(&self, kind: TokenKind, claims: &Claims) -> Result<String, AuthError> {
        let keys = self.keys();
        let mut header = Header::new(Algorithm::ES256);
        header.typ = Some(kind.typ().to_owned());
        header.kid = Some(keys.signing_kid().to_owned());
        jsonwebtoken::encode(&header, claims, keys.encoding_key())
            .map_err(|e| AuthError::Internal(format!("signing a token failed: {e}")))
    }

    /// Verifies a token of `kind`: algorithm, `typ`, key, signature, `iss`,
    /// `aud` (= `audience` for access tokens), `exp` and `iat`. Whether the
    /// key is still active in the store is the live pass's question.
    pub fn verify(
        &self,
        kind: TokenKind,
        token: &str,
        audience: &str,
        now_secs: i64,
    ) -> Result<Verified, AuthFailure> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| AuthFailure::TokenInvalid)?;
        if header.alg != Algorithm::ES256
            || !header
                .typ
                .as_deref()
                .is_some_and(|typ| kind.accepts_typ(typ))
        {
            return Err(AuthFailure::TokenInvalid);
        }
        let keys = self.keys();
        let kid = header.kid.ok_or(AuthFailure::TokenInvalid)?;
        let key = keys.decoding_key(&kid).ok_or(AuthFailure::TokenInvalid)?;
        let access_validation;
        let validation = match kind {
            TokenKind::Assertion => &self.assertion_validation,
            TokenKind::Access => {
                let mut validation = self.template.clone();
                validation.set_audience(&[audience]);
                access_validation = validation;
                &access_validation
            }
        };
        let data =
            jsonwebtoken::decode::<Claims>(token, key, validation).map_err(|error| match error
                .kind()
            {
                ErrorKind::ExpiredSignature => AuthFailure::TokenExpired,
                ErrorKind::InvalidAudience => match kind {
                    TokenKind::Access => AuthFailure::AudienceMismatch,
                    TokenKind::Assertion => AuthFailure::TokenInvalid,
                },
                _ => AuthFailure::TokenInvalid,
            })?;
        let claims = data.claims;
        let leeway = i64::try_from(LEEWAY_SECS).unwrap_or(0);
        if claims.iat > now_secs + leeway || claims.sid.is_empty() || claims.client_id.is_empty() {
            return Err(AuthFailure::TokenInvalid);
        }
        Ok(Verified { claims, kid })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys;

    const ISSUER: &str = "https://auth.example";
    const RESOURCE: &str = "https://mcp.example/mcp/v1";

    fn tokens() -> Tokens {
        let key = keys::generate().unwrap();
        Tokens::new(KeyRing::from_stored(&[key]).unwrap(), ISSUER.to_owned())
    }

    fn now() -> i64 {
        crate::model::now_ms() / 1000
    }

    fn claims(aud: &str, exp_in: i64) -> Claims {
        Claims {
            iss: ISSUER.into(),
            sub: "usr_1".into(),
            aud: aud.into(),
            client_id: "client".into(),
            scope: "orders.read".into(),
            sid: "ses_1".into(),
            exp: now() + exp_in,
            iat: now(),
            jti: "j".into(),
            grants: None,
        }
    }

    #[test]
    fn an_access_token_round_trips() {
        let tokens = tokens();
        let token = tokens
            .sign(TokenKind::Access, &claims(RESOURCE, 60))
            .unwrap();
        let verified = tokens
            .verify(TokenKind::Access, &token, RESOURCE, now())
            .unwrap();
        assert_eq!(verified.claims.sub, "usr_1");
        assert_eq!(verified.kid, tokens.keys().signing_kid());
    }

    #[test]
    fn kinds_are_not_interchangeable_even_with_the_right_audience() {
        let tokens = tokens();
        let assertion = tokens
            .sign(TokenKind::Assertion, &claims(INTERNAL_AUDIENCE, 60))
            .unwrap();
        assert_eq!(
            tokens.verify(TokenKind::Access, &assertion, INTERNAL_AUDIENCE, now()),
            Err(AuthFailure::TokenInvalid)
        );
        let access = tokens
            .sign(TokenKind::Access, &claims(INTERNAL_AUDIENCE, 60))
            .unwrap();
        assert_eq!(
            tokens.verify(TokenKind::Assertion, &access, INTERNAL_AUDIENCE, now()),
            Err(AuthFailure::TokenInvalid)
        );
    }

    #[test]
    fn expiry_audience_issuer_and_foreign_keys_are_refused() {
        let tokens = tokens();
        let expired = tokens
            .sign(TokenKind::Access, &claims(RESOURCE, -30))
            .unwrap();
        assert_eq!(
            tokens.verify(TokenKind::Access, &expired, RESOURCE, now()),
            Err(AuthFailure::TokenExpired)
        );
        let other_aud = tokens
            .sign(TokenKind::Access, &claims("https://x", 60))
            .unwrap();
        assert_eq!(
            tokens.verify(TokenKind::Access, &other_aud, RESOURCE, now()),
            Err(AuthFailure::AudienceMismatch)
        );
        let mut wrong_iss = claims(RESOURCE, 60);
        wrong_iss.iss = "https://evil.example".into();
        let wrong_iss = tokens.sign(TokenKind::Access, &wrong_iss).unwrap();
        assert_eq!(
            tokens.verify(TokenKind::Access, &wrong_iss, RESOURCE, now()),
            Err(AuthFailure::TokenInvalid)
        );
        let foreign = self::tokens()
            .sign(TokenKind::Access, &claims(RESOURCE, 60))
            .unwrap();
        assert_eq!(
            tokens.verify(TokenKind::Access, &foreign, RESOURCE, now()),
            Err(AuthFailure::TokenInvalid)
        );
        assert_eq!(
            tokens.verify(TokenKind::Access, "not.a.jwt", RESOURCE, now()),
            Err(AuthFailure::TokenInvalid)
        );
    }

    #[test]
    fn a_token_not_valid_yet_is_refused_beyond_the_leeway() {
        let tokens = tokens();
        let with_nbf = |nbf: i64| {
            let keys = tokens.keys();
            let mut header = Header::new(Algorithm::ES256);
            header.typ = Some("at+jwt".to_owned());
            header.kid = Some(keys.signing_kid().to_owned());
            let mut body = serde_json::to_value(claims(RESOURCE, 7200)).unwrap();
            body["nbf"] = nbf.into();
            jsonwebtoken::encode(&header, &body, keys.encoding_key()).unwrap()
        };
        let in_an_hour = with_nbf(now() + 3600);
        assert_eq!(
            tokens
                .verify(TokenKind::Access, &in_an_hour, RESOURCE, now())
                .map(|_| ()),
            Err(AuthFailure::TokenInvalid)
        );
        let within_leeway = with_nbf(now() + 2);
        assert!(
            tokens
                .verify(TokenKind::Access, &within_leeway, RESOURCE, now())
                .is_ok()
        );
        let past = with_nbf(now() - 60);
        assert!(
            tokens
                .verify(TokenKind::Access, &past, RESOURCE, now())
                .is_ok()
        );
    }
}
