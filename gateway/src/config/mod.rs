//! Typed configuration of the gateway (listeners and their connection
//! limits, backends, public endpoints and their client profiles, network
//! allowlist, input limits, deadlines), validated at start-up.

use std::net::SocketAddr;
use std::str::FromStr;

pub use chataigne_common::http_server::{ConnectionLimits, Http2Limits};
use ipnet::IpNet;
use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize};

mod store;

pub use store::{OnStoreFailure, RateLimits, RedisConfig};

/// The MCP revision an endpoint speaks, named by its release date: what
/// each one means is its module under `mcp/revision/`, registered with
/// `mcp::revision::protocol`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default, JsonSchema)]
pub enum Revision {
    /// MCP 2025-11-25 (negotiating down to 2025-06-18 and 2025-03-26).
    #[default]
    #[serde(rename = "2025-11-25")]
    V2025_11_25,
    /// MCP 2026-07-28: stateless, `server/discover`, per-request `_meta`,
    /// mirrored headers checked against the body.
    #[serde(rename = "2026-07-28")]
    V2026_07_28,
}

impl std::fmt::Display for Revision {
    /// The release date naming it, as configured (`2025-11-25`).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(name)) => f.write_str(&name),
            _ => Err(std::fmt::Error),
        }
    }
}

/// Everything the gateway needs to serve; see [`Config::default`] for values.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Public MCP listener address.
    pub listen: String,
    /// Internal listener: health, readiness and metrics only.
    pub internal_listen: String,
    /// `scheme://host[:port]` of the public endpoint; `None`: derived from the
    /// public listener's local address (`http://127.0.0.1:<port>`).
    pub public_url: Option<String>,
    /// gRPC endpoint of the auth-service.
    pub auth_service_url: String,
    /// gRPC endpoint of the tool-service.
    pub tool_service_url: String,
    /// Issuer URL advertised in the protected-resource metadata; `None`: omitted.
    pub authorization_server: Option<String>,
    /// Public MCP endpoints, each with its client profile and MCP revision.
    pub endpoints: Vec<EndpointConfig>,
    /// Browser origins allowed besides the public URL's own origin.
    #[serde(deserialize_with = "list_or_comma_separated")]
    pub allowed_origins: Vec<String>,
    /// Source-address allowlist of the public listener.
    pub allowlist: Allowlist,
    /// Connection discipline of the public listener: header and body read
    /// timeouts, idle timeout, head bounds, connection caps, HTTP/2 limits.
    pub connections: ConnectionLimits,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// Deepest accepted JSON nesting (arrays and objects).
    pub max_json_depth: usize,
    /// How long the tool catalogue is cached before it is fetched again.
    pub tool_catalog_ttl_secs: u64,
    /// Deadlines of the backend calls.
    pub deadlines: Deadlines,
    /// Operator switch: when false, write tools are hidden and refused.
    pub writes_enabled: bool,
    /// Redis for the rate limits; in-process stores without it.
    pub redis: RedisConfig,
    /// Calls allowed per minute; 0 switches a limit off.
    pub rate_limits: RateLimits,
    /// TLS on the public listener (e.g. port 443 in a pod); `None`: plain
    /// HTTP behind a TLS-terminating proxy or ingress.
    pub tls: Option<TlsConfig>,
    /// Whether `Strict-Transport-Security` (sent for a year when the public
    /// listener serves TLS or a public URL is https) covers subdomains too.
    pub hsts_include_subdomains: bool,
    /// Accept plain http public URLs (`public_url`, an endpoint's,
    /// `authorization_server`) outside loopback (refused otherwise). Every
    /// start logs a warning while it is set. Never in production.
    pub allow_insecure_development: bool,
    /// TLS towards both backends (auth-service and tool-service): the CA
    /// bundle that verifies them, optionally a client certificate and key
    /// (mTLS), a server name override; re-read when the files change.
    /// Unset: plaintext HTTP/2 (embedded mode).
    pub backend_tls: Option<chataigne_common::tls::ClientTls>,
    /// The credential this gateway presents to the auth-service's
    /// `Authenticate` (gRPC metadata `x-chataigne-gateway-credential`), the
    /// auth-service's `gateway_credential`: at least 32 bytes. Unset: none,
    /// and the auth-service refuses every token check (answered
    /// `MCP_DEPENDENCY_UNAVAILABLE`).
    #[serde(serialize_with = "chataigne_common::secrets::serialize_optional_secret")]
    #[schemars(with = "Option<String>", extend("x-secret" = true))]
    pub gateway_credential: Option<secrecy::SecretString>,
    /// Error reporting to Sentry (off without a DSN).
    pub sentry: chataigne_common::error_reporting::SentryConfig,
}

/// PEM files of the public listener's certificate chain and private key.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TlsConfig {
    /// PEM file of the certificate chain, leaf first.
    pub cert_file: String,
    /// PEM file of the private key.
    pub key_file: String,
}

/// One public MCP endpoint: a path, the client profile it serves and,
/// optionally, the hosts that select it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EndpointConfig {
    /// Path of the endpoint, e.g. `/mcp/v1`.
    pub path: String,
    /// Client profile: how results and failures are shaped.
    pub profile: Profile,
    /// MCP revision spoken on this endpoint: its protocol versions, header
    /// rules and methods.
    pub revision: Revision,
    /// Hosts (without port) that select this endpoint; empty: any host not
    /// claimed by another endpoint on the same path.
    #[serde(deserialize_with = "list_or_comma_separated")]
    pub hosts: Vec<String>,
    /// `scheme://host[:port]` of this endpoint when it differs from the
    /// gateway's `public_url` (e.g. a provider-specific subdomain).
    pub public_url: Option<String>,
}

/// How results and failures are shaped for a family of clients.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    /// `structuredContent` plus a short text; every tool failure is an `isError` result.
    #[default]
    Default,
    /// Connected Apps (seed 004): the JSON payload in the text block, no
    /// `outputSchema` listed; recoverable failures are `isError` results,
    /// fatal ones JSON-RPC errors with the platform codes.
    Google,
}

/// Which client addresses may reach the public listener, and how the client
/// address is found behind proxies. Never applied to the internal listener.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Allowlist {
    /// When false, every address is served.
    pub enabled: bool,
    /// Client networks served (IPv4 and IPv6).
    #[serde(deserialize_with = "list_or_comma_separated")]
    #[schemars(with = "Vec<String>")]
    pub cidrs: Vec<IpNet>,
    /// Peers whose `X-Forwarded-For` (and PROXY protocol header) is believed.
    #[serde(deserialize_with = "list_or_comma_separated")]
    #[schemars(with = "Vec<String>")]
    pub trusted_proxies: Vec<IpNet>,
    /// Connections from trusted proxies start with a PROXY protocol (v1 or v2)
    /// header carrying the client address.
    pub proxy_protocol: bool,
}

/// Egress blocks of the Connected Apps platform (seed 004, appendix).
pub const GOOGLE_EGRESS_CIDRS: &[&str] = &[
    "108.177.64.0/20",
    "142.250.88.0/22",
    "172.217.80.0/20",
    "192.178.20.0/22",
    "192.179.0.0/20",
    "74.125.232.0/24",
    "136.121.40.0/21",
];

/// Loopback networks, IPv4 and IPv6.
const LOOPBACK_CIDRS: &[&str] = &["127.0.0.0/8", "::1/128"];

fn nets(cidrs: &[&str]) -> Vec<IpNet> {
    cidrs.iter().filter_map(|c| c.parse().ok()).collect()
}

impl Default for Allowlist {
    /// Production: only the Connected Apps egress blocks, no trusted proxy.
    fn default() -> Self {
        Allowlist {
            enabled: true,
            cidrs: nets(GOOGLE_EGRESS_CIDRS),
            trusted_proxies: Vec::new(),
            proxy_protocol: false,
        }
    }
}

impl Allowlist {
    /// Embedded mode and tests: loopback clients only.
    pub fn loopback() -> Allowlist {
        Allowlist {
            cidrs: nets(LOOPBACK_CIDRS),
            ..Allowlist::default()
        }
    }

    fn validate(&self) -> anyhow::Result<()> {
        if self.enabled && self.cidrs.is_empty() {
            anyhow::bail!(
                "allowlist.cidrs is empty: every client would be refused (set allowlist.enabled = false to serve all)"
            );
        }
        if self.proxy_protocol && self.trusted_proxies.is_empty() {
            anyhow::bail!("allowlist.proxy_protocol needs allowlist.trusted_proxies");
        }
        Ok(())
    }
}

/// Per-class deadlines of backend calls, in milliseconds.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Deadlines {
    /// Deadline of a read tool's call to the tool-service.
    pub read_ms: u64,
    /// Deadline of an analytics tool's call.
    pub analytics_ms: u64,
    /// Deadline of a write tool's call.
    pub write_ms: u64,
    /// Deadline of the token check against the auth-service.
    pub auth_ms: u64,
    /// Connect timeout of the gRPC channels.
    pub connect_ms: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sentry: chataigne_common::error_reporting::SentryConfig::default(),
            listen: "127.0.0.1:8080".to_owned(),
            internal_listen: "127.0.0.1:9090".to_owned(),
            public_url: None,
            auth_service_url: "http://127.0.0.1:50051".to_owned(),
            tool_service_url: "http://127.0.0.1:50052".to_owned(),
            authorization_server: None,
            // `/mcp/v1` frozen on 2025-11-25 beside `/mcp/v2` on 2026-07-28.
            endpoints: vec![
                EndpointConfig::default(),
                EndpointConfig {
                    path: "/mcp/v2".to_owned(),
                    revision: Revision::V2026_07_28,
                    ..EndpointConfig::default()
                },
            ],
            allowed_origins: Vec::new(),
            allowlist: Allowlist::default(),
            connections: ConnectionLimits::default(),
            max_body_bytes: 1024 * 1024,
            max_json_depth: 64,
            tool_catalog_ttl_secs: 30,
            deadlines: Deadlines::default(),
            writes_enabled: true,
            redis: RedisConfig::default(),
            rate_limits: RateLimits::default(),
            tls: None,
            hsts_include_subdomains: false,
            allow_insecure_development: false,
            backend_tls: None,
            gateway_credential: None,
        }
    }
}

impl Default for EndpointConfig {
    fn default() -> Self {
        EndpointConfig {
            path: "/mcp/v1".to_owned(),
            profile: Profile::Default,
            revision: Revision::default(),
            hosts: Vec::new(),
            public_url: None,
        }
    }
}

impl Default for Deadlines {
    fn default() -> Self {
        Deadlines {
            read_ms: 15_000,
            analytics_ms: 30_000,
            write_ms: 20_000,
            auth_ms: 5_000,
            connect_ms: 1_500,
        }
    }
}

impl Deadlines {
    /// The longest a tool call may last: the lifetime asked for the
    /// principal assertion of a call whose tool is not known yet.
    pub fn longest_call(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.read_ms.max(self.analytics_ms).max(self.write_ms))
    }

    /// The bound of a whole MCP request once its body is read: the token
    /// check, the longest tool deadline and a margin, so that the tool's own
    /// deadline (which has the precise code) always fires first.
    pub fn request(&self) -> std::time::Duration {
        let longest_call = self.read_ms.max(self.analytics_ms).max(self.write_ms);
        std::time::Duration::from_millis(self.auth_ms + longest_call)
            + std::time::Duration::from_secs(5)
    }
}

impl Config {
    /// Checks every field; the error names the first offending one.
    pub fn validate(&self) -> anyhow::Result<()> {
        self.sentry.validate()?;
        for (name, addr) in [
            ("listen", &self.listen),
            ("internal_listen", &self.internal_listen),
        ] {
            addr.parse::<SocketAddr>()
                .map_err(|_| anyhow::anyhow!("{name}: {addr:?} is not an ip:port address"))?;
        }
        if self.listen == self.internal_listen && !self.listen.ends_with(":0") {
            anyhow::bail!("internal_listen must differ from listen");
        }
        if let Some(url) = &self.public_url {
            check_origin("public_url", url)?;
        }
        if let Some(url) = &self.authorization_server {
            check_absolute_url("authorization_server", url)?;
        }
        check_absolute_url("auth_service_url", &self.auth_service_url)?;
        check_absolute_url("tool_service_url", &self.tool_service_url)?;
        for origin in &self.allowed_origins {
            check_origin("allowed_origins", origin)?;
        }
        self.validate_endpoints()?;
        if !self.allow_insecure_development {
            let public = [
                ("public_url", self.public_url.as_ref()),
                ("authorization_server", self.authorization_server.as_ref()),
            ]
            .into_iter()
            .chain(
                self.endpoints
                    .iter()
                    .map(|endpoint| ("endpoints.public_url", endpoint.public_url.as_ref())),
            );
            for (key, url) in public.filter_map(|(key, url)| url.map(|url| (key, url))) {
                chataigne_common::production::require_https_outside_loopback(key, url)?;
            }
        }
        self.allowlist.validate()?;
        self.connections
            .validate("connections")
            .map_err(anyhow::Error::msg)?;
        store::validate(&self.redis)?;
        if let Some(tls) = &self.backend_tls {
            tls.check_fields("backend_tls")?;
        }
        let min = chataigne_common::assertion::AssertionContract::CALLER_CREDENTIAL_MIN_LEN;
        if let Some(credential) = &self.gateway_credential {
            anyhow::ensure!(
                secrecy::ExposeSecret::expose_secret(credential).len() >= min,
                "gateway_credential ({}) must be at least {min} bytes, the same value as the auth-service's",
                chataigne_common::config::env_var("gateway_credential")
            );
        }
        let positive = [
            ("max_body_bytes", self.max_body_bytes as u64),
            ("max_json_depth", self.max_json_depth as u64),
            ("tool_catalog_ttl_secs", self.tool_catalog_ttl_secs),
            ("deadlines.read_ms", self.deadlines.read_ms),
            ("deadlines.analytics_ms", self.deadlines.analytics_ms),
            ("deadlines.write_ms", self.deadlines.write_ms),
            ("deadlines.auth_ms", self.deadlines.auth_ms),
            ("deadlines.connect_ms", self.deadlines.connect_ms),
        ];
        for (name, value) in positive {
            if value == 0 {
                anyhow::bail!("{name} must be greater than zero");
            }
        }
        Ok(())
    }

    /// The `Strict-Transport-Security` of the public listener, when it
    /// applies: TLS served here, or the public URL (or an endpoint's) https.
    pub fn hsts(&self) -> Option<http::HeaderValue> {
        let https = self
            .public_url
            .iter()
            .chain(self.endpoints.iter().filter_map(|e| e.public_url.as_ref()))
            .any(|url| chataigne_common::hardening::is_https(url));
        chataigne_common::hardening::Hsts {
            include_subdomains: self.hsts_include_subdomains,
        }
        .header(self.tls.is_some() || https, "")
    }

    /// The TLS files the gateway reads at start (`backend_tls`): readable
    /// and usable; the error names the field and the path.
    pub fn validate_tls(&self) -> anyhow::Result<()> {
        if let Some(tls) = &self.backend_tls {
            tls.validate("backend_tls")?;
        }
        Ok(())
    }

    fn validate_endpoints(&self) -> anyhow::Result<()> {
        if self.endpoints.is_empty() {
            anyhow::bail!("endpoints: at least one endpoint is required");
        }
        let mut seen: Vec<(&str, Option<&str>)> = Vec::new();
        for endpoint in &self.endpoints {
            let path = endpoint.path.as_str();
            let valid_path = path.starts_with('/')
                && path.len() > 1
                && !path.ends_with('/')
                && !path.starts_with("/.well-known")
                && path
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"/-_.~".contains(&b));
            if !valid_path {
                anyhow::bail!("endpoints: invalid path {path:?}");
            }
            if let Some(url) = &endpoint.public_url {
                check_origin("endpoints.public_url", url)?;
            }
            let keys: Vec<Option<&str>> = if endpoint.hosts.is_empty() {
                vec![None]
            } else {
                endpoint.hosts.iter().map(|h| Some(h.as_str())).collect()
            };
            for host in keys {
                if host.is_some_and(|h| h.is_empty() || h.contains(['/', ' ', ':'])) {
                    anyhow::bail!("endpoints: invalid host {host:?} for {path}");
                }
                let normalized = host.map(str::trim);
                if seen.iter().any(|(p, h)| {
                    *p == path
                        && match (h, normalized) {
                            (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
                            (None, None) => true,
                            _ => false,
                        }
                }) {
                    anyhow::bail!("endpoints: {path} is declared twice for the same host");
                }
                seen.push((path, normalized));
            }
        }
        Ok(())
    }
}

/// `scheme://host[:port]`, nothing else.
fn check_origin(name: &str, value: &str) -> anyhow::Result<()> {
    let uri: http::Uri = value
        .parse()
        .map_err(|_| anyhow::anyhow!("{name}: {value:?} is not a URL"))?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    let bare = uri.path() == "/" && uri.query().is_none();
    let no_userinfo = uri.authority().is_some_and(|a| !a.as_str().contains('@'));
    if !(scheme_ok && bare && no_userinfo) {
        anyhow::bail!("{name}: {value:?} must be scheme://host[:port]");
    }
    Ok(())
}

fn check_absolute_url(name: &str, value: &str) -> anyhow::Result<()> {
    let uri: http::Uri = value
        .parse()
        .map_err(|_| anyhow::anyhow!("{name}: {value:?} is not a URL"))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) || uri.authority().is_none() {
        anyhow::bail!("{name}: {value:?} must be an http(s) URL");
    }
    Ok(())
}

/// Accepts a list or, from an environment variable, a comma-separated string.
fn list_or_comma_separated<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: std::fmt::Display,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Either {
        List(Vec<String>),
        Text(String),
    }
    let items: Vec<String> = match Either::deserialize(deserializer)? {
        Either::List(list) => list,
        Either::Text(text) => text.split(',').map(str::to_owned).collect(),
    };
    items
        .iter()
        .map(|item| item.trim())
        .filter(|item| !item.is_empty())
        .map(|item| {
            item.parse()
                .map_err(|error| serde::de::Error::custom(format!("{item:?}: {error}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_serve_both_revisions() {
        let config = Config::default();
        let paths: Vec<(&str, Revision)> = config
            .endpoints
            .iter()
            .map(|e| (e.path.as_str(), e.revision))
            .collect();
        assert_eq!(
            paths,
            [
                ("/mcp/v1", Revision::V2025_11_25),
                ("/mcp/v2", Revision::V2026_07_28)
            ]
        );
        Config::default().validate().unwrap();
    }

    #[test]
    fn a_second_path_and_a_host_profile_can_be_added() {
        let mut config = Config::default();
        config.endpoints.push(EndpointConfig {
            path: "/mcp/v1".into(),
            profile: Profile::Google,
            hosts: vec!["gemini.mcp.example.com".into()],
            public_url: Some("https://gemini.mcp.example.com".into()),
            ..EndpointConfig::default()
        });
        config.endpoints.push(EndpointConfig {
            path: "/mcp/v3".into(),
            ..EndpointConfig::default()
        });
        config.validate().unwrap();
        config.endpoints.push(EndpointConfig::default());
        assert!(config.validate().is_err(), "duplicate catch-all endpoint");
    }

    #[test]
    fn bad_values_are_refused() {
        let bad = [
            Config {
                public_url: Some("https://example.com/mcp".into()),
                ..Config::default()
            },
            Config {
                allowed_origins: vec!["example.com".into()],
                ..Config::default()
            },
            Config {
                max_json_depth: 0,
                ..Config::default()
            },
            Config {
                endpoints: vec![EndpointConfig {
                    path: "/.well-known/x".into(),
                    ..EndpointConfig::default()
                }],
                ..Config::default()
            },
        ];
        for config in bad {
            assert!(config.validate().is_err(), "{config:?}");
        }
    }

    #[test]
    fn plain_http_public_urls_outside_loopback_need_insecure_development() {
        type Adjust = fn(&mut Config);
        let cases: [(Adjust, &str); 3] = [
            (
                |c| c.public_url = Some("http://mcp.example".into()),
                "CHATAIGNE_PUBLIC_URL",
            ),
            (
                |c| c.authorization_server = Some("http://auth.example".into()),
                "CHATAIGNE_AUTHORIZATION_SERVER",
            ),
            (
                |c| c.endpoints[0].public_url = Some("http://gemini.mcp.example".into()),
                "CHATAIGNE_ENDPOINTS__PUBLIC_URL",
            ),
        ];
        for (adjust, variable) in cases {
            let mut config = Config::default();
            adjust(&mut config);
            let error = config.validate().unwrap_err().to_string();
            assert!(
                error.contains(variable) && error.contains("CHATAIGNE_ALLOW_INSECURE_DEVELOPMENT"),
                "{error}"
            );
            config.allow_insecure_development = true;
            assert!(config.validate().is_ok(), "{variable}");
        }
        let loopback = Config {
            public_url: Some("http://127.0.0.1:8080".into()),
            authorization_server: Some("http://localhost:8081".into()),
            ..Config::default()
        };
        assert!(loopback.validate().is_ok());
        assert_eq!(loopback.hsts(), None);
        let https = Config {
            public_url: Some("https://mcp.example".into()),
            ..Config::default()
        };
        assert!(https.validate().is_ok());
        assert_eq!(https.hsts().unwrap(), "max-age=31536000");
    }

    #[test]
    fn the_allowlist_defaults_to_the_platform_egress_blocks() {
        let allowlist = Config::default().allowlist;
        assert!(allowlist.enabled);
        assert_eq!(allowlist.cidrs.len(), GOOGLE_EGRESS_CIDRS.len());
        assert!(
            allowlist
                .cidrs
                .contains(&"136.121.40.0/21".parse().unwrap())
        );
        assert!(allowlist.trusted_proxies.is_empty());
        assert!(!allowlist.proxy_protocol);
        let loopback = Allowlist::loopback();
        assert!(loopback.enabled);
        assert_eq!(loopback.cidrs.len(), 2);
    }

    #[test]
    fn the_allowlist_loads_from_variables_and_is_validated() {
        let env = vec![
            (
                "CHATAIGNE_ALLOWLIST__CIDRS".to_owned(),
                "10.0.0.0/8, 2001:db8::/32".to_owned(),
            ),
            (
                "CHATAIGNE_ALLOWLIST__TRUSTED_PROXIES".to_owned(),
                "192.168.1.10/32".to_owned(),
            ),
            (
                "CHATAIGNE_ALLOWLIST__PROXY_PROTOCOL".to_owned(),
                "true".to_owned(),
            ),
        ];
        let config: Config =
            chataigne_common::config::load_from_env(&Config::default(), None, env).unwrap();
        assert_eq!(
            config.allowlist.cidrs,
            vec![
                "10.0.0.0/8".parse::<IpNet>().unwrap(),
                "2001:db8::/32".parse().unwrap()
            ]
        );
        assert_eq!(config.allowlist.trusted_proxies.len(), 1);
        assert!(config.allowlist.proxy_protocol);
        config.validate().unwrap();

        let env = vec![(
            "CHATAIGNE_ALLOWLIST__CIDRS".to_owned(),
            "10.0.0.0/33".to_owned(),
        )];
        assert!(
            chataigne_common::config::load_from_env(&Config::default(), None, env).is_err(),
            "an invalid CIDR is refused at load"
        );
        for bad in [
            Allowlist {
                cidrs: Vec::new(),
                ..Allowlist::default()
            },
            Allowlist {
                proxy_protocol: true,
                ..Allowlist::default()
            },
        ] {
            let config = Config {
                allowlist: bad,
                ..Config::default()
            };
            assert!(config.validate().is_err(), "{:?}", config.allowlist);
        }
        let off = Config {
            allowlist: Allowlist {
                enabled: false,
                cidrs: Vec::new(),
                ..Allowlist::default()
            },
            ..Config::default()
        };
        off.validate().unwrap();
    }

    #[test]
    fn an_endpoint_names_its_revision_and_defaults_to_2025_11_25() {
        let named: EndpointConfig = serde_json::from_value(
            serde_json::json!({"path": "/mcp/v2", "revision": "2025-11-25"}),
        )
        .unwrap();
        assert_eq!(named.revision, Revision::V2025_11_25);
        let unnamed: EndpointConfig =
            serde_json::from_value(serde_json::json!({"path": "/mcp/v2"})).unwrap();
        assert_eq!(unnamed.revision, Revision::V2025_11_25);
        assert!(
            serde_json::from_value::<EndpointConfig>(serde_json::json!({"revision": "2099-01-01"}))
                .is_err(),
            "a revision the gateway does not implement is refused at load"
        );
    }

    #[test]
    fn origins_load_from_a_comma_separated_variable() {
        let env = vec![(
            "CHATAIGNE_ALLOWED_ORIGINS".to_owned(),
            "https://a.example, https://b.example".to_owned(),
        )];
        let config: Config =
            chataigne_common::config::load_from_env(&Config::default(), None, env).unwrap();
        assert_eq!(
            config.allowed_origins,
            vec!["https://a.example", "https://b.example"]
        );
        config.validate().unwrap();
    }
}
