//! The gateway's idempotency cache: a fast replay cache and in-progress lock
//! in front of the tool-service, whose database record (written in the same
//! transaction as the effect) is the source of truth.
//!
//! Keys are scoped by OAuth client × user × tool and stored only as an
//! HMAC-SHA256 of the scope and the raw key; the arguments (without the key)
//! are stored only as an HMAC too. An entry is either *pending* (`P:<args>`,
//! set with NX and a TTL just above the write deadline: a crashed gateway's
//! lock expires by itself) or *done* (`D:<args>:<result>`, kept for the
//! replay TTL).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use hmac::{Hmac, KeyInit, Mac};
use redis::Script;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::Sha256;

use crate::redis_conn::{RedisHandle, StoreUnavailable};

/// Shortest and longest accepted key, in characters (SPEC §6).
pub const KEY_CHARS: std::ops::RangeInclusive<usize> = 8..=255;

/// Sets the pending entry unless one exists; returns the existing value.
static BEGIN: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local current = redis.call('GET', KEYS[1])
if current then return current end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return false
",
    )
});

/// Replaces our pending entry with the done one.
static COMPLETE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
  return 1
end
return 0
",
    )
});

/// Deletes our pending entry.
static RELEASE: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
",
    )
});

/// A claim on one scoped key with the hash of its arguments.
#[derive(Debug, Clone)]
pub struct Claim {
    /// Store key (under the deployment prefix): `idem:<hmac of scope and key>`.
    key: String,
    /// HMAC of the arguments without the key.
    arguments: String,
}

/// A successful result as cached for replay.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Cached {
    pub data_json: String,
    pub text: String,
    pub next_cursor: String,
    pub truncated: bool,
}

/// What the cache says about a claim.
#[derive(Debug, PartialEq, Eq)]
pub enum Begin {
    /// The lock is ours: call the tool, then complete or release.
    Acquired,
    /// Same key, same arguments, finished: replay this.
    Replay(Cached),
    /// Same key, other arguments.
    Mismatch,
    /// Same key, same arguments, still running.
    InProgress,
}

/// Keyed hashing of claims.
#[derive(Clone)]
pub struct Hasher {
    secret: SecretString,
}

impl Hasher {
    /// `None` draws a random secret (in-process stores: one process only).
    pub fn new(secret: Option<&SecretString>) -> Hasher {
        let secret = secret.cloned().unwrap_or_else(|| {
            let bytes: [u8; 32] = rand_bytes();
            SecretString::from(bytes.iter().map(|b| format!("{b:02x}")).collect::<String>())
        });
        Hasher { secret }
    }

    /// HMAC-SHA256 of `label` and `parts`, hex; `None` never happens in
    /// practice (HMAC takes keys of any length).
    fn mac(&self, label: &str, parts: &[&str]) -> Option<String> {
        let mut mac =
            <Hmac<Sha256> as KeyInit>::new_from_slice(self.secret.expose_secret().as_bytes())
                .ok()?;
        mac.update(label.as_bytes());
        for part in parts {
            mac.update(&[0]);
            mac.update(part.as_bytes());
        }
        Some(
            mac.finalize()
                .into_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        )
    }

    /// The claim of `arguments` for client × user × tool, when they carry a
    /// well-formed `idempotency_key` (otherwise the tool-service refuses them).
    pub fn claim(
        &self,
        client_id: &str,
        user_id: &str,
        tool: &str,
        arguments: &Map<String, Value>,
    ) -> Option<Claim> {
        let Some(Value::String(key)) = arguments.get("idempotency_key") else {
            return None;
        };
        if !KEY_CHARS.contains(&key.chars().count()) {
            return None;
        }
        let mut rest = arguments.clone();
        rest.remove("idempotency_key");
        // serde_json maps are sorted: this serialization is canonical.
        let canonical = Value::Object(rest).to_string();
        Some(Claim {
            key: format!(
                "idem:{}",
                self.mac("key", &[client_id, user_id, tool, key])?
            ),
            arguments: self.mac("arguments", &[tool, &canonical])?,
        })
    }
}

fn rand_bytes() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    for chunk in bytes.chunks_mut(16) {
        let random = uuid::Uuid::new_v4().into_bytes();
        chunk.copy_from_slice(&random[..chunk.len()]);
    }
    bytes
}

/// Where entries live.
pub enum IdempotencyCache {
    Redis(RedisHandle),
    Local(Mutex<HashMap<String, (String, Instant)>>),
}

fn pending(claim: &Claim) -> String {
    format!("P:{}", claim.arguments)
}

/// Reads an existing entry against `claim`.
fn classify(claim: &Claim, current: &str) -> Begin {
    if let Some(arguments) = current.strip_prefix("P:") {
        return if arguments == claim.arguments {
            Begin::InProgress
        } else {
            Begin::Mismatch
        };
    }
    let Some((arguments, result)) = current
        .strip_prefix("D:")
        .and_then(|rest| rest.split_once(':'))
    else {
        return Begin::Acquired;
    };
    if arguments != claim.arguments {
        return Begin::Mismatch;
    }
    match serde_json::from_str(result) {
        Ok(cached) => Begin::Replay(cached),
        Err(_) => Begin::InProgress,
    }
}

impl IdempotencyCache {
    pub fn new(redis: Option<RedisHandle>) -> IdempotencyCache {
        match redis {
            Some(handle) => IdempotencyCache::Redis(handle),
            None => IdempotencyCache::Local(Mutex::new(HashMap::new())),
        }
    }

    /// Takes the in-progress lock for `lock_ttl`, or reports what exists.
    pub async fn begin(
        &self,
        claim: &Claim,
        lock_ttl: Duration,
    ) -> Result<Begin, StoreUnavailable> {
        let ttl_ms = u64::try_from(lock_ttl.as_millis()).unwrap_or(u64::MAX);
        match self {
            IdempotencyCache::Redis(redis) => {
                let current: Option<String> = redis
                    .run(
                        BEGIN
                            .key(redis.key(&claim.key))
                            .arg(pending(claim))
                            .arg(ttl_ms),
                    )
                    .await?;
                Ok(current.map_or(Begin::Acquired, |current| classify(claim, &current)))
            }
            IdempotencyCache::Local(entries) => {
                let mut entries = entries.lock().unwrap_or_else(|p| p.into_inner());
                let now = Instant::now();
                if entries.len() > 10_000 {
                    entries.retain(|_, (_, expires)| *expires > now);
                }
                match entries
                    .get(&claim.key)
                    .filter(|(_, expires)| *expires > now)
                {
                    Some((current, _)) => Ok(classify(claim, current)),
                    None => {
                        entries.insert(claim.key.clone(), (pending(claim), now + lock_ttl));
                        Ok(Begin::Acquired)
                    }
                }
            }
        }
    }

    /// Stores the result of our claim for `ttl`.
    pub async fn complete(
        &self,
        claim: &Claim,
        result: &Cached,
        ttl: Duration,
    ) -> Result<(), StoreUnavailable> {
        let done = format!(
            "D:{}:{}",
            claim.arguments,
            serde_json::to_string(result).unwrap_or_default()
        );
        let ttl_ms = u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX);
        match self {
            IdempotencyCache::Redis(redis) => {
                let _: i64 = redis
                    .run(
                        COMPLETE
                            .key(redis.key(&claim.key))
                            .arg(pending(claim))
                            .arg(done)
                            .arg(ttl_ms),
                    )
                    .await?;
            }
            IdempotencyCache::Local(entries) => {
                let mut entries = entries.lock().unwrap_or_else(|p| p.into_inner());
                if entries
                    .get(&claim.key)
                    .is_some_and(|(v, _)| *v == pending(claim))
                {
                    entries.insert(claim.key.clone(), (done, Instant::now() + ttl));
                }
            }
        }
        Ok(())
    }

    /// Drops our lock after a failure, so the same call may be retried.
    pub async fn release(&self, claim: &Claim) -> Result<(), StoreUnavailable> {
        match self {
            IdempotencyCache::Redis(redis) => {
                let _: i64 = redis
                    .run(RELEASE.key(redis.key(&claim.key)).arg(pending(claim)))
                    .await?;
            }
            IdempotencyCache::Local(entries) => {
                let mut entries = entries.lock().unwrap_or_else(|p| p.into_inner());
                if entries
                    .get(&claim.key)
                    .is_some_and(|(v, _)| *v == pending(claim))
                {
                    entries.remove(&claim.key);
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn claims_are_scoped_keyed_and_hide_the_key() {
        let hasher = Hasher::new(Some(&SecretString::from("s".repeat(32))));
        let a =
            args(json!({"idempotency_key": "key-0001", "text": "hello", "conversation_id": "c"}));
        let claim = hasher.claim("client", "user", "tool", &a).unwrap();
        assert!(!claim.key.contains("key-0001"));
        let reordered =
            args(json!({"conversation_id": "c", "text": "hello", "idempotency_key": "key-0001"}));
        let again = hasher.claim("client", "user", "tool", &reordered).unwrap();
        assert_eq!(
            (claim.key.clone(), claim.arguments.clone()),
            (again.key, again.arguments)
        );
        let other_user = hasher.claim("client", "user-2", "tool", &a).unwrap();
        assert_ne!(claim.key, other_user.key);
        let other_secret = Hasher::new(None)
            .claim("client", "user", "tool", &a)
            .unwrap();
        assert_ne!(claim.key, other_secret.key);
        assert!(
            hasher
                .claim("c", "u", "t", &args(json!({"idempotency_key": "short"})))
                .is_none()
        );
        assert!(hasher.claim("c", "u", "t", &args(json!({}))).is_none());
    }

    #[tokio::test]
    async fn local_entries_lock_replay_and_mismatch() {
        let cache = IdempotencyCache::new(None);
        let hasher = Hasher::new(None);
        let claim = hasher
            .claim(
                "c",
                "u",
                "t",
                &args(json!({"idempotency_key": "key-0001", "x": 1})),
            )
            .unwrap();
        let other = hasher
            .claim(
                "c",
                "u",
                "t",
                &args(json!({"idempotency_key": "key-0001", "x": 2})),
            )
            .unwrap();
        let ttl = Duration::from_secs(5);
        assert_eq!(cache.begin(&claim, ttl).await.unwrap(), Begin::Acquired);
        assert_eq!(cache.begin(&claim, ttl).await.unwrap(), Begin::InProgress);
        assert_eq!(cache.begin(&other, ttl).await.unwrap(), Begin::Mismatch);
        let result = Cached {
            data_json: "{}".into(),
            text: "done".into(),
            next_cursor: String::new(),
            truncated: false,
        };
        cache.complete(&claim, &result, ttl).await.unwrap();
        assert_eq!(
            cache.begin(&claim, ttl).await.unwrap(),
            Begin::Replay(result)
        );
        assert_eq!(cache.begin(&other, ttl).await.unwrap(), Begin::Mismatch);
        let third = hasher
            .claim("c", "u", "t", &args(json!({"idempotency_key": "key-0003"})))
            .unwrap();
        assert_eq!(cache.begin(&third, ttl).await.unwrap(), Begin::Acquired);
        cache.release(&third).await.unwrap();
        assert_eq!(cache.begin(&third, ttl).await.unwrap(), Begin::Acquired);
    }
}
