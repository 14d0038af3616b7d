//! Client ID Metadata Documents: a client id that is an `https://` URL names a
//! JSON document describing the client. It is fetched with a short timeout and
//! a size bound, checked (its `client_id` equals the URL, redirect URIs are
//! absolute http(s) URLs, the client is public), and reused for a while.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

fn refused(description: &str) -> AuthError {
    AuthError::oauth(OAuthCode::InvalidClient, description)
}

impl MetadataFetcher {
    pub fn new(config: &OAuthConfig) -> MetadataFetcher {
        // The process's one TLS provider (aws-lc-rs, as everywhere else); a
        // provider installed earlier by the host process is kept.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let http = reqwest::Client::builder()
            .https_only(!config.client_metadata_allow_http_loopback)
            .timeout(FETCH_TIMEOUT)
            .connect_timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| tracing::warn!(%error, "metadata document client unavailable"))
            .ok();
        MetadataFetcher {
            http,
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
            .ok_or_else(|| refused("client metadata documents are unavailable"))?;
        let mut response = http
            .get(client_id)
            .header("accept", "application/json")
            .send()
            .await
            .map_err(|_| refused("the client metadata document could not be fetched"))?;
        if !response.status().is_success() {
            return Err(refused("the client metadata document could not be fetched"));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|_| refused("the client metadata document could not be fetched"))?
        {
            if body.len() + chunk.len() > MAX_DOCUMENT_BYTES {
                return Err(refused("the client metadata document is too large"));
            }
            body.extend_from_slice(&chunk);
        }
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

/// Validates a fetched document for `client_id`.
fn parse(client_id: &str, body: &[u8]) -> Result<ClientRecord, AuthError> {
    let document: Document = serde_json::from_slice(body)
        .map_err(|_| refused("the client metadata document is not valid"))?;
    if document.client_id != client_id {
        return Err(refused(
            "the client metadata document names another client_id",
        ));
    }
    if !matches!(
        document.token_endpoint_auth_method.as_deref(),
        None | Some("none")
    ) {
        return Err(refused(
            "client metadata document clients must be public (token_endpoint_auth_method none)",
        ));
    }
    if document.redirect_uris.is_empty()
        || document.redirect_uris.len() > 10
        || document
            .redirect_uris
            .iter()
            .any(|uri| !valid_redirect_uri(uri))
    {
        return Err(refused(
            "the client metadata document needs absolute http(s) redirect_uris without fragment",
        ));
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
