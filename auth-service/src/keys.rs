//! ES256 signing keys: generated with aws-lc-rs, stored as PKCS#8 in the
//! database, loaded once at start into in-memory signing and verification
//! keys, and published as a JWK Set.

use std::collections::HashMap;

use aws_lc_rs::digest::{SHA256, digest};
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use jsonwebtoken::{DecodingKey, EncodingKey};
use serde_json::json;

use crate::model::now_ms;
use crate::store::{Store, StoredKey};

/// The keys of this process: one signs, all verify.
pub struct KeyRing {
    signing_kid: String,
    encoding: EncodingKey,
    decoding: HashMap<String, DecodingKey>,
    jwks: serde_json::Value,
}

impl KeyRing {
    /// Builds the ring from stored keys; the newest one signs.
    pub fn from_stored(keys: &[StoredKey]) -> anyhow::Result<KeyRing> {
        let newest = keys
            .iter()
            .max_by_key(|key| (key.created_at_ms, key.kid.as_str()))
            .ok_or_else(|| anyhow::anyhow!("no signing key"))?;
        let mut decoding = HashMap::new();
        let mut jwks = Vec::new();
        for key in keys {
            let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &key.pkcs8)
                .map_err(|_| {
                    anyhow::anyhow!("signing key {} is not a P-256 PKCS#8 key", key.kid)
                })?;
            let (x, y) = public_coordinates(&pair)?;
            decoding.insert(key.kid.clone(), DecodingKey::from_ec_components(&x, &y)?);
            jwks.push(json!({
                "kty": "EC",
                "crv": "P-256",
                "x": x,
                "y": y,
                "kid": key.kid,
                "alg": "ES256",
                "use": "sig",
            }));
        }
        Ok(KeyRing {
            signing_kid: newest.kid.clone(),
            encoding: EncodingKey::from_ec_der(&newest.pkcs8),
            decoding,
            jwks: json!({ "keys": jwks }),
        })
    }

    pub fn signing_kid(&self) -> &str {
        &self.signing_kid
    }

    pub fn encoding_key(&self) -> &EncodingKey {
        &self.encoding
    }

    pub fn decoding_key(&self, kid: &str) -> Option<&DecodingKey> {
        self.decoding.get(kid)
    }

    /// The JWK Set document (`/.well-known/jwks.json`).
    pub fn jwks(&self) -> &serde_json::Value {
        &self.jwks
    }
}

/// Generates a new P-256 key; its `kid` is the RFC 7638 thumbprint.
pub fn generate() -> anyhow::Result<StoredKey> {
    let document =
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &SystemRandom::new())
            .map_err(|_| anyhow::anyhow!("generating a P-256 key failed"))?;
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, document.as_ref())
        .map_err(|_| anyhow::anyhow!("reading the generated P-256 key failed"))?;
    let (x, y) = public_coordinates(&pair)?;
    let canonical = format!(r#"{{"crv":"P-256","kty":"EC","x":"{x}","y":"{y}"}}"#);
    let kid = URL_SAFE_NO_PAD.encode(digest(&SHA256, canonical.as_bytes()));
    Ok(StoredKey {
        kid,
        pkcs8: document.as_ref().to_vec(),
        created_at_ms: now_ms(),
    })
}

/// Loads the active keys, generating and storing the first one if there is none.
pub async fn load_or_generate(store: &dyn Store) -> anyhow::Result<KeyRing> {
    let mut keys = store
        .active_signing_keys()
        .await
        .map_err(|e| anyhow::anyhow!("loading signing keys: {e}"))?;
    if keys.is_empty() {
        let key = generate()?;
        store
            .insert_signing_key(&key)
            .await
            .map_err(|e| anyhow::anyhow!("storing the signing key: {e}"))?;
        tracing::info!(kid = %key.kid, "generated a new signing key");
        keys = store
            .active_signing_keys()
            .await
            .map_err(|e| anyhow::anyhow!("loading signing keys: {e}"))?;
    }
    KeyRing::from_stored(&keys)
}

/// Re-reads the active keys (rotation elsewhere, retirement).
pub async fn reload(store: &dyn Store) -> anyhow::Result<KeyRing> {
    let keys = store
        .active_signing_keys()
        .await
        .map_err(|e| anyhow::anyhow!("loading signing keys: {e}"))?;
    KeyRing::from_stored(&keys)
}

/// Stores a new key, which signs from the next reload on; older keys keep
/// verifying until retired.
pub async fn rotate(store: &dyn Store) -> anyhow::Result<StoredKey> {
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
    store
        .insert_signing_key(&key)
        .await
        .map_err(|e| anyhow::anyhow!("storing the signing key: {e}"))?;
    tracing::info!(kid = %key.kid, "signing key rotated");
    Ok(key)
}

/// Base64url `x` and `y` of an uncompressed P-256 public point.
fn public_coordinates(pair: &EcdsaKeyPair) -> anyhow::Result<(String, String)> {
    let point = pair.public_key().as_ref();
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
        assert!(ring.decoding_key(&key.kid).is_some());
    }

    #[test]
    fn the_newest_key_signs_and_all_verify() {
        let mut old = generate().unwrap();
        old.created_at_ms -= 1000;
        let new = generate().unwrap();
        let ring = KeyRing::from_stored(&[old.clone(), new.clone()]).unwrap();
        assert_eq!(ring.signing_kid(), new.kid);
        assert!(ring.decoding_key(&old.kid).is_some());
        assert_eq!(ring.jwks()["keys"].as_array().map(Vec::len), Some(2));
    }
}
