//! Password hashing with Argon2id (PHC strings). Both functions are CPU-bound:
//! call them from a blocking task.

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};

use crate::error::AuthError;

/// Hashes `password` with Argon2id, default parameters and a random salt.
pub fn hash(password: &str) -> Result<String, AuthError> {
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|hash| hash.to_string())
        .map_err(|e| AuthError::Internal(format!("hashing a password failed: {e}")))
}

/// Whether `password` matches the stored PHC string. An unreadable hash never matches.
pub fn verify(password: &str, stored: &str) -> bool {
    match PasswordHash::new(stored) {
        Ok(parsed) => Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok(),
        Err(_) => false,
    }
}

/// A hash of a throwaway password, verified against when the account does not
/// exist so that unknown emails take as long as wrong passwords.
pub fn dummy_hash() -> &'static str {
    "$argon2id$v=19$m=19456,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$1mQv3Y1rUm2Zm7x3QWgqJ1m6n2cJm2k0ZC9qYk5jQ2c"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hash_is_argon2id_and_verifies_only_the_password() {
        let stored = hash("correct horse").unwrap();
        assert!(stored.starts_with("$argon2id$"));
        assert!(verify("correct horse", &stored));
        assert!(!verify("wrong horse", &stored));
        assert!(!verify("correct horse", "not a phc string"));
        assert!(!verify("anything", dummy_hash()));
    }
}
