//! Signing and verification of the two JWT kinds: OAuth access tokens
//! (`typ` "at+jwt", audience = resource URL) and principal assertions
//! (`typ` "principal+jwt", audience "chataigne-internal", see
//! [`AssertionContract`]). ES256 only, with keys parsed once (`keys`).
//!
//! A verification that succeeds is remembered, keyed by a SHA-256 of the
//! token (never the token itself), until the token's `exp` (plus the leeway):
//! presenting the same token again skips the signature check but repeats the
//! time checks and requires its key to still be in this replica's ring. Only
//! the result of signature and claims verification is cached; the live state
//! (sessions, users, clients, consents, memberships, retired keys) is read by
//! the caller at every request.

use std::sync::{Arc, RwLock};

use chataigne_common::assertion::{AssertionContract, TimeCheck, typ_matches};
use chataigne_common::expiring::ExpiringMap;
use chataigne_common::jws;
use jsonwebtoken::{Algorithm, Header};
use serde::{Deserialize, Serialize};

use crate::error::{AuthError, AuthFailure};
use crate::keys::KeyRing;

/// Audience of principal assertions.
pub const INTERNAL_AUDIENCE: &str = AssertionContract::AUDIENCE;
/// Most verified tokens remembered at once.
const VERIFIED_CAPACITY: usize = 16 * 1024;

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
            TokenKind::Assertion => AssertionContract::TYP,
        }
    }

    fn accepts_typ(self, typ: &str) -> bool {
        typ_matches(typ, self.typ())
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

/// The claims as read from a token: [`Claims`] and the optional `nbf`.
#[derive(Deserialize)]
struct ReadClaims {
    #[serde(flatten)]
    claims: Claims,
    #[serde(default)]
    nbf: Option<i64>,
}

/// A verified token: its claims and the `kid` of the key that signed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub claims: Claims,
    pub kid: String,
}

/// A remembered verification: what it proved and the `nbf` to re-check.
#[derive(Clone)]
struct Remembered {
    verified: Verified,
    nbf: Option<i64>,
}

/// Signs and verifies tokens with this process's keys for one issuer. The key
/// ring is replaced as a whole when keys are rotated or reloaded.
pub struct Tokens {
    keys: RwLock<Arc<KeyRing>>,
    issuer: String,
    verified: ExpiringMap<[u8; 32], Remembered>,
}

impl Tokens {
    pub fn new(keys: KeyRing, issuer: String) -> Tokens {
        Tokens {
            keys: RwLock::new(Arc::new(keys)),
            issuer,
            verified: ExpiringMap::new(VERIFIED_CAPACITY),
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

    /// Replaces the key ring (rotation, reload) and forgets every remembered
    /// verification.
    pub fn replace_keys(&self, ring: KeyRing) {
        let ring = Arc::new(ring);
        match self.keys.write() {
            Ok(mut keys) => *keys = ring,
            Err(poisoned) => *poisoned.into_inner() = ring,
        }
        self.verified.clear();
    }

    /// Whether the `kid` of `token` is in the current ring (false for
    /// unreadable tokens and tokens without a `kid`).
    pub fn knows_kid_of(&self, token: &str) -> bool {
        jws::header::<Header>(token)
            .ok()
            .and_then(|header| header.kid)
            .is_some_and(|kid| self.keys().verifier(&kid).is_some())
    }

    /// The kind a token claims to be by its `typ` (unverified).
    pub fn claimed_kind(token: &str) -> Option<TokenKind> {
        let typ = jws::header::<Header>(token).ok()?.typ?;
        [TokenKind::Access, TokenKind::Assertion]
            .into_iter()
            .find(|kind| kind.accepts_typ(&typ))
    }

    /// Signs `claims` as a token of `kind` with the current key.
    pub fn sign(&self, kind: TokenKind, claims: &Claims) -> Result<String, AuthError> {
        let keys = self.keys();
        keys.signer()
            .sign(&header(kind, keys.signing_kid()), claims)
            .map_err(|e| AuthError::Internal(format!("signing a token failed: {e}")))
    }

    /// Verifies a token of `kind`: algorithm, `typ`, key, signature, `iss`,
    /// `aud` (= `audience` for access tokens), `exp`, `nbf` and `iat`. Whether
    /// the key is still active in the store is the live pass's question.
    pub fn verify(
        &self,
        kind: TokenKind,
        token: &str,
        audience: &str,
        now_secs: i64,
    ) -> Result<Verified, AuthFailure> {
        let audience = match kind {
            TokenKind::Access => audience,
            TokenKind::Assertion => AssertionContract::AUDIENCE,
        };
        let key = jws::digest(&[kind.typ().as_bytes(), audience.as_bytes(), token.as_bytes()]);
        let keys = self.keys();
        if let Some(Remembered { verified, nbf }) = self.verified.get(&key, now_secs) {
            if keys.verifier(&verified.kid).is_none() {
                return Err(AuthFailure::TokenInvalid);
            }
            times(&verified.claims, nbf, now_secs)?;
            return Ok(verified);
        }
        let remembered = self.verify_signed(&keys, kind, token, audience, now_secs)?;
        let verified = remembered.verified.clone();
        let until = verified
            .claims
            .exp
            .saturating_add(AssertionContract::LEEWAY_SECS);
        self.verified.insert(key, remembered, until, now_secs);
        Ok(verified)
    }

    /// The full check: header, signature, then claims.
    fn verify_signed(
        &self,
        keys: &KeyRing,
        kind: TokenKind,
        token: &str,
        audience: &str,
        now_secs: i64,
    ) -> Result<Remembered, AuthFailure> {
        let header = jws::header::<Header>(token).map_err(|_| AuthFailure::TokenInvalid)?;
        if header.alg != Algorithm::ES256
            || !header
                .typ
                .as_deref()
                .is_some_and(|typ| kind.accepts_typ(typ))
        {
            return Err(AuthFailure::TokenInvalid);
        }
        let kid = header.kid.ok_or(AuthFailure::TokenInvalid)?;
        let verifier = keys.verifier(&kid).ok_or(AuthFailure::TokenInvalid)?;
        let payload = verifier
            .verify(token)
            .map_err(|_| AuthFailure::TokenInvalid)?;
        let ReadClaims { claims, nbf } =
            serde_json::from_slice(&payload).map_err(|_| AuthFailure::TokenInvalid)?;
        times(&claims, nbf, now_secs)?;
        if claims.iss != self.issuer {
            return Err(AuthFailure::TokenInvalid);
        }
        if claims.aud != audience {
            return Err(match kind {
                TokenKind::Access => AuthFailure::AudienceMismatch,
                TokenKind::Assertion => AuthFailure::TokenInvalid,
            });
        }
        if claims.sid.is_empty() || claims.client_id.is_empty() {
            return Err(AuthFailure::TokenInvalid);
        }
        Ok(Remembered {
            verified: Verified { claims, kid },
            nbf,
        })
    }
}

/// The JOSE header of a token of `kind` signed with `kid`.
fn header(kind: TokenKind, kid: &str) -> Header {
    let mut header = Header::new(Algorithm::ES256);
    header.typ = Some(kind.typ().to_owned());
    header.kid = Some(kid.to_owned());
    header
}

/// `exp`, `nbf` and `iat` against `now_secs`, with the contract's leeway.
fn times(claims: &Claims, nbf: Option<i64>, now_secs: i64) -> Result<(), AuthFailure> {
    match AssertionContract::times_hold(claims.exp, nbf, claims.iat, now_secs) {
        TimeCheck::Valid => Ok(()),
        TimeCheck::Expired => Err(AuthFailure::TokenExpired),
        TimeCheck::NotYetValid => Err(AuthFailure::TokenInvalid),
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
            let mut body = serde_json::to_value(claims(RESOURCE, 7200)).unwrap();
            body["nbf"] = nbf.into();
            keys.signer()
                .sign(&header(TokenKind::Access, keys.signing_kid()), &body)
                .unwrap()
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

    #[test]
    fn a_critical_or_unencoded_header_is_refused_on_both_kinds() {
        let tokens = tokens();
        let keys = tokens.keys();
        for kind in [TokenKind::Access, TokenKind::Assertion] {
            let audience = match kind {
                TokenKind::Access => RESOURCE,
                TokenKind::Assertion => INTERNAL_AUDIENCE,
            };
            let claims = claims(audience, 60);
            let base = serde_json::to_value(header(kind, keys.signing_kid())).unwrap();
            let sign = |extra: serde_json::Value| {
                let mut header = base.clone();
                header
                    .as_object_mut()
                    .unwrap()
                    .extend(extra.as_object().unwrap().clone());
                keys.signer().sign(&header, &claims).unwrap()
            };
            for extra in [
                serde_json::json!({"crit": ["exp"]}),
                serde_json::json!({"crit": ["alg"]}),
                serde_json::json!({"crit": ["urn:example:unknown"], "urn:example:unknown": true}),
                serde_json::json!({"b64": false, "crit": ["b64"]}),
                serde_json::json!({"b64": false}),
            ] {
                assert_eq!(
                    tokens.verify(kind, &sign(extra.clone()), audience, now()),
                    Err(AuthFailure::TokenInvalid),
                    "{kind:?} {extra}"
                );
            }
            // The same header without them verifies.
            assert!(
                tokens
                    .verify(kind, &sign(serde_json::json!({})), audience, now())
                    .is_ok()
            );
        }
    }

    #[test]
    fn tokens_are_byte_compatible_with_the_jsonwebtoken_crate() {
        let key = keys::generate().unwrap();
        let ring = KeyRing::from_stored(std::slice::from_ref(&key)).unwrap();
        let tokens = Tokens::new(ring, ISSUER.to_owned());
        let claims = claims(RESOURCE, 60);
        // Theirs verifies here.
        let encoding = jsonwebtoken::EncodingKey::from_ec_der(&key.pkcs8);
        let theirs =
            jsonwebtoken::encode(&header(TokenKind::Access, &key.kid), &claims, &encoding).unwrap();
        let verified = tokens
            .verify(TokenKind::Access, &theirs, RESOURCE, now())
            .unwrap();
        assert_eq!(verified.claims, claims);
        // Ours verifies there, with the same header and payload bytes.
        let ours = tokens.sign(TokenKind::Access, &claims).unwrap();
        let jwk: jsonwebtoken::jwk::Jwk =
            serde_json::from_value(tokens.keys().jwks()["keys"][0].clone()).unwrap();
        let mut validation = jsonwebtoken::Validation::new(Algorithm::ES256);
        validation.set_audience(&[RESOURCE]);
        validation.set_issuer(&[ISSUER]);
        let decoded = jsonwebtoken::decode::<Claims>(
            &ours,
            &jsonwebtoken::DecodingKey::from_jwk(&jwk).unwrap(),
            &validation,
        )
        .unwrap();
        assert_eq!(decoded.claims, claims);
        let signed_part = |token: &str| token.rsplit_once('.').unwrap().0.to_owned();
        assert_eq!(signed_part(&ours), signed_part(&theirs));
    }

    #[test]
    fn a_remembered_verification_never_outlives_the_token_exp() {
        let tokens = tokens();
        let token = tokens
            .sign(TokenKind::Access, &claims(RESOURCE, 30))
            .unwrap();
        let exp = now() + 30;
        assert!(
            tokens
                .verify(TokenKind::Access, &token, RESOURCE, now())
                .is_ok()
        );
        let leeway = AssertionContract::LEEWAY_SECS;
        assert!(
            tokens
                .verify(TokenKind::Access, &token, RESOURCE, exp + leeway)
                .is_ok(),
            "still valid within the leeway"
        );
        assert_eq!(
            tokens.verify(TokenKind::Access, &token, RESOURCE, exp + leeway + 1),
            Err(AuthFailure::TokenExpired)
        );
    }

    #[test]
    fn a_remembered_verification_stops_with_its_key_leaving_the_ring() {
        let mut old = keys::generate().unwrap();
        old.created_at_ms -= 1000;
        let new = keys::generate().unwrap();
        let tokens = Tokens::new(KeyRing::from_stored(&[old]).unwrap(), ISSUER.to_owned());
        let token = tokens
            .sign(TokenKind::Access, &claims(RESOURCE, 60))
            .unwrap();
        assert!(
            tokens
                .verify(TokenKind::Access, &token, RESOURCE, now())
                .is_ok()
        );
        // The old key is retired: the ring reloaded without it.
        tokens.replace_keys(KeyRing::from_stored(&[new]).unwrap());
        assert_eq!(
            tokens.verify(TokenKind::Access, &token, RESOURCE, now()),
            Err(AuthFailure::TokenInvalid)
        );
    }

    #[test]
    fn a_remembered_verification_is_bound_to_its_kind_and_audience() {
        let tokens = tokens();
        let token = tokens
            .sign(TokenKind::Access, &claims(RESOURCE, 60))
            .unwrap();
        assert!(
            tokens
                .verify(TokenKind::Access, &token, RESOURCE, now())
                .is_ok()
        );
        assert_eq!(
            tokens.verify(TokenKind::Access, &token, "https://other.example", now()),
            Err(AuthFailure::AudienceMismatch)
        );
        assert_eq!(
            tokens.verify(TokenKind::Assertion, &token, INTERNAL_AUDIENCE, now()),
            Err(AuthFailure::TokenInvalid)
        );
    }
}
