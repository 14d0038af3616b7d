//! Exactly-once writes for the tools that take an `idempotency_key`: the key
//! is scoped by OAuth client × user × tool and kept only as an HMAC-SHA256
//! under the configured secret, beside an HMAC of the arguments; the effect
//! and that record commit in one transaction (`store::writes`), and a retry
//! is answered from the record: replayed when the arguments match,
//! `IdempotencyMismatch` otherwise. A duplicate arriving while the first runs
//! in this process is refused at once with `OperationInProgress`. The
//! in-flight entry lives exactly as long as the call's future: a caller that
//! goes away (gateway crashed, RPC reset, deadline passed) drops it, and its
//! PostgreSQL transaction is cancelled in the server (`store::writes`), so a
//! key is never "in progress" with nobody working on it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use aws_lc_rs::hmac;
use secrecy::{ExposeSecret, SecretString};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::{CallContext, CallResult, ToolOutput, Tools, deadline, support};
use crate::access::{Access, Principal};
use crate::domain::DomainError;
use crate::store::Store;
use crate::store::writes::{Applied, Effect, IdempotencyClaim};

/// Shortest and longest key, in characters (SPEC §6).
pub const KEY_CHARS: std::ops::RangeInclusive<usize> = 8..=255;
/// Suggested wait before retrying an operation still in progress.
const IN_PROGRESS_RETRY: Duration = Duration::from_secs(1);

/// The secret of the keyed hashes, the replay window and the keys in flight.
#[derive(Clone)]
pub struct IdempotencyKeys {
    secret: Arc<SecretString>,
    ttl: Duration,
    in_flight: Arc<Mutex<HashSet<String>>>,
}

impl std::fmt::Debug for IdempotencyKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IdempotencyKeys(..)")
    }
}

/// Removes its key from the in-flight set when dropped.
struct InFlight {
    key_hash: String,
    set: Arc<Mutex<HashSet<String>>>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut set = self.set.lock().unwrap_or_else(|p| p.into_inner());
        set.remove(&self.key_hash);
    }
}

fn random_secret() -> SecretString {
    let hex: String = (0..2)
        .map(|_| uuid::Uuid::new_v4().simple().to_string())
        .collect();
    SecretString::from(hex)
}

impl IdempotencyKeys {
    /// `secret: None` draws a random one (keys are forgotten at restart).
    pub fn new(secret: Option<&SecretString>, ttl: Duration) -> IdempotencyKeys {
        IdempotencyKeys {
            secret: Arc::new(secret.cloned().unwrap_or_else(random_secret)),
            ttl,
            in_flight: Arc::default(),
        }
    }

    fn mac(&self, label: &str, parts: &[&str]) -> String {
        let key = hmac::Key::new(hmac::HMAC_SHA256, self.secret.expose_secret().as_bytes());
        let mut mac = hmac::Context::with_key(&key);
        mac.update(label.as_bytes());
        for part in parts {
            mac.update(&[0]);
            mac.update(part.as_bytes());
        }
        mac.sign()
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    /// The stored hash of `key` for `principal` and `tool`.
    pub fn key_hash(&self, principal: &Principal, tool: &str, key: &str) -> String {
        self.mac(
            "key",
            &[&principal.client_id, &principal.user_id, tool, key],
        )
    }

    /// The stored hash of `input` without its `idempotency_key`.
    pub fn request_hash(&self, tool: &str, input: &impl Serialize) -> Result<String, DomainError> {
        let mut value = serde_json::to_value(input)
            .map_err(|e| DomainError::Internal(format!("hashing arguments: {e}")))?;
        if let Value::Object(map) = &mut value {
            map.remove("idempotency_key");
        }
        // serde_json maps are sorted: this serialization is canonical.
        Ok(self.mac("arguments", &[tool, &value.to_string()]))
    }

    fn enter(&self, key_hash: &str) -> Result<InFlight, DomainError> {
        let mut set = self.in_flight.lock().unwrap_or_else(|p| p.into_inner());
        if !set.insert(key_hash.to_owned()) {
            return Err(DomainError::OperationInProgress {
                retry_after: IN_PROGRESS_RETRY,
            });
        }
        Ok(InFlight {
            key_hash: key_hash.to_owned(),
            set: self.in_flight.clone(),
        })
    }
}

/// Checks an idempotency key's length (the typed RPCs skip the JSON Schema).
pub fn check_key(key: &str) -> Result<(), DomainError> {
    if KEY_CHARS.contains(&key.chars().count()) {
        Ok(())
    } else {
        Err(DomainError::invalid(
            "idempotency_key",
            format!(
                "must be {} to {} characters",
                KEY_CHARS.start(),
                KEY_CHARS.end()
            ),
        ))
    }
}

/// The outcome of an idempotent tool.
#[derive(Debug)]
pub enum Written<T> {
    /// The effect happened now.
    Fresh(ToolOutput<T>),
    /// The stored result of an earlier identical call; nothing happened now.
    Replayed { data_json: String, text: String },
}

impl<T: DeserializeOwned> Written<T> {
    /// The typed data and whether it was replayed (typed RPCs).
    pub fn into_data(self) -> Result<(T, bool), DomainError> {
        match self {
            Written::Fresh(output) => Ok((output.data, false)),
            Written::Replayed { data_json, .. } => serde_json::from_str(&data_json)
                .map(|data| (data, true))
                .map_err(|e| DomainError::Internal(format!("stored result unreadable: {e}"))),
        }
    }
}

/// How a tool's output becomes a serialized call result.
pub trait Finish {
    fn finish(self) -> Result<CallResult, DomainError>;
}

impl<T: Serialize> Finish for Written<T> {
    fn finish(self) -> Result<CallResult, DomainError> {
        match self {
            Written::Fresh(output) => output.finish(),
            Written::Replayed { data_json, text } => Ok(CallResult {
                data_json,
                text: support::bound_text(text),
                next_cursor: None,
                truncated: false,
                replayed: true,
            }),
        }
    }
}

/// One idempotent effect ready to apply.
pub struct Once<'a, I> {
    pub tool: &'static str,
    pub principal: &'a Principal,
    pub key: &'a str,
    pub input: &'a I,
    pub effect: Effect,
}

impl<S: Store, A: Access> Tools<S, A> {
    /// Applies `once.effect` at most once and answers `output` (fresh) or the
    /// stored result of the same key (replayed, or a mismatch).
    pub(crate) async fn write_once<I: Serialize, T: Serialize>(
        &self,
        once: Once<'_, I>,
        output: ToolOutput<T>,
        ctx: &CallContext,
    ) -> Result<Written<T>, DomainError> {
        let keys = &self.idempotency;
        check_key(once.key)?;
        let key_hash = keys.key_hash(once.principal, once.tool, once.key);
        let request_hash = keys.request_hash(once.tool, once.input)?;
        let _in_flight = keys.enter(&key_hash)?;
        let result_json = json!({"data": &output.data, "text": &output.text}).to_string();
        let ttl_ms = i64::try_from(keys.ttl.as_millis()).unwrap_or(i64::MAX);
        let claim = IdempotencyClaim {
            key_hash,
            tool: once.tool,
            request_hash: request_hash.clone(),
            result_json,
            now_ms: ctx.now_ms,
            expires_at_ms: ctx.now_ms.saturating_add(ttl_ms),
        };
        let applied = self
            .store
            .apply_once(&claim, &once.effect, deadline::remaining())
            .await?;
        match applied {
            Applied::Done => Ok(Written::Fresh(output)),
            Applied::Existing {
                request_hash: stored,
                ..
            } if stored != request_hash => Err(DomainError::IdempotencyMismatch),
            Applied::Existing {
                result_json: Some(stored),
                ..
            } => replay(&stored),
            Applied::Existing { .. } => Err(DomainError::OperationInProgress {
                retry_after: IN_PROGRESS_RETRY,
            }),
        }
    }
}

fn replay<T>(stored: &str) -> Result<Written<T>, DomainError> {
    let value: Value = serde_json::from_str(stored)
        .map_err(|e| DomainError::Internal(format!("stored result unreadable: {e}")))?;
    let data = value.get("data").cloned().unwrap_or(Value::Null);
    let text = value
        .get("text")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok(Written::Replayed {
        data_json: data.to_string(),
        text,
    })
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

    #[test]
    fn hashes_are_scoped_keyed_and_ignore_the_key_field() {
        let keys = IdempotencyKeys::new(
            Some(&SecretString::from("s".repeat(32))),
            Duration::from_secs(60),
        );
        let a = keys.key_hash(&principal("u1"), "tool", "key-0001");
        assert_ne!(a, keys.key_hash(&principal("u2"), "tool", "key-0001"));
        assert_ne!(a, keys.key_hash(&principal("u1"), "other", "key-0001"));
        assert!(!a.contains("key-0001"));
        let other_secret = IdempotencyKeys::new(None, Duration::from_secs(60));
        assert_ne!(
            a,
            other_secret.key_hash(&principal("u1"), "tool", "key-0001")
        );
        let one = keys
            .request_hash("t", &json!({"idempotency_key": "k1", "text": "hi"}))
            .unwrap();
        let two = keys
            .request_hash("t", &json!({"text": "hi", "idempotency_key": "k2"}))
            .unwrap();
        assert_eq!(one, two);
        assert_ne!(one, keys.request_hash("t", &json!({"text": "ho"})).unwrap());
    }

    /// Known answers: HMAC-SHA256 under the secret of `label ‖ (0 ‖ part)*`,
    /// in hex. The hashes stored by earlier releases must keep matching.
    #[test]
    fn hashes_keep_their_stored_form() {
        let keys = IdempotencyKeys::new(
            Some(&SecretString::from("s".repeat(32))),
            Duration::from_secs(60),
        );
        assert_eq!(
            keys.key_hash(&principal("u1"), "tool", "key-0001"),
            "00f8cd680bdae8e19953c2e421461a517d4f362bcdd3c926642e4bdc9586e5d4"
        );
        assert_eq!(
            keys.request_hash("t", &json!({"idempotency_key": "k1", "text": "hi"}))
                .unwrap(),
            "9c4d3c1439377e4312af84f606d8b167c6553ebcf3ee9c8b52e7e7c1388ad14a"
        );
    }

    #[test]
    fn a_key_in_flight_refuses_a_duplicate_until_dropped() {
        let keys = IdempotencyKeys::new(None, Duration::from_secs(60));
        let first = keys.enter("h").unwrap();
        assert!(matches!(
            keys.enter("h"),
            Err(DomainError::OperationInProgress { .. })
        ));
        drop(first);
        assert!(keys.enter("h").is_ok());
        assert!(check_key("short").is_err());
        assert!(check_key(&"k".repeat(255)).is_ok());
        assert!(check_key(&"k".repeat(256)).is_err());
    }
}
