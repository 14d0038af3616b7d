//! One-time secrets of the authorization server (codes, refresh tokens,
//! browser session ids, client secrets): generation, the hash under which
//! they are stored, constant-time comparison, and the PKCE S256 check.

use aws_lc_rs::digest::{SHA256, digest};
use aws_lc_rs::rand::{SecureRandom, SystemRandom};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

use crate::error::AuthError;

/// A fresh 256-bit random secret, base64url without padding (43 characters).
pub fn generate() -> Result<String, AuthError> {
    let mut bytes = [0u8; 32];
    SystemRandom::new()
        .fill(&mut bytes)
        .map_err(|_| AuthError::Internal("the system random generator failed".into()))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// The stored form of a secret: SHA-256, base64url. The secrets are random
/// and 256 bits long, so a fast hash is enough (no dictionary to guess from).
pub fn hash(secret: &str) -> String {
    URL_SAFE_NO_PAD.encode(digest(&SHA256, secret.as_bytes()))
}

/// Constant-time equality of two strings.
pub fn equal(a: &str, b: &str) -> bool {
    aws_lc_rs::constant_time::verify_slices_are_equal(a.as_bytes(), b.as_bytes()).is_ok()
}

/// Whether `candidate` hashes to `stored` (constant time).
pub fn matches_hash(candidate: &str, stored: &str) -> bool {
    equal(&hash(candidate), stored)
}

/// RFC 7636 S256: BASE64URL(SHA256(verifier)) == challenge, in constant time.
/// The verifier must be 43 to 128 unreserved characters.
pub fn pkce_s256_matches(verifier: &str, challenge: &str) -> bool {
    let well_formed = (43..=128).contains(&verifier.len())
        && verifier
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
    well_formed && equal(&hash(verifier), challenge)
}

/// Whether `challenge` has the shape of an S256 challenge (43 base64url chars).
pub fn is_s256_challenge(challenge: &str) -> bool {
    challenge.len() == 43
        && challenge
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_7636_example_verifies() {
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(is_s256_challenge(challenge));
        assert!(pkce_s256_matches(verifier, challenge));
        assert!(!pkce_s256_matches(verifier, &challenge.replace('E', "F")));
        assert!(!pkce_s256_matches("short", challenge));
        // "plain": the verifier itself as challenge never matches.
        assert!(!pkce_s256_matches(verifier, verifier));
    }

    #[test]
    fn secrets_are_random_and_stored_hashed() {
        let a = generate().unwrap();
        let b = generate().unwrap();
        assert_ne!(a, b);
        assert_eq!(a.len(), 43);
        assert!(matches_hash(&a, &hash(&a)));
        assert!(!matches_hash(&b, &hash(&a)));
        assert_ne!(hash(&a), a);
    }
}
