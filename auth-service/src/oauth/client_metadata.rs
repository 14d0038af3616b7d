//! Client ID Metadata Documents: a client id that is an `https://` URL names a
//! JSON document describing the client. It is fetched with a short timeout and
//! a size bound, checked (its `client_id` equals the URL, redirect URIs are
//! absolute http(s) URLs, the client is public), and reused for a while.
//!
//! The fetch reaches public addresses only: a host name is resolved first and
//! every address that is not public (loopback, private, link-local — the
//! cloud metadata endpoints —, shared, documentation, reserved, multicast,
//! NAT64 and 6to4 ranges) is dropped before connecting; a literal address is
//! checked the same way. Redirects are not followed, proxies from the
//! environment are not used, and every failure — unreachable, refused
//! address, status, size, time, content — gets one and the same error text,
//! so the endpoint tells nothing about what answered.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, Instant};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use serde::Deserialize;

use crate::config::{OAuthConfig, is_loopback_http};
use crate::error::{AuthError, OAuthCode};
use crate::store::oauth::{ClientKind, ClientRecord};

/// Bound on the document size.
const MAX_DOCUMENT_BYTES: usize = 16 * 1024;
/// Bound on the whole fetch.
const FETCH_TIMEOUT: Duration = Duration::from_secs(3);
/// Bound on the cache (distinct documents).
const MAX_CACHED: usize = 1_000;
/// The one answer to every failed fetch or check of a document.
const REFUSED: &str = "the client_id metadata document could not be used";

/// IPv4 ranges that are not public beyond what `Ipv4Addr`'s own predicates
/// say (private, loopback, link-local, broadcast, documentation, multicast,
/// unspecified).
static NON_PUBLIC_V4: LazyLock<Vec<Ipv4Net>> = LazyLock::new(|| {
    [
        "0.0.0.0/8",      // "this network"
        "100.64.0.0/10",  // shared address space (carrier-grade NAT)
        "192.0.0.0/24",   // IETF protocol assignments
        "192.88.99.0/24", // 6to4 relay anycast
        "198.18.0.0/15",  // benchmarking
        "240.0.0.0/4",    // reserved
    ]
    .iter()
    .filter_map(|net| net.parse().ok())
    .collect()
});

/// IPv6 ranges that are not public beyond `Ipv6Addr`'s own predicates
/// (loopback, unspecified, multicast, unique local, link-local).
static NON_PUBLIC_V6: LazyLock<Vec<Ipv6Net>> = LazyLock::new(|| {
    [
        "64:ff9b::/96",   // NAT64: reaches IPv4 addresses
        "64:ff9b:1::/48", // local-use NAT64
        "100::/64",       // discard
        "2001::/32",      // Teredo
        "2001:db8::/32",  // documentation
        "2002::/16",      // 6to4: reaches IPv4 addresses
        "fec0::/10",      // site-local (deprecated)
        "::/96",          // IPv4-compatible (deprecated)
    ]
    .iter()
    .filter_map(|net| net.parse().ok())
    .collect()
});

/// Whether `ip` is a public unicast address.
pub fn is_public(ip: IpAddr) -> bool {
    match ip.to_canonical() {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    !(ip.is_private()
        || ip.is_loopback()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_documentation()
        || ip.is_multicast()
        || ip.is_unspecified()
        || NON_PUBLIC_V4.iter().any(|net| net.contains(&ip)))
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || ip.is_unique_local()
        || ip.is_unicast_link_local()
        || NON_PUBLIC_V6.iter().any(|net| net.contains(&ip)))
}

/// Which addresses a document may be fetched from: public ones, plus the
/// networks explicitly allowed (development, tests).
#[derive(Debug, Clone, Default)]
pub struct AddressPolicy {
    allowed: Vec<IpNet>,
}

impl AddressPolicy {
    pub fn new(config: &OAuthConfig) -> AddressPolicy {
        let mut allowed: Vec<IpNet> = config
            .client_metadata_allowed_networks
            .iter()
            .map(IpNet::trunc)
            .collect();
        if config.client_metadata_allow_http_loopback {
            allowed.extend(
                ["127.0.0.0/8", "::1/128"]
                    .iter()
                    .filter_map(|n| n.parse::<IpNet>().ok()),
            );
        }
        AddressPolicy { allowed }
    }

    pub fn allows(&self, ip: IpAddr) -> bool {
        let ip = ip.to_canonical();
        is_public(ip) || self.allowed.iter().any(|net| net.contains(&ip))
    }
}

/// The DNS resolver of the fetch: the system's, keeping only the addresses
/// the policy allows (an empty answer fails the fetch before any connection).
struct CheckedResolver {
    policy: Arc<AddressPolicy>,
}

impl reqwest::dns::Resolve for CheckedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let policy = self.policy.clone();
        Box::pin(async move {
            let found = tokio::net::lookup_host((name.as_str(), 0)).await?;
            let allowed: Vec<SocketAddr> = found.filter(|addr| policy.allows(addr.ip())).collect();
            if allowed.is_empty() {
                return Err("no allowed address".into());
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// Whether `client_id` names a metadata document this server may fetch.
pub fn is_document_url(client_id: &str, config: &OAuthConfig) -> bool {
    if !config.client_metadata_documents {
        return false;
    }
    let Ok(url) = url::Url::parse(client_id) else {
        return false;
    };
    let scheme_ok = url.scheme() == "https"
        || (config.client_metadata_allow_http_loopback && is_loopback_http(client_id));
    scheme_ok
        && url.host().is_some()
        && url.path() != "/"
        && url.fragment().is_none()
        && url.username().is_empty()
        && url.password().is_none()
}

/// Fetches documents and remembers when each was last fetched.
pub struct MetadataFetcher {
    http: Option<reqwest::Client>,
    policy: Arc<AddressPolicy>,
    ttl: Duration,
    fetched: Mutex<HashMap<String, Instant>>,
}

#[derive(Deserialize)]
struct Document {
    client_id: String,
    #[serde(default)]
    client_name: Option<String>,
    redirect_uris: Vec<String>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// The refusal of a document, whatever went wrong (`reason` goes to the log only).
fn refused(reason: &'static str) -> AuthError {
    tracing::info!(reason, "client metadata document refused");
    AuthError::oauth(OAuthCode::InvalidClient, REFUSED)
}

impl MetadataFetcher {
    pub fn new(config: &OAuthConfig) -> MetadataFetcher {
        // The process's one TLS provider (aws-lc-rs, as everywhere else); a
        // provider installed earlier by the host process is kept.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let policy = Arc::new(AddressPolicy::new(config));
        let http = reqwest::Client::builder()
            .https_only(!config.client_metadata_allow_http_loopback)
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .dns_resolver(Arc::new(CheckedResolver {
                policy: policy.clone(),
            }))
            .build()
            .map_err(|error| tracing::warn!(%error, "metadata document client unavailable"))
            .ok();
        MetadataFetcher {
            http,
            policy,
            ttl: Duration::from_secs(config.client_metadata_cache_secs),
            fetched: Mutex::new(HashMap::new()),
        }
    }

    /// Whether the stored copy of `client_id`'s document is recent enough.
    pub fn is_fresh(&self, client_id: &str) -> bool {
        self.fetched
            .lock()
            .ok()
            .and_then(|fetched| fetched.get(client_id).copied())
            .is_some_and(|at| at.elapsed() < self.ttl)
    }

    /// Fetches and validates the document at `client_id`.
    pub async fn fetch(&self, client_id: &str) -> Result<ClientRecord, AuthError> {
        let http = self
            .http
            .as_ref()
            .ok_or_else(|| refused("no HTTP client"))?;
        let url = url::Url::parse(client_id).map_err(|_| refused("not a URL"))?;
        // A literal address is not resolved: check it here.
        let literal = match url.host() {
            Some(url::Host::Ipv4(ip)) => Some(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => Some(IpAddr::V6(ip)),
            _ => None,
        };
        if literal.is_some_and(|ip| !self.policy.allows(ip)) {
            return Err(refused("address not allowed"));
        }
        let body = tokio::time::timeout(FETCH_TIMEOUT, download(http, url))
            .await
            .map_err(|_| refused("timed out"))??;
        let record = parse(client_id, &body)?;
        if let Ok(mut fetched) = self.fetched.lock() {
            if fetched.len() >= MAX_CACHED {
                fetched.clear();
            }
            fetched.insert(client_id.to_owned(), Instant::now());
        }
        Ok(record)
    }
}

/// The body at `url`: a success status, at most [`MAX_DOCUMENT_BYTES`].
async fn download(http: &reqwest::Client, url: url::Url) -> Result<Vec<u8>, AuthError> {
    let mut response = http
        .get(url)
        .header("accept", "application/json")
        .send()
        .await
        .map_err(|_| refused("unreachable"))?;
    if !response.status().is_success() {
        return Err(refused("status"));
    }
    if response
        .content_length()
        .is_some_and(|length| length > MAX_DOCUMENT_BYTES as u64)
    {
        return Err(refused("too large"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|_| refused("body unreadable"))?
    {
        if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
            return Err(refused("too large"));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Validates a fetched document for `client_id`.
fn parse(client_id: &str, body: &[u8]) -> Result<ClientRecord, AuthError> {
    let document: Document = serde_json::from_slice(body).map_err(|_| refused("not a document"))?;
    if document.client_id != client_id {
        return Err(refused("another client_id"));
    }
    if !matches!(
        document.token_endpoint_auth_method.as_deref(),
        None | Some("none")
    ) {
        return Err(refused("not a public client"));
    }
    if document.redirect_uris.is_empty()
        || document.redirect_uris.len() > 10
        || document
            .redirect_uris
            .iter()
            .any(|uri| !valid_redirect_uri(uri))
    {
        return Err(refused("redirect_uris"));
    }
    let name = document
        .client_name
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| client_id.to_owned());
    Ok(ClientRecord {
        client_id: client_id.to_owned(),
        name: name.chars().take(200).collect(),
        enabled: true,
        redirect_uris: document.redirect_uris,
        kind: ClientKind::Public,
        secret_hash: None,
        allowed_scopes: String::new(),
        service_user_id: None,
        origin: "metadata".to_owned(),
    })
}

/// An absolute `https://` URL, or `http://` on loopback, without fragment.
pub fn valid_redirect_uri(uri: &str) -> bool {
    let Ok(url) = url::Url::parse(uri) else {
        return false;
    };
    uri.len() <= 2048
        && url.fragment().is_none()
        && url.host().is_some()
        && (url.scheme() == "https" || (url.scheme() == "http" && is_loopback_http(uri)))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "https://app.example/client.json";

    #[test]
    fn a_valid_document_becomes_a_public_client() {
        let body = br#"{"client_id":"https://app.example/client.json","client_name":"App",
            "redirect_uris":["https://app.example/cb","http://127.0.0.1:9/cb"]}"#;
        let client = parse(ID, body).unwrap();
        assert_eq!(client.kind, ClientKind::Public);
        assert_eq!(client.origin, "metadata");
        assert_eq!(client.redirect_uris.len(), 2);
    }

    #[test]
    fn mismatched_or_unsafe_documents_are_refused() {
        for body in [
            r#"{"client_id":"https://other.example/c.json","redirect_uris":["https://a.example/cb"]}"#,
            r#"{"client_id":"https://app.example/client.json","redirect_uris":[]}"#,
            r#"{"client_id":"https://app.example/client.json","redirect_uris":["http://evil.example/cb"]}"#,
            r#"{"client_id":"https://app.example/client.json","redirect_uris":["https://a.example/cb#x"]}"#,
            r#"{"client_id":"https://app.example/client.json","redirect_uris":["https://a.example/cb"],
                "token_endpoint_auth_method":"client_secret_basic"}"#,
            "not json",
        ] {
            assert!(parse(ID, body.as_bytes()).is_err(), "{body}");
        }
    }

    #[test]
    fn only_public_addresses_are_fetched_unless_allowed() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        for public in [
            "93.184.215.14",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.4.4",
        ] {
            assert!(is_public(ip(public)), "{public}");
        }
        for internal in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "198.18.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "192.0.2.1",
            "224.0.0.1",
            "::1",
            "::",
            "fd00:ec2::254",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "64:ff9b::a9fe:a9fe",
            "2002:7f00:1::",
            "2001:db8::1",
            "ff02::1",
        ] {
            assert!(!is_public(ip(internal)), "{internal}");
        }
        let default = AddressPolicy::new(&OAuthConfig::default());
        assert!(!default.allows(ip("127.0.0.1")));
        let tests = AddressPolicy::new(&OAuthConfig {
            client_metadata_allow_http_loopback: true,
            ..OAuthConfig::default()
        });
        assert!(tests.allows(ip("127.0.0.1")) && tests.allows(ip("::1")));
        assert!(!tests.allows(ip("10.0.0.1")));
        let development = AddressPolicy::new(&OAuthConfig {
            client_metadata_allowed_networks: vec!["10.0.0.0/8".parse().unwrap()],
            ..OAuthConfig::default()
        });
        assert!(development.allows(ip("10.9.8.7")));
        assert!(!development.allows(ip("192.168.0.1")));
    }

    #[test]
    fn every_refusal_has_the_same_text() {
        for body in [
            &b"not json"[..],
            br#"{"client_id":"x","redirect_uris":["https://a.example/cb"]}"#,
        ] {
            let Err(AuthError::OAuth { description, .. }) = parse(ID, body) else {
                panic!("refused");
            };
            assert_eq!(description, REFUSED);
        }
    }

    #[test]
    fn only_https_urls_with_a_path_are_documents() {
        let config = OAuthConfig::default();
        assert!(is_document_url(ID, &config));
        assert!(!is_document_url("https://app.example/", &config));
        assert!(!is_document_url("http://127.0.0.1:8/c.json", &config));
        assert!(!is_document_url("chataigne-demo-assistant", &config));
        let tests = OAuthConfig {
            client_metadata_allow_http_loopback: true,
            ..OAuthConfig::default()
        };
        assert!(is_document_url("http://127.0.0.1:8/c.json", &tests));
        assert!(!is_document_url("http://app.example/c.json", &tests));
        let off = OAuthConfig {
            client_metadata_documents: false,
            ..OAuthConfig::default()
        };
        assert!(!is_document_url(ID, &off));
    }
}
