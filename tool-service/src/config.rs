//! Typed configuration of the tool-service, validated at start-up.

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// gRPC listen address.
    pub listen: String,
    /// Internal listen address of Prometheus `/metrics`; absent: not served.
    pub metrics_listen: Option<String>,
    /// gRPC endpoint of the auth-service, e.g. "http://127.0.0.1:50051".
    pub auth_service_url: String,
    pub database: DatabaseConfig,
    pub cursor: CursorConfig,
    pub idempotency: IdempotencyConfig,
    /// Load the demo data set at start (embedded mode and tests).
    pub seed_demo: bool,
    /// Days of order history in the demo data set (up to today).
    pub demo_days: u32,
    /// Limits of the gRPC server: concurrency (load shedding past it), the
    /// longest RPC, HTTP/2 streams.
    pub grpc_server: chataigne_common::grpc_server::GrpcServerLimits,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DatabaseConfig {
    /// `postgres://…` (production) or `sqlite:…` (embedded).
    #[serde(serialize_with = "serialize_secret")]
    pub url: SecretString,
    pub max_connections: u32,
    pub connect_timeout_ms: u64,
    /// Upper bound of any statement; per-call deadlines are shorter.
    pub statement_timeout_ms: u64,
}

impl DatabaseConfig {
    pub fn url(&self) -> &str {
        self.url.expose_secret()
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CursorConfig {
    /// HMAC keys for pagination cursors, newest first: the first signs, all
    /// verify (rotation). Each at least 32 bytes. Empty: a random key per
    /// process (cursors then die with it; fine for embedded mode only).
    #[serde(serialize_with = "serialize_secrets")]
    pub keys: Vec<SecretString>,
    /// How long a cursor stays valid.
    pub ttl_secs: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            listen: "127.0.0.1:50052".to_owned(),
            metrics_listen: None,
            auth_service_url: "http://127.0.0.1:50051".to_owned(),
            database: DatabaseConfig::default(),
            cursor: CursorConfig::default(),
            idempotency: IdempotencyConfig::default(),
            seed_demo: false,
            demo_days: 365,
            grpc_server: chataigne_common::grpc_server::GrpcServerLimits::default(),
        }
    }
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        DatabaseConfig {
            url: SecretString::from("sqlite://chataigne-tools.db?mode=rwc"),
            max_connections: 16,
            connect_timeout_ms: 3_000,
            statement_timeout_ms: 30_000,
        }
    }
}

/// Idempotent writes: the keyed hash of the scoped keys and how long a stored
/// result is replayed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct IdempotencyConfig {
    /// HMAC-SHA256 key (at least 32 bytes) of the stored key and argument
    /// hashes. `None`: a random key per process, which forgets every key at
    /// restart (embedded mode sets one; production must).
    #[serde(serialize_with = "serialize_optional_secret")]
    pub secret: Option<SecretString>,
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

impl Default for CursorConfig {
    fn default() -> Self {
        CursorConfig {
            keys: Vec::new(),
            ttl_secs: 3_600,
        }
    }
}

impl Config {
    /// Rejects configurations that cannot work, with a message naming the field.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.grpc_server
            .validate("grpc_server")
            .map_err(anyhow::Error::msg)?;
        if let Some(metrics_listen) = &self.metrics_listen {
            anyhow::ensure!(
                metrics_listen.parse::<std::net::SocketAddr>().is_ok(),
                "metrics_listen must be an IP address and port, e.g. 0.0.0.0:9090"
            );
        }
        let url = self.database.url();
        anyhow::ensure!(
            url.starts_with("postgres:")
                || url.starts_with("postgresql:")
                || url.starts_with("sqlite:"),
            "database.url must start with postgres:// or sqlite:"
        );
        anyhow::ensure!(
            self.database.max_connections > 0,
            "database.max_connections must be at least 1"
        );
        anyhow::ensure!(
            self.auth_service_url.starts_with("http://")
                || self.auth_service_url.starts_with("https://"),
            "auth_service_url must be an http(s) URL"
        );
        anyhow::ensure!(
            self.cursor
                .keys
                .iter()
                .all(|k| k.expose_secret().len() >= 32),
            "cursor.keys must each be at least 32 bytes"
        );
        anyhow::ensure!(
            (1..=3_660).contains(&self.demo_days),
            "demo_days must be between 1 and 3660"
        );
        anyhow::ensure!(self.cursor.ttl_secs > 0, "cursor.ttl_secs must be positive");
        anyhow::ensure!(
            self.idempotency
                .secret
                .as_ref()
                .is_none_or(|k| k.expose_secret().len() >= 32),
            "idempotency.secret must be at least 32 bytes"
        );
        anyhow::ensure!(
            self.idempotency.replay_ttl_secs > 0,
            "idempotency.replay_ttl_secs must be positive"
        );
        Ok(())
    }
}

fn serialize_secret<S: serde::Serializer>(secret: &SecretString, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(secret.expose_secret())
}

fn serialize_optional_secret<S: serde::Serializer>(
    secret: &Option<SecretString>,
    s: S,
) -> Result<S::Ok, S::Error> {
    match secret {
        Some(secret) => s.serialize_some(secret.expose_secret()),
        None => s.serialize_none(),
    }
}

fn serialize_secrets<S: serde::Serializer>(
    secrets: &[SecretString],
    s: S,
) -> Result<S::Ok, S::Error> {
    s.collect_seq(secrets.iter().map(|k| k.expose_secret()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_debug_hides_secrets() {
        let mut config = Config::default();
        config.validate().unwrap();
        config.database.url = SecretString::from("postgres://user:hunter2@db/x");
        assert!(!format!("{config:?}").contains("hunter2"));
    }

    #[test]
    fn invalid_values_are_refused() {
        let mut config = Config::default();
        config.database.url = SecretString::from("mysql://x");
        assert!(config.validate().is_err());
        let mut config = Config::default();
        config.cursor.keys = vec![SecretString::from("short")];
        assert!(config.validate().is_err());
        let config = Config {
            metrics_listen: Some("metrics:9090".into()),
            ..Config::default()
        };
        assert!(
            config
                .validate()
                .is_err_and(|e| e.to_string().contains("metrics_listen"))
        );
    }
}
