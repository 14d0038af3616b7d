//! Configuration of the shared stores behind rate limits and idempotency:
//! Redis (production, shared by every replica) or in-process (embedded mode),
//! the per-minute limits, and the secret of the idempotency keys' keyed hashes.

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize, Serializer};

/// Where rate-limit counters and idempotency entries live.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedisConfig {
    /// `redis://…` (or `rediss://…`); `None`: in-process stores (one replica only).
    #[serde(serialize_with = "serialize_optional_secret")]
    pub url: Option<SecretString>,
    /// Bound of one connection attempt; a dead Redis fails this fast.
    pub connect_timeout_ms: u64,
    /// Bound of one command's answer.
    pub response_timeout_ms: u64,
    /// Prefix of every key (several deployments may share one Redis).
    pub key_prefix: String,
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig {
            url: None,
            connect_timeout_ms: 250,
            response_timeout_ms: 250,
            key_prefix: "chataigne".to_owned(),
        }
    }
}

/// Calls allowed per minute (SPEC §6); 0 switches a limit off.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimits {
    /// Per OAuth client × user × read tool.
    pub reads_per_minute: u32,
    /// Per OAuth client × user × write tool.
    pub writes_per_minute: u32,
    /// Per client address, before authentication. Connected Apps traffic
    /// arrives from a few egress addresses: keep this generous.
    pub per_ip_per_minute: u32,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            reads_per_minute: 1_000,
            writes_per_minute: 500,
            per_ip_per_minute: 6_000,
        }
    }
}

/// Idempotency of the tools that take an `idempotency_key`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IdempotencyConfig {
    /// HMAC-SHA256 key of the scoped key hashes (at least 32 bytes). Required
    /// with Redis; without Redis, `None` draws a random key per process.
    #[serde(serialize_with = "serialize_optional_secret")]
    pub secret: Option<SecretString>,
    /// How long a stored result is replayed.
    pub replay_ttl_secs: u64,
}

impl Default for IdempotencyConfig {
    fn default() -> Self {
        IdempotencyConfig {
            secret: None,
            replay_ttl_secs: 24 * 3600,
        }
    }
}

/// Checks the store settings together.
pub fn validate(redis: &RedisConfig, idempotency: &IdempotencyConfig) -> anyhow::Result<()> {
    if let Some(url) = &redis.url {
        let url = url.expose_secret();
        anyhow::ensure!(
            url.starts_with("redis://") || url.starts_with("rediss://"),
            "redis.url must start with redis:// or rediss://"
        );
        anyhow::ensure!(
            idempotency.secret.is_some(),
            "idempotency.secret is required when redis.url is set"
        );
    }
    anyhow::ensure!(
        redis.connect_timeout_ms > 0 && redis.response_timeout_ms > 0,
        "redis timeouts must be greater than zero"
    );
    if let Some(secret) = &idempotency.secret {
        anyhow::ensure!(
            secret.expose_secret().len() >= 32,
            "idempotency.secret must be at least 32 bytes"
        );
    }
    anyhow::ensure!(
        idempotency.replay_ttl_secs > 0,
        "idempotency.replay_ttl_secs must be greater than zero"
    );
    Ok(())
}

fn serialize_optional_secret<S: Serializer>(
    secret: &Option<SecretString>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match secret {
        Some(secret) => s.serialize_some(secret.expose_secret()),
        None => s.serialize_none(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_needs_a_secret_and_secrets_stay_hidden() {
        let redis = RedisConfig {
            url: Some(SecretString::from("redis://:hunter2@127.0.0.1:6379")),
            ..RedisConfig::default()
        };
        let mut idempotency = IdempotencyConfig::default();
        assert!(validate(&redis, &idempotency).is_err());
        idempotency.secret = Some(SecretString::from("short"));
        assert!(validate(&redis, &idempotency).is_err());
        idempotency.secret = Some(SecretString::from("k".repeat(32)));
        validate(&redis, &idempotency).unwrap();
        assert!(!format!("{redis:?} {idempotency:?}").contains("hunter2"));
        let bad = RedisConfig {
            url: Some(SecretString::from("http://x")),
            ..RedisConfig::default()
        };
        assert!(validate(&bad, &idempotency).is_err());
    }
}
