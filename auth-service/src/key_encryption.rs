//! Encryption at rest of the signing keys' private halves: AES-256-GCM
//! (aws-lc-rs) under a key-encryption key (KEK) from the configuration
//! (`keys.encryption_key`), with the key id bound as additional authenticated
//! data, so an envelope copied onto another row does not open.
//!
//! A stored key is either an envelope — `CKEK1 ‖ nonce (12 bytes) ‖
//! ciphertext ‖ tag (16 bytes)`, with a fresh random nonce per seal — or, for
//! rows written before encryption existed (and SQLite databases run without a
//! KEK), the plaintext PKCS#8 document, which always starts with a DER
//! SEQUENCE byte (0x30) and so cannot be mistaken for an envelope.
//!
//! `keys.encryption_key` may list several keys, comma-separated, newest
//! first: the first seals, every one opens. Keys found in plaintext or sealed
//! under an older KEK are re-sealed under the first at start (see
//! `keys::seal_stored_keys`).

use aws_lc_rs::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use secrecy::zeroize::Zeroizing;
use secrecy::{ExposeSecret, SecretString};

/// Length of a key-encryption key: AES-256.
pub const KEK_LEN: usize = 32;
/// First bytes of every envelope (format version 1).
const MAGIC: &[u8] = b"CKEK1";
/// Domain separation of the additional data; the key id follows.
const AAD_PREFIX: &[u8] = b"chataigne/signing-key/v1\0";
const TAG_LEN: usize = 16;

/// Why a stored key could not be turned back into its PKCS#8 document.
#[derive(Debug, thiserror::Error)]
pub enum RevealError {
    #[error(
        "signing key {kid} is encrypted at rest but keys.encryption_key is not set: configure the key-encryption key it was sealed with"
    )]
    NoKey { kid: String },
    #[error(
        "signing key {kid} cannot be decrypted with the configured keys.encryption_key: wrong key-encryption key (or a damaged row); refusing to start rather than replacing the keys"
    )]
    WrongKey { kid: String },
    #[error("signing key {kid}: malformed encrypted key (truncated envelope)")]
    Malformed { kid: String },
}

/// A stored key's PKCS#8 document, and whether its row should be re-sealed
/// (plaintext while a KEK is configured, or sealed under an older KEK).
pub struct Revealed {
    pub pkcs8: Zeroizing<Vec<u8>>,
    pub outdated: bool,
}

/// How this process keeps signing keys at rest: sealed under the configured
/// KEKs (the first seals, all open), or in plaintext when none is configured
/// (SQLite only; configuration validation refuses it on PostgreSQL).
pub struct KeyProtection {
    keks: Vec<LessSafeKey>,
}

impl std::fmt::Debug for KeyProtection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyProtection")
            .field("keks", &self.keks.len())
            .finish()
    }
}

impl KeyProtection {
    /// From `keys.encryption_key` (`None`: plaintext storage).
    pub fn from_secret(secret: Option<&SecretString>) -> anyhow::Result<KeyProtection> {
        let keks = match secret {
            None => Vec::new(),
            Some(secret) => parse_keks(secret)?
                .into_iter()
                .map(|bytes| {
                    UnboundKey::new(&AES_256_GCM, bytes.as_slice())
                        .map(LessSafeKey::new)
                        .map_err(|_| anyhow::anyhow!("keys.encryption_key: unusable AES-256 key"))
                })
                .collect::<anyhow::Result<_>>()?,
        };
        Ok(KeyProtection { keks })
    }

    /// Whether keys are sealed (a KEK is configured).
    pub fn encrypts(&self) -> bool {
        !self.keks.is_empty()
    }

    /// What to store for `kid`'s PKCS#8 document: an envelope under the first
    /// KEK, or the document itself when no KEK is configured.
    pub fn protect(&self, kid: &str, pkcs8: &[u8]) -> anyhow::Result<Vec<u8>> {
        let Some(kek) = self.keks.first() else {
            return Ok(pkcs8.to_vec());
        };
        let mut nonce = [0u8; NONCE_LEN];
        aws_lc_rs::rand::fill(&mut nonce)
            .map_err(|_| anyhow::anyhow!("no randomness for a signing key nonce"))?;
        let mut sealed = Vec::with_capacity(pkcs8.len() + TAG_LEN);
        sealed.extend_from_slice(pkcs8);
        kek.seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(aad(kid)),
            &mut sealed,
        )
        .map_err(|_| anyhow::anyhow!("sealing signing key {kid} failed"))?;
        let mut envelope = Vec::with_capacity(MAGIC.len() + NONCE_LEN + sealed.len());
        envelope.extend_from_slice(MAGIC);
        envelope.extend_from_slice(&nonce);
        envelope.extend_from_slice(&sealed);
        Ok(envelope)
    }

    /// The PKCS#8 document of a stored key.
    pub fn reveal(&self, kid: &str, stored: &[u8]) -> Result<Revealed, RevealError> {
        let Some(body) = stored.strip_prefix(MAGIC) else {
            // Written before encryption, or by a process without a KEK.
            return Ok(Revealed {
                pkcs8: Zeroizing::new(stored.to_vec()),
                outdated: self.encrypts(),
            });
        };
        if self.keks.is_empty() {
            return Err(RevealError::NoKey {
                kid: kid.to_owned(),
            });
        }
        if body.len() < NONCE_LEN + TAG_LEN {
            return Err(RevealError::Malformed {
                kid: kid.to_owned(),
            });
        }
        let (nonce, sealed) = body.split_at(NONCE_LEN);
        let mut nonce_bytes = [0u8; NONCE_LEN];
        nonce_bytes.copy_from_slice(nonce);
        for (index, kek) in self.keks.iter().enumerate() {
            let nonce = Nonce::assume_unique_for_key(nonce_bytes);
            let mut buffer = Zeroizing::new(sealed.to_vec());
            if let Ok(plain) = kek.open_in_place(nonce, Aad::from(aad(kid)), buffer.as_mut_slice())
            {
                let pkcs8 = Zeroizing::new(plain.to_vec());
                return Ok(Revealed {
                    pkcs8,
                    outdated: index > 0,
                });
            }
        }
        Err(RevealError::WrongKey {
            kid: kid.to_owned(),
        })
    }
}

/// Whether a stored value is an envelope (not a plaintext PKCS#8 document).
#[cfg(test)]
fn is_sealed(stored: &[u8]) -> bool {
    stored.starts_with(MAGIC)
}

fn aad(kid: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(AAD_PREFIX.len() + kid.len());
    aad.extend_from_slice(AAD_PREFIX);
    aad.extend_from_slice(kid.as_bytes());
    aad
}

/// The KEKs of `keys.encryption_key`: comma-separated base64 (standard or
/// URL-safe, padded or not), each exactly 32 bytes. The error never contains
/// the value.
pub fn parse_keks(secret: &SecretString) -> anyhow::Result<Vec<Zeroizing<Vec<u8>>>> {
    let mut keks = Vec::new();
    for (position, part) in secret.expose_secret().split(',').enumerate() {
        let part = part.trim();
        let decoded = [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD]
            .iter()
            .find_map(|engine| engine.decode(part).ok())
            .map(Zeroizing::new);
        match decoded {
            Some(bytes) if bytes.len() == KEK_LEN => {
                chataigne_common::production::check_secret(
                    "keys.encryption_key",
                    &format!("entry {} of ", position + 1),
                    &bytes,
                    KEK_LEN,
                )?;
                keks.push(bytes);
            }
            _ => anyhow::bail!(
                "keys.encryption_key ({}): entry {} must be the base64 encoding of {KEK_LEN} random bytes (e.g. `openssl rand -base64 32`)",
                chataigne_common::config::env_var("keys.encryption_key"),
                position + 1
            ),
        }
    }
    Ok(keks)
}

/// A fresh KEK as `keys.encryption_key` expects it (base64 of 32 random bytes).
pub fn generate_kek() -> anyhow::Result<SecretString> {
    let mut bytes = Zeroizing::new([0u8; KEK_LEN]);
    aws_lc_rs::rand::fill(bytes.as_mut_slice())
        .map_err(|_| anyhow::anyhow!("no randomness for a key-encryption key"))?;
    Ok(SecretString::from(STANDARD.encode(bytes.as_slice())))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn protection(secret: &str) -> KeyProtection {
        KeyProtection::from_secret(Some(&SecretString::from(secret.to_owned()))).unwrap()
    }

    fn kek() -> String {
        generate_kek().unwrap().expose_secret().to_owned()
    }

    const DOCUMENT: &[u8] = b"\x30\x81\x87 not really a PKCS#8 document but bytes";

    #[test]
    fn a_sealed_key_opens_under_the_same_kek_and_kid_only() {
        let kek = kek();
        let sealed = protection(&kek).protect("kid-1", DOCUMENT).unwrap();
        assert!(is_sealed(&sealed));
        assert!(
            !sealed.windows(DOCUMENT.len()).any(|w| w == DOCUMENT),
            "the plaintext is not in the envelope"
        );
        let revealed = protection(&kek).reveal("kid-1", &sealed).unwrap();
        assert_eq!(revealed.pkcs8.as_slice(), DOCUMENT);
        assert!(!revealed.outdated);
        // Bound to the key id: the envelope moved to another row does not open.
        assert!(matches!(
            protection(&kek).reveal("kid-2", &sealed),
            Err(RevealError::WrongKey { .. })
        ));
        // Another KEK does not open it, and says so.
        let error = protection(&self::kek())
            .reveal("kid-1", &sealed)
            .err()
            .unwrap();
        assert!(error.to_string().contains("wrong key-encryption key"));
        // No KEK at all.
        let none = KeyProtection::from_secret(None).unwrap();
        assert!(matches!(
            none.reveal("kid-1", &sealed),
            Err(RevealError::NoKey { .. })
        ));
    }

    #[test]
    fn two_seals_differ_and_tampering_is_detected() {
        let kek = kek();
        let p = protection(&kek);
        let a = p.protect("kid", DOCUMENT).unwrap();
        let b = p.protect("kid", DOCUMENT).unwrap();
        assert_ne!(a, b, "fresh nonce per seal");
        let mut tampered = a.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert!(matches!(
            p.reveal("kid", &tampered),
            Err(RevealError::WrongKey { .. })
        ));
        assert!(matches!(
            p.reveal("kid", &a[..MAGIC.len() + 4]),
            Err(RevealError::Malformed { .. })
        ));
    }

    #[test]
    fn older_keks_open_and_mark_the_row_for_resealing() {
        let (old, new) = (kek(), kek());
        let sealed_old = protection(&old).protect("kid", DOCUMENT).unwrap();
        let both = protection(&format!("{new},{old}"));
        let revealed = both.reveal("kid", &sealed_old).unwrap();
        assert_eq!(revealed.pkcs8.as_slice(), DOCUMENT);
        assert!(revealed.outdated);
        // The first KEK seals.
        let resealed = both.protect("kid", DOCUMENT).unwrap();
        assert!(!protection(&new).reveal("kid", &resealed).unwrap().outdated);
        assert!(protection(&old).reveal("kid", &resealed).is_err());
    }

    #[test]
    fn plaintext_rows_are_read_and_marked_outdated_when_a_kek_is_set() {
        let revealed = protection(&kek()).reveal("kid", DOCUMENT).unwrap();
        assert_eq!(revealed.pkcs8.as_slice(), DOCUMENT);
        assert!(revealed.outdated);
        let none = KeyProtection::from_secret(None).unwrap();
        assert!(!none.encrypts());
        assert_eq!(none.protect("kid", DOCUMENT).unwrap(), DOCUMENT);
        assert!(!none.reveal("kid", DOCUMENT).unwrap().outdated);
    }

    #[test]
    fn keks_must_be_32_bytes_of_base64_and_errors_hide_the_value() {
        let good = kek();
        assert_eq!(
            parse_keks(&SecretString::from(good.clone())).unwrap().len(),
            1
        );
        let url_safe = URL_SAFE_NO_PAD.encode(b"q8J1r0-Zk2VwYh4uN7bT3sXeLm9PaCdF");
        assert_eq!(
            parse_keks(&SecretString::from(format!("{url_safe}, {good}")))
                .unwrap()
                .len(),
            2
        );
        for bad in [
            "",
            "not base64 at all!",
            "c2hvcnQ=",
            &STANDARD.encode([1u8; 31]),
            &format!("{good},"),
            // 32 bytes, guessable: repeated, sequential.
            &STANDARD.encode([7u8; 32]),
            &STANDARD.encode((0u8..32).collect::<Vec<u8>>()),
        ] {
            let error = parse_keks(&SecretString::from(bad.to_owned()))
                .err()
                .unwrap()
                .to_string();
            assert!(error.contains("CHATAIGNE_KEYS__ENCRYPTION_KEY"), "{error}");
            assert!(bad.is_empty() || !error.contains(bad), "{error}");
        }
    }
}
