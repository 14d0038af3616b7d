//! Typed configuration of the auth-service (listeners and their limits,
//! issuer, database, token lifetimes), with defaults for embedded mode and
//! a validation pass run at start-up.

use std::net::SocketAddr;

use chataigne_common::config::env_var;
use chataigne_common::database::Backend;
pub use chataigne_common::database::DatabaseConfig;
pub use chataigne_common::grpc_server::GrpcServerLimits;
pub use chataigne_common::http_server::ConnectionLimits;
use chataigne_common::production;
use chataigne_common::secrets::serialize_optional_secret;
use chataigne_common::startup::StartupConfig;
use schemars::JsonSchema;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

/// Everything the auth-service needs to start.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// gRPC listen address (AuthService).
    pub grpc_listen: String,
    /// HTTP listen address (JWKS, authorization-server metadata).
    pub http_listen: String,
    /// Internal listen address of Prometheus `/metrics`; absent: not served.
    pub metrics_listen: Option<String>,
    /// Public base URL of the authorization server, without a trailing slash.
    /// Empty: `http://<http_listen>`.
    pub issuer: String,
    /// The identity store.
    pub database: DatabaseConfig,
    /// Lifetime of access tokens issued through the management API.
    pub access_token_ttl_secs: u64,
    /// Longest lifetime of a principal assertion returned by `Authenticate`
    /// (each lives no longer than the call it is for, `valid_for_ms`).
    pub assertion_ttl_secs: u64,
    /// Lifetime of a sign-in session.
    pub session_ttl_secs: u64,
    /// Load the demo users (password `chataigne-demo`), their memberships,
    /// the roles and the demo client `chataigne-demo-assistant` at start
    /// (idempotent; `CHATAIGNE_SEED_DEMO=true`). On for the embedded
    /// launcher and the tests; never in production, where `users add`,
    /// `memberships grant` and `clients add` create accounts instead.
    pub seed_demo: bool,
    /// Accept, with PostgreSQL, the settings made for demos and tests:
    /// `seed_demo`, `oauth.client_metadata_allow_http_loopback` and a plain
    /// http issuer outside loopback (refused otherwise). Every start logs a
    /// warning while it is set. Never in production.
    pub allow_insecure_development: bool,
    /// How often signing keys are re-read from the database (rotation by
    /// another replica or the admin command).
    pub key_reload_secs: u64,
    /// The OAuth 2.1 authorization server.
    pub oauth: OAuthConfig,
    /// Encryption at rest of the signing keys.
    pub keys: KeysConfig,
    /// The public HTTP listener (the authorization server): connection
    /// discipline and request bounds.
    pub http: HttpServerConfig,
    /// Limits of the gRPC server (AuthService).
    pub grpc_server: GrpcServerLimits,
    /// TLS of the gRPC listener (certificate and key, and with
    /// `client_ca_file`, required client certificates: mTLS), re-read when
    /// the files change; unset: plaintext HTTP/2 (embedded mode).
    pub grpc_tls: Option<chataigne_common::tls::ServerTls>,
    /// TLS of the OAuth HTTP listener, for in-cluster callers reaching
    /// `/token` directly (the Ingress or route in front must then connect
    /// over HTTPS); unset: plain HTTP behind a TLS-terminating proxy.
    pub http_tls: Option<chataigne_common::tls::ServerTls>,
    /// Retries of the database (connection and migrations) at start.
    pub startup: StartupConfig,
    /// The credential the gateway presents to `Authenticate` (gRPC metadata
    /// `x-chataigne-gateway-credential`), the gateway's `gateway_credential`:
    /// at least 32 bytes, compared in constant time. Unset: `Authenticate`
    /// refuses every caller (embedded mode's launcher generates one).
    #[serde(serialize_with = "serialize_optional_secret")]
    #[schemars(with = "Option<String>", extend("x-secret" = true))]
    pub gateway_credential: Option<SecretString>,
    /// Error reporting to Sentry (off without a DSN).
    pub sentry: chataigne_common::error_reporting::SentryConfig,
}

/// The authorization server's endpoints and policies.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct OAuthConfig {
    /// Resources (RFC 8707) tokens may be issued for: an exact URL, or a
    /// prefix when the entry ends with `/`. Empty: no authorization-code flow.
    pub allowed_resources: Vec<String>,
    /// Lifetime of an authorization code.
    pub code_ttl_secs: u64,
    /// Lifetime of a refresh token (each refresh issues a new one).
    pub refresh_token_ttl_secs: u64,
    /// Lifetime of the sign-in cookie of the consent page.
    pub browser_session_ttl_secs: u64,
    /// Audience of service-account tokens (`client_credentials`): the tool-service.
    pub service_audience: String,
    /// RFC 7591 dynamic client registration at `/register`.
    pub dynamic_registration: bool,
    /// Accept `https://` client ids naming a Client ID Metadata Document.
    pub client_metadata_documents: bool,
    /// Also accept `http://` metadata document URLs on loopback, and fetch
    /// from loopback addresses (tests only).
    pub client_metadata_allow_http_loopback: bool,
    /// Development only (embedded mode): the demo client accepts any
    /// loopback redirect URI (`127.0.0.1`, `[::1]` or `localhost`, any port,
    /// any path). Off: its registered URIs, any port on loopback.
    pub demo_client_any_loopback_redirect: bool,
    /// Networks a metadata document may be fetched from although they are
    /// not public (development only). Empty: public addresses only, checked
    /// after DNS resolution (no loopback, private, link-local, shared,
    /// documentation or reserved ranges, nor the cloud metadata addresses).
    #[schemars(with = "Vec<String>")]
    pub client_metadata_allowed_networks: Vec<ipnet::IpNet>,
    /// How long a fetched metadata document is reused.
    pub client_metadata_cache_secs: u64,
    /// Tests only: `/authorize` signs this user in and approves without a
    /// page. Refused unless the issuer is an `http://` loopback URL.
    pub auto_approve_user_for_tests: String,
    /// Brute-force limits of the sign-in form and the token, revocation and
    /// registration endpoints.
    pub rate_limits: RateLimitConfig,
    /// How often expired codes, sessions and refresh tokens are deleted.
    pub cleanup_interval_secs: u64,
    /// Rows deleted per statement by the cleanup (bounded batches).
    pub cleanup_batch_size: u32,
    /// How long revoked sessions and tokens, and spent codes, are kept
    /// (reuse of a spent code still revokes its session meanwhile).
    pub revoked_retention_secs: u64,
    /// Which clients may receive write scopes (seed 002: trusted clients only).
    pub client_trust: ClientTrustConfig,
}

/// The trust policy of write scopes. A client this policy does not trust is
/// refused write scopes at `/authorize` (`invalid_scope`), and its refreshes
/// and client-credentials tokens never carry one; its consent page marks it
/// as unverified unless it was registered by an operator.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ClientTrustConfig {
    /// Clients an operator registered (`clients add`, the demo seed) are trusted.
    pub registered_clients: bool,
    /// Further trusted client ids, e.g. the metadata document URL of a
    /// product whose publisher the operator has checked.
    pub trusted_client_ids: Vec<String>,
}

impl Default for ClientTrustConfig {
    fn default() -> Self {
        ClientTrustConfig {
            registered_clients: true,
            trusted_client_ids: Vec::new(),
        }
    }
}

impl ClientTrustConfig {
    /// Whether the client `client_id` of `origin` (`registered`, `dynamic`
    /// or `metadata`) may receive write scopes.
    pub fn trusts(&self, client_id: &str, origin: &str) -> bool {
        (self.registered_clients && origin == "registered")
            || self.trusted_client_ids.iter().any(|id| id == client_id)
    }

    fn validate(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.trusted_client_ids
                .iter()
                .all(|id| !id.is_empty() && id.len() <= 2048 && !id.chars().any(char::is_control)),
            "oauth.client_trust.trusted_client_ids entries must be client ids (1 to 2048 printable characters)"
        );
        Ok(())
    }
}

/// At most `max` events per `per_secs` seconds, in bursts of up to `max`
/// (GCRA: one event is earned back every `per_secs / max`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Limit {
    /// Events allowed in the window (and the largest burst), 1 to 1000000.
    pub max: u32,
    /// Length of the window in seconds, 1 to 86400.
    pub per_secs: u64,
}

impl Limit {
    pub const fn new(max: u32, per_secs: u64) -> Limit {
        Limit { max, per_secs }
    }

    fn validate(&self, field: &str) -> anyhow::Result<()> {
        anyhow::ensure!(
            (1..=1_000_000).contains(&self.max) && (1..=86_400).contains(&self.per_secs),
            "oauth.rate_limits.{field} needs max between 1 and 1000000 and per_secs between 1 and 86400"
        );
        Ok(())
    }
}

/// Brute-force limits of the authorization server, counted in Redis when
/// `redis.url` is set (one quota for every replica) and in process
/// otherwise (embedded mode; and as the fallback while Redis does not
/// answer). The client address is the socket peer, or behind
/// `trusted_proxies` the first untrusted `X-Forwarded-For` hop from the right.
/// Every failure budget is keyed by something the requester controls (its
/// address, the account it tries): nobody spends another user's budget.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RateLimitConfig {
    /// When false, none of these limits applies.
    pub enabled: bool,
    /// Proxies whose `X-Forwarded-For` is believed.
    #[schemars(with = "Vec<String>")]
    pub trusted_proxies: Vec<ipnet::IpNet>,
    /// Sign-in form posts per client address.
    pub sign_in_per_address: Limit,
    /// Failed sign-ins per client address and account (normalised e-mail):
    /// past it, that address's attempts on that account wait.
    pub sign_in_failures_per_address_and_account: Limit,
    /// Sign-in attempts per account (normalised e-mail), from every address,
    /// by browsers that have not signed in to it before (no device cookie),
    /// counted before the password is checked. This bounds password guessing
    /// whatever the attacker does: at most twice `max` in any `per_secs`
    /// (the default: at most 20 an hour). A browser that has signed in to
    /// the account before is not counted here, so the real user is never
    /// kept out by it; another browser is told how long to wait.
    #[serde(alias = "sign_in_failures_per_account")]
    pub sign_in_attempts_per_account: Limit,
    /// Failed sign-ins per recognised device (device cookie) and account.
    pub sign_in_failures_per_device: Limit,
    /// `/token`, `/revoke` and `/register` requests per client address.
    pub token_per_address: Limit,
    /// Refused `/token` and `/revoke` requests per client address and the
    /// `client_id` it names (a public client id is not a credential: a
    /// flood from one address spends only that address's budget).
    #[serde(alias = "token_failures_per_client")]
    pub token_failures_per_address_and_client: Limit,
    /// `/register` requests per client address.
    pub register_per_address: Limit,
    /// Where the counters live when shared by the replicas.
    pub redis: LimitStoreConfig,
}

/// The Redis the replicas share their limit counters in.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct LimitStoreConfig {
    /// `redis://…` (or `rediss://…` for TLS), may hold a password; with
    /// `cluster`, one seed node of the cluster. Absent: counters in process,
    /// per replica.
    #[serde(serialize_with = "serialize_optional_secret")]
    #[schemars(with = "Option<String>", extend("x-secret" = true))]
    pub url: Option<SecretString>,
    /// Whether `url` is a Redis Cluster (the cluster client routes each key
    /// to its slot). Must match the server: a mismatch refuses to start.
    pub cluster: bool,
    /// PEM CA bundle the server certificate of a `rediss://` URL must chain
    /// to (a private CA); unset: the system's and the public web roots.
    pub tls_ca_file: Option<String>,
    /// Prefix of every key, so that deployments can share a server.
    pub key_prefix: String,
    /// HMAC-SHA256 key under which addresses, accounts and client ids are
    /// hashed into key names (at least 32 bytes, the same on every
    /// replica). Required with `url`.
    #[serde(serialize_with = "serialize_optional_secret")]
    #[schemars(with = "Option<String>", extend("x-secret" = true))]
    pub key_secret: Option<SecretString>,
    /// Bound on connecting.
    pub connect_timeout_ms: u64,
    /// Bound on one command's answer.
    pub response_timeout_ms: u64,
}

impl Default for LimitStoreConfig {
    fn default() -> Self {
        LimitStoreConfig {
            url: None,
            cluster: false,
            tls_ca_file: None,
            key_prefix: "chataigne-auth".to_owned(),
            key_secret: None,
            connect_timeout_ms: 250,
            response_timeout_ms: 250,
        }
    }
}

impl LimitStoreConfig {
    fn validate(&self) -> anyhow::Result<()> {
        let Some(url) = &self.url else {
            return Ok(());
        };
        let url = url.expose_secret();
        anyhow::ensure!(
            (url.starts_with("redis://") || url.starts_with("rediss://"))
                && redis::Client::open(url).is_ok(),
            "oauth.rate_limits.redis.url must be a redis:// or rediss:// URL"
        );
        anyhow::ensure!(
            self.key_secret
                .as_ref()
                .is_some_and(|secret| secret.expose_secret().len() >= 32),
            "oauth.rate_limits.redis.key_secret ({}) is required with oauth.rate_limits.redis.url: at least 32 bytes, the same on every replica",
            env_var("oauth.rate_limits.redis.key_secret")
        );
        if let Some(secret) = &self.key_secret {
            production::check_secret(
                "oauth.rate_limits.redis.key_secret",
                "",
                secret.expose_secret().as_bytes(),
                32,
            )?;
        }
        anyhow::ensure!(
            !self.key_prefix.is_empty()
                && self.key_prefix.len() <= 64
                && !self
                    .key_prefix
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control()),
            "oauth.rate_limits.redis.key_prefix must be 1 to 64 characters without spaces"
        );
        anyhow::ensure!(
            (1..=10_000).contains(&self.connect_timeout_ms)
                && (1..=10_000).contains(&self.response_timeout_ms),
            "oauth.rate_limits.redis.connect_timeout_ms and response_timeout_ms must be between 1 and 10000"
        );
        Ok(())
    }
}

impl Default for RateLimitConfig {
    fn default() -> Self {
        RateLimitConfig {
            enabled: true,
            trusted_proxies: Vec::new(),
            sign_in_per_address: Limit::new(30, 300),
            sign_in_failures_per_address_and_account: Limit::new(5, 900),
            sign_in_attempts_per_account: Limit::new(10, 3600),
            sign_in_failures_per_device: Limit::new(10, 3600),
            token_per_address: Limit::new(300, 60),
            token_failures_per_address_and_client: Limit::new(30, 300),
            register_per_address: Limit::new(20, 3600),
            redis: LimitStoreConfig::default(),
        }
    }
}

impl RateLimitConfig {
    fn validate(&self) -> anyhow::Result<()> {
        self.sign_in_per_address.validate("sign_in_per_address")?;
        self.sign_in_failures_per_address_and_account
            .validate("sign_in_failures_per_address_and_account")?;
        self.sign_in_attempts_per_account
            .validate("sign_in_attempts_per_account")?;
        self.sign_in_failures_per_device
            .validate("sign_in_failures_per_device")?;
        self.token_per_address.validate("token_per_address")?;
        self.token_failures_per_address_and_client
            .validate("token_failures_per_address_and_client")?;
        self.register_per_address.validate("register_per_address")?;
        self.redis.validate()
    }
}

impl Default for OAuthConfig {
    fn default() -> Self {
        OAuthConfig {
            allowed_resources: Vec::new(),
            code_ttl_secs: 60,
            refresh_token_ttl_secs: 30 * 24 * 3600,
            browser_session_ttl_secs: 12 * 3600,
            service_audience: "urn:chataigne:tool-service".to_owned(),
            dynamic_registration: false,
            client_metadata_documents: true,
            client_metadata_allow_http_loopback: false,
            demo_client_any_loopback_redirect: false,
            client_metadata_allowed_networks: Vec::new(),
            client_metadata_cache_secs: 300,
            auto_approve_user_for_tests: String::new(),
            rate_limits: RateLimitConfig::default(),
            cleanup_interval_secs: 300,
            cleanup_batch_size: 500,
            revoked_retention_secs: 24 * 3600,
            client_trust: ClientTrustConfig::default(),
        }
    }
}

impl OAuthConfig {
    /// Whether tokens may be issued for `resource`.
    pub fn resource_allowed(&self, resource: &str) -> bool {
        self.allowed_resources.iter().any(|allowed| {
            resource == allowed
                || (allowed.ends_with('/') && resource.starts_with(allowed.as_str()))
        })
    }

    fn validate(&self, issuer: &str) -> anyhow::Result<()> {
        for resource in &self.allowed_resources {
            anyhow::ensure!(
                (resource.starts_with("https://") || resource.starts_with("http://"))
                    && !resource.contains(['#', '?']),
                "oauth.allowed_resources entries must be http(s) URLs without query or fragment"
            );
        }
        anyhow::ensure!(
            (10..=600).contains(&self.code_ttl_secs),
            "oauth.code_ttl_secs must be between 10 and 600"
        );
        anyhow::ensure!(
            (60..=366 * 24 * 3600).contains(&self.refresh_token_ttl_secs),
            "oauth.refresh_token_ttl_secs must be between 60 and a year"
        );
        anyhow::ensure!(
            (60..=30 * 24 * 3600).contains(&self.browser_session_ttl_secs),
            "oauth.browser_session_ttl_secs must be between 60 and 30 days"
        );
        anyhow::ensure!(
            !self.service_audience.is_empty() && self.service_audience.len() <= 256,
            "oauth.service_audience must be set"
        );
        anyhow::ensure!(
            self.client_metadata_cache_secs <= 24 * 3600,
            "oauth.client_metadata_cache_secs must be at most a day"
        );
        anyhow::ensure!(
            (1..=86_400).contains(&self.cleanup_interval_secs),
            "oauth.cleanup_interval_secs must be between 1 and 86400"
        );
        anyhow::ensure!(
            (1..=100_000).contains(&self.cleanup_batch_size),
            "oauth.cleanup_batch_size must be between 1 and 100000"
        );
        anyhow::ensure!(
            self.revoked_retention_secs <= 366 * 24 * 3600,
            "oauth.revoked_retention_secs must be at most a year"
        );
        self.rate_limits.validate()?;
        self.client_trust.validate()?;
        if !self.auto_approve_user_for_tests.is_empty() {
            anyhow::ensure!(
                is_loopback_http(issuer),
                "oauth.auto_approve_user_for_tests is for tests only: it needs an http:// loopback issuer"
            );
        }
        Ok(())
    }
}

/// `http://127.0.0.1…`, `http://localhost…` or `http://[::1]…`.
pub fn is_loopback_http(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let host = match host.rsplit_once(':') {
        Some((h, port)) if !h.is_empty() && port.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host,
    };
    matches!(host, "127.0.0.1" | "localhost" | "[::1]")
}

/// How the signing keys' private halves are kept in the database.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct KeysConfig {
    /// Key-encryption key sealing the private signing keys (AES-256-GCM):
    /// the base64 encoding of 32 random bytes, from a secret
    /// (`CHATAIGNE_KEYS__ENCRYPTION_KEY`). Required with PostgreSQL; with
    /// SQLite (embedded mode, whose launcher keeps one in its data directory)
    /// keys are stored in plaintext without it. To change it, list the new
    /// key first, comma-separated (`new,old`): the first seals, all open, and
    /// keys sealed under an older one are re-sealed at start.
    #[serde(serialize_with = "serialize_optional_secret")]
    #[schemars(with = "Option<String>", extend("x-secret" = true))]
    pub encryption_key: Option<SecretString>,
}

impl KeysConfig {
    fn validate(&self, backend: Backend) -> anyhow::Result<()> {
        match &self.encryption_key {
            Some(secret) => crate::key_encryption::parse_keks(secret).map(|_| ()),
            None => {
                anyhow::ensure!(
                    backend == Backend::Sqlite,
                    "keys.encryption_key ({}) is required with PostgreSQL: the base64 encoding of 32 random bytes (e.g. `openssl rand -base64 32`) that encrypts the signing keys at rest",
                    env_var("keys.encryption_key")
                );
                Ok(())
            }
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sentry: chataigne_common::error_reporting::SentryConfig::default(),
            grpc_listen: "127.0.0.1:50051".to_owned(),
            http_listen: "127.0.0.1:8081".to_owned(),
            metrics_listen: None,
            issuer: String::new(),
            database: DatabaseConfig {
                url: SecretString::from("sqlite://chataigne-auth.db?mode=rwc"),
                max_connections: 10,
                connect_timeout_ms: 3_000,
                statement_timeout_ms: 5_000,
            },
            access_token_ttl_secs: 900,
            assertion_ttl_secs: 120,
            session_ttl_secs: 30 * 24 * 3600,
            seed_demo: false,
            allow_insecure_development: false,
            key_reload_secs: 60,
            oauth: OAuthConfig::default(),
            keys: KeysConfig::default(),
            http: HttpServerConfig::default(),
            grpc_server: GrpcServerLimits::default(),
            grpc_tls: None,
            http_tls: None,
            startup: StartupConfig::default(),
            gateway_credential: None,
        }
    }
}

impl Config {
    /// Rejects configurations that cannot work, naming the field at fault.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.sentry.validate()?;
        for (field, value) in [
            ("grpc_listen", &self.grpc_listen),
            ("http_listen", &self.http_listen),
        ] {
            anyhow::ensure!(
                value.parse::<SocketAddr>().is_ok(),
                "{field} must be an IP address and port, e.g. 127.0.0.1:8081"
            );
        }
        if let Some(metrics_listen) = &self.metrics_listen {
            anyhow::ensure!(
                metrics_listen.parse::<SocketAddr>().is_ok(),
                "metrics_listen must be an IP address and port, e.g. 0.0.0.0:9090"
            );
        }
        if !self.issuer.is_empty() {
            let rest = self
                .issuer
                .strip_prefix("https://")
                .or_else(|| self.issuer.strip_prefix("http://"));
            anyhow::ensure!(
                rest.is_some_and(|host| !host.is_empty()),
                "issuer must be an http(s) URL"
            );
            anyhow::ensure!(
                !self.issuer.contains(['?', '#']),
                "issuer must not contain a query or a fragment"
            );
        }
        let database = self.database.validate().map_err(anyhow::Error::msg)?;
        anyhow::ensure!(
            (1..=86_400).contains(&self.access_token_ttl_secs),
            "access_token_ttl_secs must be between 1 and 86400"
        );
        anyhow::ensure!(
            (1..=3_600).contains(&self.assertion_ttl_secs),
            "assertion_ttl_secs must be between 1 and 3600"
        );
        anyhow::ensure!(
            self.session_ttl_secs >= self.access_token_ttl_secs
                && self.session_ttl_secs <= 366 * 24 * 3600,
            "session_ttl_secs must be at least access_token_ttl_secs and at most a year"
        );
        anyhow::ensure!(
            (1..=3_600).contains(&self.key_reload_secs),
            "key_reload_secs must be between 1 and 3600"
        );
        self.keys.validate(database.backend())?;
        self.validate_gateway_credential()?;
        self.http.validate()?;
        self.grpc_server
            .validate("grpc_server")
            .map_err(anyhow::Error::msg)?;
        self.startup
            .validate("startup")
            .map_err(anyhow::Error::msg)?;
        for (section, tls) in [("grpc_tls", &self.grpc_tls), ("http_tls", &self.http_tls)] {
            if let Some(tls) = tls {
                tls.check_fields(section)?;
            }
        }
        self.oauth.validate(&self.resolved_issuer())?;
        if database.backend() == Backend::Postgres && !self.allow_insecure_development {
            self.refuse_development_settings()?;
        }
        Ok(())
    }

    /// What a PostgreSQL deployment refuses unless
    /// `allow_insecure_development` is set.
    fn refuse_development_settings(&self) -> anyhow::Result<()> {
        if self.seed_demo {
            production::refuse_development_switch(
                "seed_demo",
                "loads demo accounts with the published demo password",
            )?;
        }
        if self.oauth.client_metadata_allow_http_loopback {
            production::refuse_development_switch(
                "oauth.client_metadata_allow_http_loopback",
                "accepts http:// client metadata documents and fetches them from loopback (tests only)",
            )?;
        }
        if self.oauth.demo_client_any_loopback_redirect {
            production::refuse_development_switch(
                "oauth.demo_client_any_loopback_redirect",
                "lets the demo client send codes to any loopback path (embedded mode only)",
            )?;
        }
        production::require_https_outside_loopback("issuer", &self.resolved_issuer())
    }

    /// The gateway's credential, when set, is long enough.
    fn validate_gateway_credential(&self) -> anyhow::Result<()> {
        let min = chataigne_common::assertion::AssertionContract::CALLER_CREDENTIAL_MIN_LEN;
        if let Some(secret) = &self.gateway_credential {
            anyhow::ensure!(
                secret.expose_secret().len() >= min,
                "gateway_credential ({}) must be at least {min} bytes, the same value as the gateway's",
                env_var("gateway_credential")
            );
        }
        Ok(())
    }

    /// What serving checks before it starts: [`Config::validate`] and the
    /// TLS files. `config check` runs it.
    pub fn validate_serving(&self) -> anyhow::Result<()> {
        self.validate()?;
        self.validate_tls()
    }

    /// The issuer URL: the configured one without a trailing slash, or one
    /// derived from the HTTP listen address.
    pub fn resolved_issuer(&self) -> String {
        if self.issuer.is_empty() {
            format!("http://{}", self.http_listen)
        } else {
            self.issuer.trim_end_matches('/').to_owned()
        }
    }
}

/// The authorization server's public HTTP listener and the bounds of each
/// request (`http/stack.rs` applies them).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HttpServerConfig {
    /// Header and body read timeouts, idle timeout, head bounds, connection
    /// caps (per client address: the socket peer; connections from
    /// `oauth.rate_limits.trusted_proxies` are held to the total only),
    /// HTTP/2 limits.
    pub connections: ConnectionLimits,
    /// Bound of a whole request, body included: 503 past it.
    pub request_timeout_ms: u64,
    /// Largest request body: 413 past it.
    pub max_body_bytes: usize,
    /// Requests handled at once; past it 503 with `Retry-After` at once.
    pub max_concurrent_requests: usize,
    /// Whether `Strict-Transport-Security` (sent for a year when the
    /// listener serves TLS or the issuer is https) covers subdomains too.
    pub hsts_include_subdomains: bool,
}

impl Default for HttpServerConfig {
    fn default() -> Self {
        HttpServerConfig {
            connections: ConnectionLimits::default(),
            request_timeout_ms: 30_000,
            max_body_bytes: 64 * 1024,
            max_concurrent_requests: 256,
            hsts_include_subdomains: false,
        }
    }
}

impl HttpServerConfig {
    fn validate(&self) -> anyhow::Result<()> {
        self.connections
            .validate("http.connections")
            .map_err(anyhow::Error::msg)?;
        anyhow::ensure!(
            self.request_timeout_ms > self.connections.body_read_timeout_ms,
            "http.request_timeout_ms must exceed http.connections.body_read_timeout_ms"
        );
        anyhow::ensure!(
            (1..=16 * 1024 * 1024).contains(&self.max_body_bytes),
            "http.max_body_bytes must be between 1 and 16777216"
        );
        anyhow::ensure!(
            self.max_concurrent_requests > 0,
            "http.max_concurrent_requests must be greater than zero"
        );
        Ok(())
    }
}

impl Config {
    /// The TLS files serving reads (operator commands do not): each named,
    /// readable and usable; the error names the field and the path.
    pub fn validate_tls(&self) -> anyhow::Result<()> {
        if let Some(tls) = &self.grpc_tls {
            tls.validate("grpc_tls")?;
        }
        if let Some(tls) = &self.http_tls {
            tls.validate("http_tls")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        let config = Config::default();
        assert!(config.validate().is_ok());
        assert_eq!(config.resolved_issuer(), "http://127.0.0.1:8081");
    }

    type Mutation = Box<dyn Fn(&mut Config)>;

    #[test]
    fn nonsense_values_are_rejected_with_the_field_name() {
        let cases: Vec<(Mutation, &str)> = vec![
            (
                Box::new(|c| c.grpc_listen = "nowhere".into()),
                "grpc_listen",
            ),
            (Box::new(|c| c.issuer = "ftp://x".into()), "issuer"),
            (
                Box::new(|c| c.metrics_listen = Some("metrics:9090".into())),
                "metrics_listen",
            ),
            (Box::new(|c| c.issuer = "https://x/?a=1".into()), "issuer"),
            (
                Box::new(|c| c.database.url = SecretString::from("mysql://x")),
                "database.url",
            ),
            (
                Box::new(|c| c.database.max_connections = 0),
                "max_connections",
            ),
            (
                Box::new(|c| c.access_token_ttl_secs = 0),
                "access_token_ttl",
            ),
            (Box::new(|c| c.assertion_ttl_secs = 99_999), "assertion_ttl"),
            (Box::new(|c| c.session_ttl_secs = 10), "session_ttl"),
            (
                Box::new(|c| c.oauth.allowed_resources = vec!["ftp://x".into()]),
                "allowed_resources",
            ),
            (Box::new(|c| c.oauth.code_ttl_secs = 0), "code_ttl"),
            (
                Box::new(|c| c.oauth.rate_limits.sign_in_per_address.max = 0),
                "sign_in_per_address",
            ),
            (
                Box::new(|c| c.oauth.cleanup_interval_secs = 0),
                "cleanup_interval_secs",
            ),
            (
                Box::new(|c| {
                    c.issuer = "https://auth.example".into();
                    c.oauth.auto_approve_user_for_tests = "usr_1".into();
                }),
                "auto_approve_user_for_tests",
            ),
            (
                Box::new(|c| {
                    c.oauth.rate_limits.redis.url =
                        Some(SecretString::from("redis://127.0.0.1:6379"));
                }),
                "oauth.rate_limits.redis.key_secret",
            ),
            (
                Box::new(|c| {
                    c.oauth.rate_limits.redis.url = Some(SecretString::from("memcached://x"));
                    c.oauth.rate_limits.redis.key_secret =
                        Some(SecretString::from("q8J1r0-Zk2VwYh4uN7bT3sXeLm9PaCdF"));
                }),
                "oauth.rate_limits.redis.url",
            ),
            (
                Box::new(|c| {
                    c.oauth
                        .rate_limits
                        .token_failures_per_address_and_client
                        .max = 0;
                }),
                "token_failures_per_address_and_client",
            ),
            (
                Box::new(|c| c.oauth.client_trust.trusted_client_ids = vec![String::new()]),
                "oauth.client_trust.trusted_client_ids",
            ),
        ];
        for (mutate, field) in cases {
            let mut config = Config::default();
            mutate(&mut config);
            let error = config.validate().err().map(|e| e.to_string());
            assert!(
                error.as_deref().is_some_and(|e| e.contains(field)),
                "{field}: {error:?}"
            );
        }
    }

    #[test]
    fn auto_approve_is_accepted_only_on_a_loopback_http_issuer() {
        let mut config = Config::default();
        config.oauth.auto_approve_user_for_tests = "usr_1".into();
        assert!(config.validate().is_ok(), "default issuer is loopback http");
        for issuer in [
            "https://127.0.0.1:8081",
            "http://auth.example",
            "http://127.0.0.1.evil",
        ] {
            config.issuer = issuer.into();
            assert!(config.validate().is_err(), "{issuer}");
        }
    }

    #[test]
    fn resources_match_exactly_or_by_slash_prefix() {
        let oauth = OAuthConfig {
            allowed_resources: vec![
                "https://mcp.example/mcp/v1".into(),
                "https://x.example/mcp/".into(),
            ],
            ..OAuthConfig::default()
        };
        assert!(oauth.resource_allowed("https://mcp.example/mcp/v1"));
        assert!(!oauth.resource_allowed("https://mcp.example/mcp/v1/extra"));
        assert!(!oauth.resource_allowed("https://mcp.example/mcp/v2"));
        assert!(oauth.resource_allowed("https://x.example/mcp/v2"));
        assert!(!oauth.resource_allowed("https://x.example/other"));
    }

    type Adjust = Box<dyn Fn(&mut Config)>;

    #[test]
    fn postgres_refuses_demo_settings_unless_insecure_development_is_allowed() {
        let production = || {
            let mut config = Config::default();
            config.database.url = SecretString::from("postgres://u@db/auth");
            config.keys.encryption_key = crate::key_encryption::generate_kek().ok();
            config.issuer = "https://auth.example".into();
            config
        };
        assert!(production().validate().is_ok());
        let loopback = Config {
            issuer: "http://127.0.0.1:8081".into(),
            ..production()
        };
        assert!(loopback.validate().is_ok(), "http on loopback");
        let cases: [(Adjust, &str); 4] = [
            (Box::new(|c| c.seed_demo = true), "CHATAIGNE_SEED_DEMO"),
            (
                Box::new(|c| c.oauth.client_metadata_allow_http_loopback = true),
                "CHATAIGNE_OAUTH__CLIENT_METADATA_ALLOW_HTTP_LOOPBACK",
            ),
            (
                Box::new(|c| c.issuer = "http://auth.example".into()),
                "CHATAIGNE_ISSUER",
            ),
            (
                Box::new(|c| {
                    c.issuer = String::new();
                    c.http_listen = "0.0.0.0:8081".into();
                }),
                "CHATAIGNE_ISSUER",
            ),
        ];
        for (adjust, variable) in cases {
            let mut config = production();
            adjust(&mut config);
            let error = config.validate().unwrap_err().to_string();
            assert!(
                error.contains(variable) && error.contains("CHATAIGNE_ALLOW_INSECURE_DEVELOPMENT"),
                "{error}"
            );
            config.allow_insecure_development = true;
            assert!(config.validate().is_ok(), "{variable}: allowed explicitly");
            // SQLite (embedded mode) keeps them.
            config.allow_insecure_development = false;
            config.database.url = SecretString::from("sqlite::memory:");
            assert!(config.validate().is_ok(), "{variable} on SQLite");
        }
    }

    #[test]
    fn a_guessable_shared_limit_secret_is_refused_naming_its_variable() {
        for weak in ["k".repeat(32), "abcdefghijklmnopqrstuvwxyz012345".into()] {
            let mut config = Config::default();
            config.oauth.rate_limits.redis.url = Some(SecretString::from("redis://127.0.0.1:6379"));
            config.oauth.rate_limits.redis.key_secret = Some(SecretString::from(weak.clone()));
            let error = config.validate().unwrap_err().to_string();
            assert!(
                error.contains("CHATAIGNE_OAUTH__RATE_LIMITS__REDIS__KEY_SECRET")
                    && !error.contains(&weak),
                "{error}"
            );
        }
    }

    #[test]
    fn the_key_encryption_key_is_required_on_postgres_and_must_be_32_bytes() {
        let mut config = Config::default();
        config.database.url = SecretString::from("postgres://u@db/auth");
        let error = config.validate().err().map(|e| e.to_string());
        assert!(
            error
                .as_deref()
                .is_some_and(|e| e
                    .contains("keys.encryption_key (CHATAIGNE_KEYS__ENCRYPTION_KEY) is required")),
            "{error:?}"
        );
        config.keys.encryption_key = Some(SecretString::from("dG9vIHNob3J0"));
        let error = config.validate().err().map(|e| e.to_string());
        assert!(
            error
                .as_deref()
                .is_some_and(|e| e.contains("keys.encryption_key") && !e.contains("dG9v")),
            "{error:?}"
        );
        let kek = crate::key_encryption::generate_kek().unwrap();
        config.keys.encryption_key = Some(kek.clone());
        assert!(config.validate().is_ok());
        assert!(!format!("{config:?}").contains(kek.expose_secret()));
        // SQLite (embedded) may run without one.
        assert!(Config::default().keys.encryption_key.is_none());
        assert!(Config::default().validate().is_ok());
    }

    #[test]
    fn the_key_encryption_keys_come_from_one_variable_newest_first() {
        let (new, old) = (
            crate::key_encryption::generate_kek().unwrap(),
            crate::key_encryption::generate_kek().unwrap(),
        );
        let both = format!("{},{}", new.expose_secret(), old.expose_secret());
        let env = vec![
            (
                "CHATAIGNE_DATABASE__URL".to_owned(),
                "postgres://u@db/auth".to_owned(),
            ),
            ("CHATAIGNE_KEYS__ENCRYPTION_KEY".to_owned(), both.clone()),
        ];
        let config: Config =
            chataigne_common::config::load_from_env(&Config::default(), None, env).unwrap();
        assert_eq!(
            config
                .keys
                .encryption_key
                .as_ref()
                .map(|k| k.expose_secret()),
            Some(both.as_str())
        );
        assert!(config.validate().is_ok());
    }

    #[test]
    fn shared_limits_need_a_key_secret_and_old_names_still_load() {
        let env = vec![
            (
                "CHATAIGNE_OAUTH__RATE_LIMITS__REDIS__URL".to_owned(),
                "redis://127.0.0.1:6379".to_owned(),
            ),
            (
                "CHATAIGNE_OAUTH__RATE_LIMITS__REDIS__KEY_SECRET".to_owned(),
                "q8J1r0-Zk2VwYh4uN7bT3sXeLm9PaCdF".to_owned(),
            ),
        ];
        let config: Config =
            chataigne_common::config::load_from_env(&Config::default(), None, env).unwrap();
        assert!(config.validate().is_ok());
        assert!(!format!("{config:?}").contains("q8J1r0-Zk2VwYh4uN7bT3sXeLm9PaCdF"));
        // The budget's former name is still read.
        let old: RateLimitConfig =
            serde_json::from_str(r#"{"token_failures_per_client": {"max": 7, "per_secs": 60}}"#)
                .unwrap();
        assert_eq!(old.token_failures_per_address_and_client, Limit::new(7, 60));
    }

    #[test]
    fn registered_clients_are_trusted_by_default_and_listed_ones_always() {
        let trust = ClientTrustConfig::default();
        assert!(trust.trusts("my-app", "registered"));
        assert!(!trust.trusts("https://app.example/c.json", "metadata"));
        assert!(!trust.trusts("dyn_x", "dynamic"));
        let listed = ClientTrustConfig {
            registered_clients: false,
            trusted_client_ids: vec!["https://app.example/c.json".into()],
        };
        assert!(listed.trusts("https://app.example/c.json", "metadata"));
        assert!(!listed.trusts("my-app", "registered"));
    }

    #[test]
    fn nested_lists_load_comma_separated_from_one_variable() {
        let env = vec![
            (
                "CHATAIGNE_OAUTH__RATE_LIMITS__TRUSTED_PROXIES".to_owned(),
                "10.0.0.0/8,192.168.1.10/32".to_owned(),
            ),
            (
                "CHATAIGNE_OAUTH__ALLOWED_RESOURCES".to_owned(),
                "https://mcp.example/mcp/v1,https://x.example/mcp/".to_owned(),
            ),
        ];
        let config: Config =
            chataigne_common::config::load_from_env(&Config::default(), None, env).unwrap();
        assert_eq!(config.oauth.rate_limits.trusted_proxies.len(), 2);
        assert_eq!(config.oauth.allowed_resources.len(), 2);
        assert!(config.validate().is_ok());
    }

    #[test]
    fn debug_never_prints_the_database_url() {
        let mut config = Config::default();
        config.database.url = SecretString::from("postgres://u:hunter2@db/auth");
        assert!(!format!("{config:?}").contains("hunter2"));
    }

    #[test]
    fn configured_issuer_loses_its_trailing_slash() {
        let config = Config {
            issuer: "https://auth.example/".into(),
            ..Config::default()
        };
        assert_eq!(config.resolved_issuer(), "https://auth.example");
    }
}
