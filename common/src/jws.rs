//! ES256 compact JWS (RFC 7515) with keys parsed once: the PKCS#8 private key
//! is held as an `EcdsaKeyPair` and each public key as a `ParsedPublicKey`,
//! instead of being re-parsed at every signature and verification. Tokens are
//! byte-compatible with those of the `jsonwebtoken` crate (base64url without
//! padding of the serde JSON header and claims, 64-byte fixed signature).
//!
//! Strict JOSE (RFC 7515 §4.1.11, RFC 7797): the header is read from its raw
//! base64url JSON by [`header`] and again by [`Es256Verifier::verify`], so no
//! verifier can skip the check: a `crit` parameter is refused whatever it
//! names (this implementation understands no extension, and naming a
//! registered parameter or nothing at all is invalid), and so is `b64`
//! other than `true` (an unencoded payload).

use std::sync::atomic::{AtomicU64, Ordering};

use aws_lc_rs::digest::{SHA256, digest as sha256};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED, ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair,
    ParsedPublicKey,
};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Why a JWS could not be made or was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum JwsError {
    /// Not three base64url parts, or a part is not the JSON expected.
    #[error("malformed compact JWS")]
    Malformed,
    /// The signature does not verify under the key.
    #[error("signature does not verify")]
    BadSignature,
    /// The key is not a P-256 key.
    #[error("not a P-256 key")]
    BadKey,
    /// Serialising or signing failed.
    #[error("signing failed")]
    Signing,
    /// The header asks for processing this implementation does not do
    /// (`crit`, `b64: false`).
    #[error("unsupported JOSE header parameter")]
    Unsupported,
}

/// ES256 signatures made by this process.
static SIGNATURES: AtomicU64 = AtomicU64::new(0);
/// ES256 signatures verified (or refused) by this process.
static VERIFICATIONS: AtomicU64 = AtomicU64::new(0);

/// How many ES256 signatures this process has made and verified since it
/// started: the asymmetric cost of trust between the services, exported by
/// each service's metrics (the services of one process share the counts).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Operations {
    pub signatures: u64,
    pub verifications: u64,
}

/// The counts so far.
pub fn operations() -> Operations {
    Operations {
        signatures: SIGNATURES.load(Ordering::Relaxed),
        verifications: VERIFICATIONS.load(Ordering::Relaxed),
    }
}

/// Signs with one P-256 private key, parsed once.
pub struct Es256Signer {
    pair: EcdsaKeyPair,
    rng: SystemRandom,
}

impl std::fmt::Debug for Es256Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Es256Signer(..)")
    }
}

impl Es256Signer {
    /// Parses a PKCS#8 P-256 private key.
    pub fn from_pkcs8(der: &[u8]) -> Result<Es256Signer, JwsError> {
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, der)
            .map_err(|_| JwsError::BadKey)?;
        Ok(Es256Signer {
            pair,
            rng: SystemRandom::new(),
        })
    }

    /// The uncompressed public point (`04 || x || y`).
    pub fn public_point(&self) -> &[u8] {
        self.pair.public_key().as_ref()
    }

    /// The compact JWS of `claims` under `header` (which must say ES256).
    pub fn sign<H: Serialize, C: Serialize>(
        &self,
        header: &H,
        claims: &C,
    ) -> Result<String, JwsError> {
        let header = serde_json::to_vec(header).map_err(|_| JwsError::Signing)?;
        let claims = serde_json::to_vec(claims).map_err(|_| JwsError::Signing)?;
        let mut token = URL_SAFE_NO_PAD.encode(header);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(claims, &mut token);
        let signature = self
            .pair
            .sign(&self.rng, token.as_bytes())
            .map_err(|_| JwsError::Signing)?;
        SIGNATURES.fetch_add(1, Ordering::Relaxed);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(signature.as_ref(), &mut token);
        Ok(token)
    }
}

/// Verifies signatures of one P-256 public key, parsed once.
#[derive(Clone)]
pub struct Es256Verifier(ParsedPublicKey);

impl std::fmt::Debug for Es256Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Es256Verifier(..)")
    }
}

impl Es256Verifier {
    /// Parses an uncompressed public point (`04 || x || y`).
    pub fn from_point(point: &[u8]) -> Result<Es256Verifier, JwsError> {
        ParsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
            .map(Es256Verifier)
            .map_err(|_| JwsError::BadKey)
    }

    /// Parses the base64url `x` and `y` coordinates of a JWK.
    pub fn from_coordinates(x: &str, y: &str) -> Result<Es256Verifier, JwsError> {
        let x = URL_SAFE_NO_PAD.decode(x).map_err(|_| JwsError::BadKey)?;
        let y = URL_SAFE_NO_PAD.decode(y).map_err(|_| JwsError::BadKey)?;
        if x.len() != 32 || y.len() != 32 {
            return Err(JwsError::BadKey);
        }
        let mut point = Vec::with_capacity(65);
        point.push(0x04);
        point.extend_from_slice(&x);
        point.extend_from_slice(&y);
        Es256Verifier::from_point(&point)
    }

    /// Verifies the signature of a compact JWS and returns its decoded
    /// payload (the header is the caller's to check, see [`header`]).
    /// A header with `crit` or `b64: false` is refused ([`header`]).
    pub fn verify(&self, token: &str) -> Result<Vec<u8>, JwsError> {
        let (signed, signature) = token.rsplit_once('.').ok_or(JwsError::Malformed)?;
        let (_, payload) = signed.split_once('.').ok_or(JwsError::Malformed)?;
        header::<serde::de::IgnoredAny>(token)?;
        let signature = URL_SAFE_NO_PAD
            .decode(signature)
            .map_err(|_| JwsError::Malformed)?;
        VERIFICATIONS.fetch_add(1, Ordering::Relaxed);
        self.0
            .verify_sig(signed.as_bytes(), &signature)
            .map_err(|_| JwsError::BadSignature)?;
        URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| JwsError::Malformed)
    }
}

/// The header of a compact JWS, unverified, once it passed the strict JOSE
/// check: a JSON object without `crit` and without `b64` other than `true`.
pub fn header<H: DeserializeOwned>(token: &str) -> Result<H, JwsError> {
    let (header, _) = token.split_once('.').ok_or(JwsError::Malformed)?;
    let header = URL_SAFE_NO_PAD
        .decode(header)
        .map_err(|_| JwsError::Malformed)?;
    let raw: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&header).map_err(|_| JwsError::Malformed)?;
    strict(&raw)?;
    serde_json::from_value(serde_json::Value::Object(raw)).map_err(|_| JwsError::Malformed)
}

/// The one strict JOSE check of every verifier (see the module doc).
fn strict(header: &serde_json::Map<String, serde_json::Value>) -> Result<(), JwsError> {
    if header.contains_key("crit") {
        return Err(JwsError::Unsupported);
    }
    match header.get("b64") {
        None | Some(serde_json::Value::Bool(true)) => Ok(()),
        Some(_) => Err(JwsError::Unsupported),
    }
}

/// SHA-256 of `parts`, each prefixed by its length: the key under which a
/// verified token is remembered (the token itself is never kept as a key).
pub fn digest(parts: &[&[u8]]) -> [u8; 32] {
    let mut input = Vec::with_capacity(parts.iter().map(|p| p.len() + 8).sum());
    for part in parts {
        input.extend_from_slice(&(part.len() as u64).to_be_bytes());
        input.extend_from_slice(part);
    }
    let mut out = [0u8; 32];
    out.copy_from_slice(sha256(&SHA256, &input).as_ref());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn signer() -> Es256Signer {
        let document =
            EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
                .unwrap();
        Es256Signer::from_pkcs8(document.as_ref()).unwrap()
    }

    #[test]
    fn a_signed_token_verifies_and_yields_its_payload() {
        let signer = signer();
        let verifier = Es256Verifier::from_point(signer.public_point()).unwrap();
        let token = signer
            .sign(&json!({"alg": "ES256", "kid": "k"}), &json!({"sub": "u"}))
            .unwrap();
        let payload: Value = serde_json::from_slice(&verifier.verify(&token).unwrap()).unwrap();
        assert_eq!(payload, json!({"sub": "u"}));
        let header: Value = header(&token).unwrap();
        assert_eq!(header["kid"], "k");
    }

    #[test]
    fn signatures_and_verifications_are_counted() {
        let signer = signer();
        let verifier = Es256Verifier::from_point(signer.public_point()).unwrap();
        let before = operations();
        let token = signer.sign(&json!({"alg": "ES256"}), &json!({})).unwrap();
        verifier.verify(&token).unwrap();
        let after = operations();
        // Other tests of this process sign and verify too: at least ours.
        assert!(after.signatures > before.signatures);
        assert!(after.verifications > before.verifications);
    }

    #[test]
    fn another_key_a_tampered_payload_or_garbage_do_not_verify() {
        let signer = signer();
        let other = Es256Verifier::from_point(self::signer().public_point()).unwrap();
        let verifier = Es256Verifier::from_point(signer.public_point()).unwrap();
        let token = signer
            .sign(&json!({"alg": "ES256"}), &json!({"adm": false}))
            .unwrap();
        assert_eq!(other.verify(&token), Err(JwsError::BadSignature));
        let parts: Vec<&str> = token.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(br#"{"adm":true}"#);
        let tampered = format!("{}.{forged}.{}", parts[0], parts[2]);
        assert_eq!(verifier.verify(&tampered), Err(JwsError::BadSignature));
        assert_eq!(verifier.verify("nodots"), Err(JwsError::Malformed));
        assert_eq!(verifier.verify("a.b.!!"), Err(JwsError::Malformed));
    }

    #[test]
    fn crit_and_an_unencoded_payload_are_refused_by_the_header_and_the_verifier() {
        let signer = signer();
        let verifier = Es256Verifier::from_point(signer.public_point()).unwrap();
        for refused in [
            json!({"alg": "ES256", "crit": ["exp"]}),
            json!({"alg": "ES256", "crit": ["alg"]}),
            json!({"alg": "ES256", "crit": ["urn:example:ext"], "urn:example:ext": 1}),
            json!({"alg": "ES256", "crit": []}),
            json!({"alg": "ES256", "crit": "exp"}),
            json!({"alg": "ES256", "b64": false, "crit": ["b64"]}),
            json!({"alg": "ES256", "b64": false}),
            json!({"alg": "ES256", "b64": "false"}),
        ] {
            let token = signer.sign(&refused, &json!({"sub": "u"})).unwrap();
            assert_eq!(
                verifier.verify(&token),
                Err(JwsError::Unsupported),
                "{refused}"
            );
            assert_eq!(
                header::<Value>(&token),
                Err(JwsError::Unsupported),
                "{refused}"
            );
        }
        // Unknown parameters that are not critical are ignored, and so is
        // `b64: true` (the default).
        for accepted in [
            json!({"alg": "ES256", "x-note": "ignored"}),
            json!({"alg": "ES256", "b64": true}),
        ] {
            let token = signer.sign(&accepted, &json!({"sub": "u"})).unwrap();
            assert!(verifier.verify(&token).is_ok(), "{accepted}");
        }
        // A header that is not a JSON object is malformed.
        let token = signer.sign(&json!(["ES256"]), &json!({})).unwrap();
        assert_eq!(verifier.verify(&token), Err(JwsError::Malformed));
    }

    #[test]
    fn jwk_coordinates_give_the_same_key() {
        let signer = signer();
        let point = signer.public_point();
        let (x, y) = point[1..].split_at(32);
        let verifier =
            Es256Verifier::from_coordinates(&URL_SAFE_NO_PAD.encode(x), &URL_SAFE_NO_PAD.encode(y))
                .unwrap();
        let token = signer.sign(&json!({"alg": "ES256"}), &json!({})).unwrap();
        assert!(verifier.verify(&token).is_ok());
        assert_eq!(
            Es256Verifier::from_coordinates("AAAA", "AAAA").err(),
            Some(JwsError::BadKey)
        );
    }

    #[test]
    fn the_digest_separates_its_parts() {
        assert_ne!(digest(&[b"ab", b"c"]), digest(&[b"a", b"bc"]));
        assert_eq!(digest(&[b"ab", b"c"]), digest(&[b"ab", b"c"]));
    }
}
