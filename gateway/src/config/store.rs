//! Configuration of the shared store behind the rate limits: Redis
//! (production, shared by every replica) or in-process (embedded mode), and
//! the per-minute limits. The gateway keeps no idempotency state (the
//! tool-service's durable records answer retries), so it holds no secret of
//! the idempotency keys.

use schemars::JsonSchema;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

/// Where the rate-limit logs live.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RedisConfig {
    /// `redis://…` (or `rediss://…` for TLS), may hold a password; with
    /// `cluster`, one seed node of the cluster (e.g. a managed service's
    /// configuration endpoint). Unset: in-process stores (one replica only).
    #[serde(serialize_with = "chataigne_common::secrets::serialize_optional_secret")]
    #[schemars(with = "Option<String>", extend("x-secret" = true))]
    pub url: Option<SecretString>,
    /// Whether `url` is a Redis Cluster (the cluster client routes each key
    /// to its slot). Must match the server: a mismatch refuses to start.
    pub cluster: bool,
    /// PEM CA bundle the server certificate of a `rediss://` URL must chain
    /// to (a private CA); unset: the system's and the public web roots.
    pub tls_ca_file: Option<String>,
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
            cluster: false,
            tls_ca_file: None,
            connect_timeout_ms: 250,
            response_timeout_ms: 250,
            key_prefix: "chataigne".to_owned(),
        }
    }
}

/// Calls allowed per minute (SPEC §6); 0 switches a limit off.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimits {
    /// Calls per minute per OAuth client × user × read tool; 0 switches
    /// this limit off.
    pub reads_per_minute: u32,
    /// Calls per minute per OAuth client × user × write tool; 0 switches
    /// this limit off.
    pub writes_per_minute: u32,
    /// Requests per minute per client address, before authentication; 0
    /// switches this limit off. Connected Apps traffic arrives from a few
    /// egress addresses: keep this generous.
    pub per_ip_per_minute: u32,
    /// What a call meets while Redis cannot answer a limit check:
    /// `fail_open` (served without the check, counted; the gateway stays
    /// ready, degraded) or `fail_closed` (refused with the retryable
    /// `MCP_DEPENDENCY_UNAVAILABLE`; the gateway reports not ready).
    pub on_store_failure: OnStoreFailure,
}

/// The policy of the rate limits while their store is unavailable.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OnStoreFailure {
    /// Calls are served without the limit check (availability first).
    #[default]
    FailOpen,
    /// Calls are refused until the store answers again (the limits first).
    FailClosed,
}

impl Default for RateLimits {
    fn default() -> Self {
        RateLimits {
            reads_per_minute: 1_000,
            writes_per_minute: 500,
            per_ip_per_minute: 6_000,
            on_store_failure: OnStoreFailure::FailOpen,
        }
    }
}

/// Checks the Redis settings.
pub fn validate(redis: &RedisConfig) -> anyhow::Result<()> {
    if let Some(url) = &redis.url {
        let url = url.expose_secret();
        anyhow::ensure!(
            url.starts_with("redis://") || url.starts_with("rediss://"),
            "redis.url must start with redis:// or rediss://"
        );
    }
    anyhow::ensure!(
        !redis.key_prefix.is_empty() && !redis.key_prefix.contains(['{', '}']),
        "redis.key_prefix must be non-empty and hold no braces (it is the hash tag on a cluster)"
    );
    anyhow::ensure!(
        redis.connect_timeout_ms > 0 && redis.response_timeout_ms > 0,
        "redis timeouts must be greater than zero"
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_urls_are_checked_and_stay_hidden() {
        let redis = RedisConfig {
            url: Some(SecretString::from("redis://:hunter2@127.0.0.1:6379")),
            ..RedisConfig::default()
        };
        validate(&redis).unwrap();
        assert!(!format!("{redis:?}").contains("hunter2"));
        let bad = RedisConfig {
            url: Some(SecretString::from("http://x")),
            ..RedisConfig::default()
        };
        assert!(validate(&bad).is_err());
    }
}
