//! Typed configuration of the tool-service, validated at start-up.

use chataigne_common::config::env_var;
use chataigne_common::database::Backend;
pub use chataigne_common::database::DatabaseConfig;
use chataigne_common::production;
use chataigne_common::secrets::{serialize_optional_secret, serialize_secrets};
use chataigne_common::startup::StartupConfig;
use schemars::JsonSchema;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

/// Everything the tool-service needs to serve.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// gRPC listen address.
    pub listen: String,
    /// Internal listen address of Prometheus `/metrics`; absent: not served.
    pub metrics_listen: Option<String>,
    /// gRPC endpoint of the auth-service, e.g. "http://127.0.0.1:50051".
    pub auth_service_url: String,
    /// The tool store.
    pub database: DatabaseConfig,
    /// Calls of each deadline class working on the database at once, so
    /// that slow analytics, reads and writes cannot starve each other.
    pub admission: AdmissionConfig,
    /// Pagination cursors.
    pub cursor: CursorConfig,
    /// Idempotent writes.
    pub idempotency: IdempotencyConfig,
    /// Load the demo data set at start — two organizations, five locations,
    /// `demo_days` of orders, customers and conversations — idempotently
    /// (`CHATAIGNE_SEED_DEMO=true`; embedded mode and tests, never production).
    pub seed_demo: bool,
    /// Accept `seed_demo` with PostgreSQL (refused otherwise: the demo data
    /// has no place in production). Every start logs a warning while it is
    /// set. Never in production.
    pub allow_insecure_development: bool,
    /// Days of order history in the demo data set (up to today).
    pub demo_days: u32,
    /// Limits of the gRPC server: concurrency (load shedding past it), the
    /// longest RPC, HTTP/2 streams.
    pub grpc_server: chataigne_common::grpc_server::GrpcServerLimits,
    /// Retries of the database (connection and migrations) at start.
    pub startup: StartupConfig,
    /// TLS of the gRPC listener (certificate and key, and with
    /// `client_ca_file`, required client certificates: mTLS), re-read when
    /// the files change; unset: plaintext HTTP/2 (embedded mode).
    pub tls: Option<chataigne_common::tls::ServerTls>,
    /// TLS towards the auth-service (its CA bundle, optionally a client
    /// certificate for mTLS, a server name override); unset: plaintext.
    pub auth_service_tls: Option<chataigne_common::tls::ClientTls>,
    /// Error reporting to Sentry (off without a DSN).
    pub sentry: chataigne_common::error_reporting::SentryConfig,
}

/// Slots per deadline class (0: the default share of
/// `database.max_connections`, the three defaults summing to the pool). A
/// call waits at most `queue_ms` for a slot of its class, then is refused
/// with the retryable `MCP_OVERLOADED`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields, default)]
pub struct AdmissionConfig {
    /// Read calls at once; 0: half of `database.max_connections`.
    pub reads: u32,
    /// Write calls at once; 0: a quarter of `database.max_connections`.
    pub writes: u32,
    /// Analytics calls (30-second class) at once; 0: the rest of
    /// `database.max_connections`.
    pub analytics: u32,
    /// How long a call waits for a slot of its class before it is refused.
    pub queue_ms: u64,
}

impl Default for AdmissionConfig {
    fn default() -> Self {
        AdmissionConfig {
            reads: 0,
            writes: 0,
            analytics: 0,
            queue_ms: 250,
        }
    }
}

impl AdmissionConfig {
    /// The slots of each class for a pool of `pool` connections.
    pub fn limits(&self, pool: u32) -> crate::tools::admission::ClassLimits {
        let queue = std::time::Duration::from_millis(self.queue_ms);
        let split = crate::tools::admission::ClassLimits::split(pool, queue);
        let or = |configured: u32, default: u32| if configured > 0 { configured } else { default };
        crate::tools::admission::ClassLimits {
            reads: or(self.reads, split.reads),
            writes: or(self.writes, split.writes),
            analytics: or(self.analytics, split.analytics),
            queue,
        }
    }
}

/// Signing and lifetime of pagination cursors.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CursorConfig {
    /// HMAC keys for pagination cursors, newest first, comma-separated in the
    /// variable: the first signs, all verify (rotation). Each at least 32
    /// bytes, the same on every replica. Required with PostgreSQL; empty
    /// (SQLite only): a random key per process, so cursors die with it.
    #[serde(serialize_with = "serialize_secrets")]
    #[schemars(with = "Vec<String>", extend("x-secret" = true))]
    pub keys: Vec<SecretString>,
    /// How long a cursor stays valid.
    pub ttl_secs: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sentry: chataigne_common::error_reporting::SentryConfig::default(),
            listen: "127.0.0.1:50052".to_owned(),
            metrics_listen: None,
            auth_service_url: "http://127.0.0.1:50051".to_owned(),
            database: DatabaseConfig {
                url: SecretString::from("sqlite://chataigne-tools.db?mode=rwc"),
                max_connections: 16,
                connect_timeout_ms: 3_000,
                statement_timeout_ms: 30_000,
            },
            admission: AdmissionConfig::default(),
            cursor: CursorConfig::default(),
            idempotency: IdempotencyConfig::default(),
            seed_demo: false,
            allow_insecure_development: false,
            demo_days: 365,
            grpc_server: chataigne_common::grpc_server::GrpcServerLimits::default(),
            startup: StartupConfig::default(),
            tls: None,
            auth_service_tls: None,
        }
    }
}

/// Idempotent writes: the keyed hash of the scoped keys and how long a stored
/// result is replayed.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct IdempotencyConfig {
    /// HMAC-SHA256 key (at least 32 bytes) of the stored key and argument
    /// hashes, the same on every replica and across restarts. Required with
    /// PostgreSQL; unset (SQLite only): a random key per process, which
    /// forgets every key at restart (the embedded launcher keeps one on disk).
    #[serde(serialize_with = "serialize_optional_secret")]
    #[schemars(with = "Option<String>", extend("x-secret" = true))]
    pub secret: Option<SecretString>,
    /// How long a stored result is replayed for a repeated key.
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
        self.sentry.validate()?;
        self.grpc_server
            .validate("grpc_server")
            .map_err(anyhow::Error::msg)?;
        if let Some(metrics_listen) = &self.metrics_listen {
            anyhow::ensure!(
                metrics_listen.parse::<std::net::SocketAddr>().is_ok(),
                "metrics_listen must be an IP address and port, e.g. 0.0.0.0:9090"
            );
        }
        self.database.validate().map_err(anyhow::Error::msg)?;
        let pool = self.database.max_connections;
        let slots = self.admission.limits(pool);
        let configured = [
            self.admission.reads,
            self.admission.writes,
            self.admission.analytics,
        ];
        anyhow::ensure!(
            configured.iter().all(|slots| *slots == 0)
                || slots.reads + slots.writes + slots.analytics <= pool,
            "admission.reads + admission.writes + admission.analytics ({}) must not exceed database.max_connections ({pool}): each class keeps connections of its own",
            slots.reads + slots.writes + slots.analytics
        );
        anyhow::ensure!(
            self.admission.queue_ms <= 10_000,
            "admission.queue_ms must be at most 10000 (a call waits that long for a slot of its class)"
        );
        anyhow::ensure!(
            self.auth_service_url.starts_with("http://")
                || self.auth_service_url.starts_with("https://"),
            "auth_service_url must be an http(s) URL"
        );
        for (position, key) in self.cursor.keys.iter().enumerate() {
            production::check_secret(
                "cursor.keys",
                &format!("entry {} of ", position + 1),
                key.expose_secret().as_bytes(),
                32,
            )?;
        }
        anyhow::ensure!(
            (1..=3_660).contains(&self.demo_days),
            "demo_days must be between 1 and 3660"
        );
        anyhow::ensure!(self.cursor.ttl_secs > 0, "cursor.ttl_secs must be positive");
        if let Some(secret) = &self.idempotency.secret {
            production::check_secret(
                "idempotency.secret",
                "",
                secret.expose_secret().as_bytes(),
                32,
            )?;
        }
        anyhow::ensure!(
            self.idempotency.replay_ttl_secs > 0,
            "idempotency.replay_ttl_secs must be positive"
        );
        self.startup
            .validate("startup")
            .map_err(anyhow::Error::msg)?;
        if let Some(tls) = &self.tls {
            tls.check_fields("tls")?;
        }
        if let Some(tls) = &self.auth_service_tls {
            tls.check_fields("auth_service_tls")?;
        }
        Ok(())
    }

    /// [`Config::validate`], then what serving needs besides: on PostgreSQL
    /// (several replicas, restarts) the secrets every replica must share and
    /// keep, without which a repeated idempotency key is not recognised and
    /// a cursor from another replica is refused. Run at start and by
    /// `config check`; the operator commands (`migrate`, `seed`, `writes`)
    /// need only [`Config::validate`].
    pub fn validate_serving(&self) -> anyhow::Result<()> {
        self.validate()?;
        self.validate_tls()?;
        self.require_shared_secrets()?;
        if self.database.backend() == Some(Backend::Postgres)
            && self.seed_demo
            && !self.allow_insecure_development
        {
            production::refuse_development_switch(
                "seed_demo",
                "loads the demo data set (demo organizations, orders and customers)",
            )?;
        }
        Ok(())
    }

    /// The secrets of [`Config::validate_serving`]: with PostgreSQL,
    /// `idempotency.secret` and `cursor.keys` must be set; the error names
    /// the key and its variable.
    pub fn require_shared_secrets(&self) -> anyhow::Result<()> {
        if self.database.backend() == Some(Backend::Sqlite) {
            return Ok(());
        }
        let missing = [
            ("idempotency.secret", self.idempotency.secret.is_none()),
            ("cursor.keys", self.cursor.keys.is_empty()),
        ];
        for (key, is_missing) in missing {
            anyhow::ensure!(
                !is_missing,
                "{key} ({}) is required with PostgreSQL: at least 32 random bytes, the same on every replica and kept across restarts",
                env_var(key)
            );
        }
        Ok(())
    }
}

impl Config {
    /// The TLS files serving reads (operator commands do not): each named,
    /// readable and usable; the error names the field and the path.
    pub fn validate_tls(&self) -> anyhow::Result<()> {
        if let Some(tls) = &self.tls {
            tls.validate("tls")?;
        }
        if let Some(tls) = &self.auth_service_tls {
            tls.validate("auth_service_tls")?;
        }
        Ok(())
    }
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
    fn admission_slots_default_to_the_pool_split_and_never_exceed_it() {
        let mut config = Config::default();
        let slots = config.admission.limits(config.database.max_connections);
        assert_eq!(
            (slots.reads, slots.writes, slots.analytics),
            (8, 4, 4),
            "the default pool of 16"
        );
        config.admission.analytics = 2;
        let slots = config.admission.limits(config.database.max_connections);
        assert_eq!((slots.reads, slots.writes, slots.analytics), (8, 4, 2));
        config.validate().unwrap();
        config.admission.reads = 12;
        let error = config.validate().unwrap_err().to_string();
        assert!(
            error.contains("admission.reads") && error.contains("database.max_connections (16)"),
            "{error}"
        );
    }

    #[test]
    fn serving_on_postgres_needs_the_shared_secrets_and_names_their_variables() {
        let mut config = Config::default();
        config.database.url = SecretString::from("postgres://u:hunter2@db/tools");
        config.validate().unwrap();
        let error = config.validate_serving().unwrap_err().to_string();
        assert!(
            error.contains("idempotency.secret") && error.contains("CHATAIGNE_IDEMPOTENCY__SECRET"),
            "{error}"
        );
        config.idempotency.secret = Some(SecretString::from("q8J1r0-Zk2VwYh4uN7bT3sXeLm9PaCdF"));
        let error = config.validate_serving().unwrap_err().to_string();
        assert!(
            error.contains("cursor.keys") && error.contains("CHATAIGNE_CURSOR__KEYS"),
            "{error}"
        );
        config.cursor.keys = vec![SecretString::from("5f0c9a3e7b1d2846c0e9f7a3b5d1e2c4")];
        config.validate_serving().unwrap();
        // SQLite (embedded mode) serves with per-process secrets.
        Config::default().validate_serving().unwrap();
    }

    #[test]
    fn postgres_refuses_the_demo_data_unless_insecure_development_is_allowed() {
        let mut config = Config::default();
        config.database.url = SecretString::from("postgres://u@db/tools");
        config.idempotency.secret = Some(SecretString::from("q8J1r0-Zk2VwYh4uN7bT3sXeLm9PaCdF"));
        config.cursor.keys = vec![SecretString::from("5f0c9a3e7b1d2846c0e9f7a3b5d1e2c4")];
        config.validate_serving().unwrap();
        config.seed_demo = true;
        let error = config.validate_serving().unwrap_err().to_string();
        assert!(
            error.contains("CHATAIGNE_SEED_DEMO")
                && error.contains("CHATAIGNE_ALLOW_INSECURE_DEVELOPMENT"),
            "{error}"
        );
        config.allow_insecure_development = true;
        config.validate_serving().unwrap();
        // SQLite (embedded mode) seeds without it.
        let embedded = Config {
            seed_demo: true,
            ..Config::default()
        };
        embedded.validate_serving().unwrap();
    }

    #[test]
    fn guessable_secrets_are_refused_naming_their_variable() {
        for weak in ["c".repeat(32), "0123456789abcdefghijklmnopqrstuv".into()] {
            let mut config = Config::default();
            config.cursor.keys = vec![
                SecretString::from("5f0c9a3e7b1d2846c0e9f7a3b5d1e2c4"),
                SecretString::from(weak.clone()),
            ];
            let error = config.validate().unwrap_err().to_string();
            assert!(
                error.contains("entry 2 of cursor.keys (CHATAIGNE_CURSOR__KEYS)")
                    && !error.contains(&weak),
                "{error}"
            );
            let mut config = Config::default();
            config.idempotency.secret = Some(SecretString::from(weak.clone()));
            let error = config.validate().unwrap_err().to_string();
            assert!(error.contains("CHATAIGNE_IDEMPOTENCY__SECRET"), "{error}");
        }
    }

    #[test]
    fn config_check_redacts_every_secret() {
        let env = vec![
            (
                "CHATAIGNE_DATABASE__URL".to_owned(),
                "postgres://u:hunter2@db/tools".to_owned(),
            ),
            (
                "CHATAIGNE_IDEMPOTENCY__SECRET".to_owned(),
                "idem-secret-q8J1r0Zk2VwYh4uN7bT3sXeL".to_owned(),
            ),
            (
                "CHATAIGNE_CURSOR__KEYS".to_owned(),
                "cursor-key-one-5f0c9a3e7b1d2846c0e9f7a3,cursor-key-two-b5d1e2c4q8J1r0Zk2VwYh4u"
                    .to_owned(),
            ),
        ];
        let report = chataigne_common::config_check::check(
            "tool-service",
            &Config::default(),
            None,
            env,
            Config::validate_serving,
        )
        .unwrap();
        for secret in ["hunter2", "idem-secret", "cursor-key"] {
            assert!(!report.contains(secret), "{secret} in {report}");
        }
        assert!(
            report.contains("keys = [\"<redacted>\", \"<redacted>\"]"),
            "{report}"
        );
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
