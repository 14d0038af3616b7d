//! ES256 signing keys: generated with aws-lc-rs, stored sealed under the
//! key-encryption key (`key_encryption`) in the database, loaded at start
//! into in-memory signing and verification keys, and published as a JWK Set.
//!
//! At start every stored key is checked against the configured KEK: keys
//! still in plaintext (written before encryption) or sealed under an older
//! KEK are re-sealed, and a key that does not open stops the start with a
//! clear error instead of new keys silently replacing it.

use std::collections::{HashMap, HashSet};

use aws_lc_rs::digest::{SHA256, digest};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chataigne_common::jws::{Es256Signer, Es256Verifier};
use secrecy::zeroize::Zeroizing;
use serde_json::json;

use crate::key_encryption::KeyProtection;
use crate::model::now_ms;
use crate::store::{Store, StoredKey};

/// A signing key in memory: the plaintext PKCS#8 document.
pub struct SigningKey {
    pub kid: String,
    pub pkcs8: Zeroizing<Vec<u8>>,
    pub created_at_ms: i64,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("kid", &self.kid)
            .field("created_at_ms", &self.created_at_ms)
            .finish_non_exhaustive()
    }
}

/// The keys of this process: one signs, all verify. Each key is parsed once,
/// here (the private key as an `EcdsaKeyPair`, the public ones as parsed
/// public keys), not at every signature or verification.
pub struct KeyRing {
    signing_kid: String,
    signer: Es256Signer,
    verifiers: HashMap<String, Es256Verifier>,
    jwks: serde_json::Value,
}

impl KeyRing {
    /// Builds the ring from the stored keys, opened; the newest one signs.
    pub fn from_stored(keys: &[SigningKey]) -> anyhow::Result<KeyRing> {
        let newest = keys
            .iter()
            .max_by_key(|key| (key.created_at_ms, key.kid.as_str()))
            .ok_or_else(|| anyhow::anyhow!("no signing key"))?;
        let mut verifiers = HashMap::new();
        let mut jwks = Vec::new();
        let mut signer = None;
        for key in keys {
            let parsed = Es256Signer::from_pkcs8(&key.pkcs8).map_err(|_| {
                anyhow::anyhow!("signing key {} is not a P-256 PKCS#8 key", key.kid)
            })?;
            let (x, y) = public_coordinates(parsed.public_point())?;
            let verifier = Es256Verifier::from_point(parsed.public_point())
                .map_err(|_| anyhow::anyhow!("signing key {} has no usable public key", key.kid))?;
            verifiers.insert(key.kid.clone(), verifier);
            jwks.push(json!({
                "kty": "EC",
                "crv": "P-256",
                "x": x,
                "y": y,
                "kid": key.kid,
                "alg": "ES256",
                "use": "sig",
            }));
            if std::ptr::eq(key, newest) {
                signer = Some(parsed);
            }
        }
        Ok(KeyRing {
            signing_kid: newest.kid.clone(),
            signer: signer.ok_or_else(|| anyhow::anyhow!("no signing key"))?,
            verifiers,
            jwks: json!({ "keys": jwks }),
        })
    }

    pub fn signing_kid(&self) -> &str {
        &self.signing_kid
    }

    /// The current signing key, parsed.
    pub fn signer(&self) -> &Es256Signer {
        &self.signer
    }

    /// The verification key of `kid`, parsed, if it is in this ring.
    pub fn verifier(&self, kid: &str) -> Option<&Es256Verifier> {
        self.verifiers.get(kid)
    }

    /// The JWK Set document (`/.well-known/jwks.json`).
    pub fn jwks(&self) -> &serde_json::Value {
        &self.jwks
    }
}

/// Generates a new P-256 key; its `kid` is the RFC 7638 thumbprint.
pub fn generate() -> anyhow::Result<SigningKey> {
    let document =
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .map_err(|_| anyhow::anyhow!("generating a P-256 key failed"))?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, document.as_ref())
        .map_err(|_| anyhow::anyhow!("reading the generated P-256 key failed"))?;
    let (x, y) = public_coordinates(pair.public_key().as_ref())?;
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    let kid = URL_SAFE_NO_PAD.encode(digest(&SHA256, canonical.as_bytes()));
    Ok(SigningKey {
        kid,
        pkcs8: Zeroizing::new(document.as_ref().to_vec()),
        created_at_ms: now_ms(),
    })
}

/// What one pass of [`seal_stored_keys`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SealReport {
    /// Keys found in plaintext or under an older KEK, now sealed under the current one.
    pub resealed: usize,
    /// Keys already sealed under the current KEK.
    pub current: usize,
}

/// Checks every stored key (retired ones included) against `protection`
/// and, when a KEK is configured, seals the keys still in plaintext and
/// re-seals those under an older KEK. An active key that does not open is an
/// error (wrong or missing KEK); a retired one only a warning.
pub async fn seal_stored_keys(
    store: &dyn Store,
    protection: &KeyProtection,
) -> anyhow::Result<SealReport> {
    let all = store
        .all_signing_keys()
        .await
        .map_err(|e| anyhow::anyhow!("loading signing keys: {e}"))?;
    let active: HashSet<String> = store
        .active_signing_keys()
        .await
        .map_err(|e| anyhow::anyhow!("loading signing keys: {e}"))?
        .into_iter()
        .map(|key| key.kid)
        .collect();
    let mut report = SealReport::default();
    for key in all {
        let revealed = match protection.reveal(&key.kid, &key.material) {
            Ok(revealed) => revealed,
            Err(error) if active.contains(&key.kid) => return Err(error.into()),
            Err(error) => {
                tracing::warn!(kid = %key.kid, %error, "retired signing key left as stored");
                continue;
            }
        };
        if !revealed.outdated {
            report.current += usize::from(protection.encrypts());
            continue;
        }
        let sealed = protection.protect(&key.kid, &revealed.pkcs8)?;
        let replaced = store
            .replace_signing_key_material(&key.kid, &key.material, &sealed)
            .await
            .map_err(|e| anyhow::anyhow!("re-sealing signing key {}: {e}", key.kid))?;
        if replaced {
            tracing::debug!(kid = %key.kid, "signing key sealed under the current key-encryption key");
            report.resealed += 1;
        }
    }
    Ok(report)
}

/// Seals every stored key as needed ([`seal_stored_keys`]), then loads the
/// active keys, generating and storing the first one if there is none.
pub async fn load_or_generate(
    store: &dyn Store,
    protection: &KeyProtection,
) -> anyhow::Result<KeyRing> {
    let report = seal_stored_keys(store, protection).await?;
    if report.resealed > 0 {
        tracing::info!(
            resealed = report.resealed,
            already_sealed = report.current,
            "signing keys sealed under the current key-encryption key"
        );
    }
    if !protection.encrypts() {
        tracing::warn!(
            "keys.encryption_key is not set: signing keys are stored unencrypted (SQLite only)"
        );
    }
    let mut keys = active_keys(store, protection).await?;
    if keys.is_empty() {
        let key = generate()?;
        store_key(store, protection, &key).await?;
        tracing::info!(kid = %key.kid, "generated a new signing key");
        keys = active_keys(store, protection).await?;
    }
    KeyRing::from_stored(&keys)
}

/// Re-reads the active keys (rotation elsewhere, retirement).
pub async fn reload(store: &dyn Store, protection: &KeyProtection) -> anyhow::Result<KeyRing> {
    KeyRing::from_stored(&active_keys(store, protection).await?)
}

/// Stores a new key, which signs from the next reload on; older keys keep
/// verifying until retired.
pub async fn rotate(store: &dyn Store, protection: &KeyProtection) -> anyhow::Result<String> {
    let mut key = generate()?;
    // Strictly newer than every stored key, whatever the clocks of other replicas say.
    let newest = store
        .active_signing_keys()
        .await
        .map_err(|e| anyhow::anyhow!("loading signing keys: {e}"))?
        .iter()
        .map(|k| k.created_at_ms)
        .max()
        .unwrap_or(0);
    key.created_at_ms = key.created_at_ms.max(newest + 1);
    store_key(store, protection, &key).await?;
    tracing::info!(kid = %key.kid, "signing key rotated");
    Ok(key.kid)
}

/// The active keys, opened.
async fn active_keys(
    store: &dyn Store,
    protection: &KeyProtection,
) -> anyhow::Result<Vec<SigningKey>> {
    let stored = store
        .active_signing_keys()
        .await
        .map_err(|e| anyhow::anyhow!("loading signing keys: {e}"))?;
    stored
        .into_iter()
        .map(|key| {
            let revealed = protection.reveal(&key.kid, &key.material)?;
            Ok(SigningKey {
                kid: key.kid,
                pkcs8: revealed.pkcs8,
                created_at_ms: key.created_at_ms,
            })
        })
        .collect()
}

/// Seals `key` and inserts it.
async fn store_key(
    store: &dyn Store,
    protection: &KeyProtection,
    key: &SigningKey,
) -> anyhow::Result<()> {
    let stored = StoredKey {
        kid: key.kid.clone(),
        material: protection.protect(&key.kid, &key.pkcs8)?,
        created_at_ms: key.created_at_ms,
    };
    store
        .insert_signing_key(&stored)
        .await
        .map_err(|e| anyhow::anyhow!("storing the signing key: {e}"))
}

/// Base64url `x` and `y` of an uncompressed P-256 public point.
fn public_coordinates(point: &[u8]) -> anyhow::Result<(String, String)> {
    anyhow::ensure!(
        point.len() == 65 && point.first() == Some(&0x04),
        "unexpected public key encoding"
    );
    let (x, y) = point[1..].split_at(32);
    Ok((URL_SAFE_NO_PAD.encode(x), URL_SAFE_NO_PAD.encode(y)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_key_is_published_as_an_ec_jwk() {
        let key = generate().unwrap();
        let ring = KeyRing::from_stored(std::slice::from_ref(&key)).unwrap();
        let jwk = &ring.jwks()["keys"][0];
        assert_eq!(jwk["kty"], "EC");
        assert_eq!(jwk["crv"], "P-256");
        assert_eq!(jwk["alg"], "ES256");
        assert_eq!(jwk["use"], "sig");
        assert_eq!(jwk["kid"], key.kid.as_str());
        assert_eq!(jwk["x"].as_str().map(str::len), Some(43));
        assert!(jwk.get("d").is_none(), "no private part");
        assert!(ring.verifier(&key.kid).is_some());
    }

    #[test]
    fn the_newest_key_signs_and_all_verify() {
        let mut old = generate().unwrap();
        old.created_at_ms -= 1000;
        let new = generate().unwrap();
        let (old_kid, new_kid) = (old.kid.clone(), new.kid.clone());
        let ring = KeyRing::from_stored(&[old, new]).unwrap();
        assert_eq!(ring.signing_kid(), new_kid);
        assert!(ring.verifier(&old_kid).is_some());
        assert_eq!(ring.jwks()["keys"].as_array().map(Vec::len), Some(2));
    }
}
