//! The public endpoints once the public URL is known: canonical resource URL,
//! origin and metadata URL of each, and the choice of endpoint by path and Host.

use std::sync::Arc;

use axum::extract::Request;
use http::header;

use crate::config::{EndpointConfig, Profile, Revision};

/// Prefix of the RFC 9728 protected-resource metadata documents.
pub const METADATA_PREFIX: &str = "/.well-known/oauth-protected-resource";

/// One public endpoint with every URL derived from it.
#[derive(Debug, Clone)]
pub struct Endpoint {
    pub path: String,
    pub profile: Profile,
    /// The MCP revision it speaks.
    pub revision: Revision,
    /// The protocol versions of that revision (telemetry labels).
    pub versions: &'static [&'static str],
    /// Lower-case hosts that select it; empty: the catch-all for its path.
    pub hosts: Vec<String>,
    /// `scheme://host[:port]`, no trailing slash.
    pub origin: String,
    /// Canonical URL: the token audience (RFC 8707 resource).
    pub resource: String,
    /// URL of its protected-resource metadata document.
    pub metadata_url: String,
}

/// Every endpoint, looked up by path and Host.
#[derive(Debug, Clone)]
pub struct Endpoints {
    all: Vec<Arc<Endpoint>>,
}

impl Endpoints {
    /// Derives the URLs of `configs`; `default_origin` stands for endpoints
    /// without their own public URL; `versions` gives the protocol versions
    /// each revision speaks.
    pub fn new(
        configs: &[EndpointConfig],
        default_origin: &str,
        versions: fn(Revision) -> &'static [&'static str],
    ) -> Endpoints {
        let all = configs
            .iter()
            .map(|config| {
                let origin = config
                    .public_url
                    .as_deref()
                    .unwrap_or(default_origin)
                    .trim_end_matches('/')
                    .to_owned();
                Arc::new(Endpoint {
                    path: config.path.clone(),
                    profile: config.profile,
                    revision: config.revision,
                    versions: versions(config.revision),
                    hosts: config
                        .hosts
                        .iter()
                        .map(|h| h.trim().to_ascii_lowercase())
                        .collect(),
                    resource: format!("{origin}{}", config.path),
                    metadata_url: format!("{origin}{METADATA_PREFIX}{}", config.path),
                    origin,
                })
            })
            .collect();
        Endpoints { all }
    }

    /// Distinct paths, in declaration order.
    pub fn paths(&self) -> Vec<String> {
        let mut paths: Vec<String> = Vec::new();
        for endpoint in &self.all {
            if !paths.contains(&endpoint.path) {
                paths.push(endpoint.path.clone());
            }
        }
        paths
    }

    /// `version` as one of the protocol versions some endpoint speaks (a
    /// bounded telemetry label), or `None`.
    pub fn known_version(&self, version: &str) -> Option<&'static str> {
        self.all
            .iter()
            .flat_map(|endpoint| endpoint.versions)
            .find(|known| **known == version)
            .copied()
    }

    /// The endpoint serving `path` for `host` (`Host` header, port ignored):
    /// one naming the host, else the path's catch-all.
    pub fn resolve(&self, path: &str, host: Option<&str>) -> Option<Arc<Endpoint>> {
        let host = host.map(strip_port).map(str::to_ascii_lowercase);
        let on_path = || self.all.iter().filter(|e| e.path == path);
        host.as_deref()
            .and_then(|host| on_path().find(|e| e.hosts.iter().any(|h| h == host)))
            .or_else(|| on_path().find(|e| e.hosts.is_empty()))
            .cloned()
    }

    /// The endpoint whose metadata lives at `path` under the well-known
    /// prefix; the bare prefix designates the first endpoint.
    pub fn resolve_metadata(&self, suffix: &str, host: Option<&str>) -> Option<Arc<Endpoint>> {
        if suffix.is_empty() || suffix == "/" {
            let first = self.all.first()?.path.clone();
            return self.resolve(&first, host);
        }
        self.resolve(suffix, host)
    }
}

/// The `Host` the client addressed (HTTP/2 authority or HTTP/1 Host header).
pub fn host(request: &Request) -> Option<String> {
    request
        .uri()
        .authority()
        .map(|a| a.as_str().to_owned())
        .or_else(|| {
            request
                .headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(str::to_owned)
        })
}

/// `example.com:443` → `example.com`; `[::1]:80` → `[::1]`.
fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host
            .split_once(']')
            .map_or(host, |(h, _)| &host[..=h.len()]);
    }
    host.rsplit_once(':').map_or(host, |(h, _)| h)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_selects_the_profile_and_the_catch_all_serves_the_rest() {
        let configs = vec![
            EndpointConfig::default(),
            EndpointConfig {
                profile: Profile::Google,
                hosts: vec!["Gemini.MCP.example.com".into()],
                public_url: Some("https://gemini.mcp.example.com".into()),
                ..EndpointConfig::default()
            },
        ];
        let endpoints = Endpoints::new(&configs, "https://mcp.example.com/", |_| &["2025-11-25"]);
        let google = endpoints
            .resolve("/mcp/v1", Some("gemini.mcp.example.com:443"))
            .unwrap();
        assert_eq!(google.profile, Profile::Google);
        assert_eq!(google.resource, "https://gemini.mcp.example.com/mcp/v1");
        let other = endpoints
            .resolve("/mcp/v1", Some("mcp.example.com"))
            .unwrap();
        assert_eq!(other.profile, Profile::Default);
        assert_eq!(
            other.metadata_url,
            "https://mcp.example.com/.well-known/oauth-protected-resource/mcp/v1"
        );
        assert!(endpoints.resolve("/mcp/v2", None).is_none());
        assert_eq!(strip_port("[::1]:8080"), "[::1]");
    }
}
