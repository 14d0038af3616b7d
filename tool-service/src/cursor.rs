//! Opaque pagination cursors: the position after the last record of a page,
//! authenticated with HMAC-SHA256 and bound to the tool, its filters and the
//! caller, with an expiry and key rotation. Anything else → `CursorInvalid`.
//!
//! Wire form: base64url( version ‖ key id ‖ expiry (ms, BE) ‖ position JSON ‖ tag ).
//! The binding (tool, filter fingerprint, user, client) is MACed, not carried.

use aws_lc_rs::digest::{SHA256, digest};
use aws_lc_rs::hmac;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use secrecy::ExposeSecret;

use crate::access::Principal;
use crate::config::CursorConfig;
use crate::domain::{DomainError, PageAfter};

const VERSION: u8 = 1;
const TAG_LEN: usize = 32;
const HEADER_LEN: usize = 1 + 1 + 8;

/// What a cursor is bound to.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    pub tool: &'a str,
    /// Canonical serialization of the filters (everything but limit and cursor).
    pub filters: &'a str,
    pub principal: &'a Principal,
}

#[derive(Clone)]
pub struct CursorCodec {
    /// (key id, key); the first signs.
    keys: Vec<(u8, Vec<u8>)>,
    ttl_ms: i64,
}

impl CursorCodec {
    pub fn from_config(config: &CursorConfig) -> anyhow::Result<CursorCodec> {
        let mut keys: Vec<Vec<u8>> = config
            .keys
            .iter()
            .map(|k| k.expose_secret().as_bytes().to_vec())
            .collect();
        if keys.is_empty() {
            tracing::warn!("no cursor keys configured: using a per-process random key");
            let mut key = vec![0u8; 32];
            rand::fill(&mut key[..]);
            keys.push(key);
        }
        anyhow::ensure!(keys.len() <= 255, "at most 255 cursor keys");
        Ok(CursorCodec::new(
            keys,
            i64::try_from(config.ttl_secs)?.saturating_mul(1000),
        ))
    }

    /// Keys newest first. A key's id is the first byte of its SHA-256, so ids
    /// stay stable whatever keys are added or dropped around it.
    pub fn new(keys: Vec<Vec<u8>>, ttl_ms: i64) -> CursorCodec {
        let keys = keys
            .into_iter()
            .map(|key| (digest(&SHA256, &key).as_ref()[0], key))
            .collect();
        CursorCodec { keys, ttl_ms }
    }

    pub fn encode(&self, after: &PageAfter, binding: Binding<'_>, now_ms: i64) -> String {
        let Some((kid, key)) = self.keys.first() else {
            return String::new();
        };
        let mut bytes = Vec::with_capacity(HEADER_LEN + 64 + TAG_LEN);
        bytes.push(VERSION);
        bytes.push(*kid);
        bytes.extend_from_slice(&(now_ms + self.ttl_ms).to_be_bytes());
        // Serializing two strings cannot fail.
        bytes.extend_from_slice(&serde_json::to_vec(after).unwrap_or_default());
        let tag = mac(key, &bytes, binding);
        bytes.extend_from_slice(&tag);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    pub fn decode(
        &self,
        cursor: &str,
        binding: Binding<'_>,
        now_ms: i64,
    ) -> Result<PageAfter, DomainError> {
        let bytes = URL_SAFE_NO_PAD
            .decode(cursor)
            .map_err(|_| DomainError::CursorInvalid)?;
        if bytes.len() < HEADER_LEN + TAG_LEN || bytes[0] != VERSION {
            return Err(DomainError::CursorInvalid);
        }
        let (body, tag) = bytes.split_at(bytes.len() - TAG_LEN);
        let authentic = self
            .keys
            .iter()
            .filter(|(kid, _)| *kid == body[1])
            .any(|(_, key)| {
                let expected = keyed(key, body, binding).sign();
                aws_lc_rs::constant_time::verify_slices_are_equal(expected.as_ref(), tag).is_ok()
            });
        if !authentic {
            return Err(DomainError::CursorInvalid);
        }
        let mut expiry = [0u8; 8];
        expiry.copy_from_slice(&body[2..HEADER_LEN]);
        if i64::from_be_bytes(expiry) < now_ms {
            return Err(DomainError::CursorInvalid);
        }
        serde_json::from_slice(&body[HEADER_LEN..]).map_err(|_| DomainError::CursorInvalid)
    }
}

fn keyed(key: &[u8], body: &[u8], binding: Binding<'_>) -> hmac::Context {
    let mut mac = hmac::Context::with_key(&hmac::Key::new(hmac::HMAC_SHA256, key));
    for part in [
        binding.tool,
        binding.filters,
        binding.principal.user_id.as_str(),
        binding.principal.client_id.as_str(),
    ] {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part.as_bytes());
    }
    mac.update(body);
    mac
}

fn mac(key: &[u8], body: &[u8], binding: Binding<'_>) -> Vec<u8> {
    keyed(key, body, binding).sign().as_ref().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(user: &str) -> Principal {
        Principal {
            user_id: user.into(),
            client_id: "client".into(),
        }
    }

    fn after() -> PageAfter {
        PageAfter {
            key: "1700000000000".into(),
            id: "ord_1".into(),
        }
    }

    #[test]
    fn round_trips_and_refuses_every_misuse() {
        let codec = CursorCodec::new(vec![vec![7; 32]], 60_000);
        let alice = principal("alice");
        let bound = Binding {
            tool: "t",
            filters: "{\"status\":[\"ready\"]}",
            principal: &alice,
        };
        let cursor = codec.encode(&after(), bound, 1_000);
        assert_eq!(codec.decode(&cursor, bound, 2_000).unwrap(), after());

        // Other filters, other tool, other caller, expiry.
        let bob = principal("bob");
        for binding in [
            Binding {
                filters: "{}",
                ..bound
            },
            Binding { tool: "u", ..bound },
            Binding {
                principal: &bob,
                ..bound
            },
        ] {
            assert!(matches!(
                codec.decode(&cursor, binding, 2_000),
                Err(DomainError::CursorInvalid)
            ));
        }
        assert!(codec.decode(&cursor, bound, 61_001).is_err());

        // Tampering with any byte, garbage, and truncation.
        let mut raw = URL_SAFE_NO_PAD.decode(&cursor).unwrap();
        raw[12] ^= 1;
        assert!(
            codec
                .decode(&URL_SAFE_NO_PAD.encode(&raw), bound, 2_000)
                .is_err()
        );
        assert!(codec.decode("not a cursor", bound, 2_000).is_err());
        assert!(codec.decode(&cursor[..10], bound, 2_000).is_err());
    }

    /// Known answer: a cursor issued by an earlier release (key id = first
    /// byte of the key's SHA-256, HMAC-SHA256 over the length-prefixed
    /// binding then the body) reads the same and is issued the same.
    #[test]
    fn cursors_keep_their_wire_form() {
        let codec = CursorCodec::new(vec![vec![7; 32]], 60_000);
        let alice = principal("alice");
        let bound = Binding {
            tool: "t",
            filters: "{\"status\":[\"ready\"]}",
            principal: &alice,
        };
        let issued = "AUsAAAAAAADuSHsia2V5IjoiMTcwMDAwMDAwMDAwMCIsImlkIjoib3JkXzEiffpIo9OarERQjsOcpqYLSLcOzZzzYkMBPd9gHEdGoWRE";
        assert_eq!(codec.encode(&after(), bound, 1_000), issued);
        assert_eq!(codec.decode(issued, bound, 2_000).unwrap(), after());
    }

    #[test]
    fn rotation_keeps_old_cursors_valid_until_the_key_is_dropped() {
        let alice = principal("alice");
        let bound = Binding {
            tool: "t",
            filters: "{}",
            principal: &alice,
        };
        let old = CursorCodec::new(vec![vec![1; 32]], 60_000);
        let cursor = old.encode(&after(), bound, 0);
        let rotated = CursorCodec::new(vec![vec![2; 32], vec![1; 32]], 60_000);
        assert_eq!(rotated.decode(&cursor, bound, 1).unwrap(), after());
        let fresh = rotated.encode(&after(), bound, 0);
        assert!(old.decode(&fresh, bound, 1).is_err());
        let dropped = CursorCodec::new(vec![vec![2; 32]], 60_000);
        assert!(dropped.decode(&cursor, bound, 1).is_err());
    }
}
