//! Which client is asking: registered and dynamically registered clients from
//! the store, Client ID Metadata Documents for `https://` client ids, redirect
//! URI matching, and client authentication at the token endpoint.

use crate::error::{AuthError, OAuthCode};
use crate::store::oauth::{ClientKind, ClientRecord};

use super::{OAuthServer, client_metadata, secrets};

/// Longest client id accepted (metadata document URLs included).
const MAX_CLIENT_ID_LEN: usize = 2048;

/// The client credentials presented at the token or revocation endpoint.
#[derive(Clone, Default)]
pub struct ClientCredentials {
    pub client_id: String,
    pub secret: Option<String>,
}

impl std::fmt::Debug for ClientCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("client_id", &self.client_id)
            .field("secret", &self.secret.as_ref().map(|_| "[redacted]"))
            .finish()
    }
}

fn invalid_client(description: &str) -> AuthError {
    AuthError::oauth(OAuthCode::InvalidClient, description)
}

impl OAuthServer {
    /// The enabled client named `client_id`: from the store, or fetched from
    /// its metadata document (and recorded) when the id is such a URL.
    pub async fn resolve_client(&self, client_id: &str) -> Result<ClientRecord, AuthError> {
        if client_id.is_empty()
            || client_id.len() > MAX_CLIENT_ID_LEN
            || client_id.chars().any(char::is_control)
        {
            return Err(invalid_client("unknown client"));
        }
        let store = self.core.store();
        let stored = store.client(client_id).await?;
        let is_document = client_metadata::is_document_url(client_id, &self.config);
        let client = match stored {
            Some(client) if client.origin != "metadata" || self.metadata.is_fresh(client_id) => {
                client
            }
            Some(_) | None if is_document => {
                let fetched = self.metadata.fetch(client_id).await?;
                store
                    .upsert_client(&fetched, crate::model::now_ms())
                    .await?;
                store
                    .client(client_id)
                    .await?
                    .ok_or_else(|| invalid_client("unknown client"))?
            }
            _ => return Err(self.not_a_client(client_id)),
        };
        if !client.enabled {
            return Err(invalid_client("the client is disabled"));
        }
        Ok(client)
    }

    /// Why `client_id` names no client here: the real reason when it is a
    /// URL this server does not take as a metadata document.
    fn not_a_client(&self, client_id: &str) -> AuthError {
        let Ok(url) = url::Url::parse(client_id) else {
            return invalid_client("unknown client: this client_id is not registered here");
        };
        let description = if !self.config.client_metadata_documents {
            "this authorization server does not accept client ID metadata documents: \
             register the client instead"
        } else if url.scheme() == "http" && crate::config::is_loopback_http(client_id) {
            "the client ID metadata document is an http:// URL on loopback, which this \
             authorization server accepts only in development: use https"
        } else if url.scheme() != "https" {
            "a client ID metadata document must be an https:// URL"
        } else {
            "the client_id is not a valid client ID metadata document URL \
             (https, with a path, no fragment or user info)"
        };
        invalid_client(description)
    }

    /// Authenticates the client at the token endpoint: confidential and
    /// service clients by secret (constant-time hash comparison), public
    /// clients by id alone (PKCE protects their codes).
    pub async fn authenticate_client(
        &self,
        credentials: &ClientCredentials,
    ) -> Result<ClientRecord, AuthError> {
        let client = self.resolve_client(&credentials.client_id).await?;
        match (&client.secret_hash, &credentials.secret) {
            (Some(stored), Some(secret)) if secrets::matches_hash(secret, stored) => Ok(client),
            (Some(_), _) => Err(invalid_client("client authentication failed")),
            (None, Some(_)) => Err(invalid_client(
                "this client is public: it has no secret to present",
            )),
            (None, None) if client.kind == ClientKind::Public => Ok(client),
            (None, None) => Err(invalid_client("client authentication failed")),
        }
    }
}

/// Whether `requested` is one of the client's redirect URIs: the exact
/// string, except that a registered loopback IP URI without port
/// (`http://127.0.0.1/…`, `http://[::1]/…`) matches the same string with a
/// port inserted after the host (RFC 8252 §7.3, native apps). Nothing is
/// parsed or normalised: surrounding spaces, `http:/`, another case, another
/// spelling of the address or the path are other strings, refused.
pub fn redirect_uri_allowed(client: &ClientRecord, requested: &str) -> bool {
    client
        .redirect_uris
        .iter()
        .any(|registered| registered == requested || loopback_any_port(registered, requested))
}

/// Whether `requested` is an `http://` loopback redirect URI (`127.0.0.1`,
/// `[::1]` or `localhost`, any port) with a path, written as the URL parser
/// writes it (no other spelling, no user info, no fragment); with
/// `any_path` false, its path must be `/callback`. The demo client's rule:
/// any port everywhere (RFC 8252 §7.3), any path in embedded mode.
pub fn demo_loopback_redirect(requested: &str, any_path: bool) -> bool {
    let Ok(url) = url::Url::parse(requested) else {
        return false;
    };
    let loopback_host = matches!(
        url.host(),
        Some(url::Host::Ipv4(ip)) if ip == std::net::Ipv4Addr::LOCALHOST
    ) || matches!(url.host(), Some(url::Host::Ipv6(ip)) if ip.is_loopback())
        || url.host_str() == Some("localhost");
    url.as_str() == requested
        && url.scheme() == "http"
        && loopback_host
        && url.username().is_empty()
        && url.password().is_none()
        && url.fragment().is_none()
        && url.port() != Some(0)
        && (any_path || (url.path() == "/callback" && url.query().is_none()))
}

/// `requested` is `registered` (a loopback IP URI without port) with
/// `:<port>` after the host: 1 to 65535 in digits, no leading zero.
fn loopback_any_port(registered: &str, requested: &str) -> bool {
    let Some(rest) = registered.strip_prefix("http://") else {
        return false;
    };
    let host_len = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (host, tail) = rest.split_at(host_len);
    let loopback_ip = host
        .parse::<std::net::Ipv4Addr>()
        .is_ok_and(|ip| ip.is_loopback())
        || host
            .strip_prefix('[')
            .and_then(|inner| inner.strip_suffix(']'))
            .and_then(|inner| inner.parse::<std::net::Ipv6Addr>().ok())
            .is_some_and(|ip| ip.is_loopback());
    if !loopback_ip {
        return false;
    }
    let Some(after_host) = requested
        .strip_prefix("http://")
        .and_then(|rest| rest.strip_prefix(host))
        .and_then(|rest| rest.strip_prefix(':'))
    else {
        return false;
    };
    let digits = after_host
        .bytes()
        .take_while(|byte| byte.is_ascii_digit())
        .count();
    let (port, requested_tail) = after_host.split_at(digits);
    !port.starts_with('0')
        && port.parse::<u16>().is_ok_and(|port| port > 0)
        && requested_tail == tail
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(uris: &[&str]) -> ClientRecord {
        ClientRecord {
            client_id: "c".into(),
            name: "c".into(),
            enabled: true,
            redirect_uris: uris.iter().map(|u| (*u).to_owned()).collect(),
            kind: ClientKind::Public,
            secret_hash: None,
            allowed_scopes: String::new(),
            service_user_id: None,
            origin: "registered".into(),
        }
    }

    #[test]
    fn the_demo_rule_takes_any_loopback_port_and_in_embedded_mode_any_path() {
        for uri in [
            "http://localhost:6274/callback",
            "http://127.0.0.1:33418/callback",
            "http://[::1]:5000/callback",
        ] {
            assert!(demo_loopback_redirect(uri, false), "{uri}");
        }
        assert!(!demo_loopback_redirect(
            "http://localhost:6274/oauth/callback",
            false
        ));
        assert!(demo_loopback_redirect(
            "http://localhost:6274/oauth/callback",
            true
        ));
        assert!(demo_loopback_redirect("http://127.0.0.1:9/cb?x=1", true));
        for refused in [
            "https://localhost:6274/callback",
            "http://evil.example:6274/callback",
            "http://localhost.evil.example/callback",
            "http://127.0.0.2:1/callback",
            "http://user@localhost:1/callback",
            "http://localhost:1/callback#f",
            "http://LOCALHOST:1/callback",
            "http://localhost:1/./callback",
            "http://localhost:0/callback",
            "http://127.1:5000/callback",
            " http://localhost:1/callback",
            "http://localhost:80/callback",
        ] {
            assert!(!demo_loopback_redirect(refused, true), "{refused}");
        }
    }

    #[test]
    fn redirect_uris_match_exactly() {
        let c = client(&["https://app.example/cb"]);
        assert!(redirect_uri_allowed(&c, "https://app.example/cb"));
        for other in [
            "https://app.example/cb/",
            "https://app.example/cb?x=1",
            "https://app.example/cb#f",
            "https://app.example:444/cb",
            "https://APP.example/cb",
            "https://evil.example/cb",
            "http://app.example/cb",
        ] {
            assert!(!redirect_uri_allowed(&c, other), "{other}");
        }
    }

    #[test]
    fn loopback_ip_uris_accept_any_port_only() {
        let c = client(&["http://127.0.0.1/callback", "http://[::1]/cb"]);
        assert!(redirect_uri_allowed(&c, "http://127.0.0.1:33418/callback"));
        assert!(redirect_uri_allowed(&c, "http://[::1]:5000/cb"));
        for other in [
            "http://127.0.0.1:33418/other",
            "http://localhost:33418/callback",
            "http://127.0.0.1:33418/callback?x=1",
            "http://user@127.0.0.1:1/callback",
            "https://127.0.0.1:33418/callback",
        ] {
            assert!(!redirect_uri_allowed(&c, other), "{other}");
        }
    }

    #[test]
    fn uris_that_merely_parse_to_a_registered_one_are_refused() {
        let c = client(&[
            "http://127.0.0.1/callback",
            "http://[::1]/cb",
            "https://app.example/cb",
        ]);
        for trick in [
            " http://127.0.0.1:5000/callback",
            "http://127.0.0.1:5000/callback ",
            "http://127.0.0.1:5000/callback\t",
            "http:/127.0.0.1:5000/callback",
            "http:127.0.0.1:5000/callback",
            "HTTP://127.0.0.1:5000/callback",
            "http://127.0.0.1:5000/Callback",
            "http://127.0.0.1:5000/./callback",
            "http://127.0.0.1:5000/%63allback",
            "http://127.0.0.1:5000//callback",
            "http://127.1:5000/callback",
            "http://0x7f.0.0.1:5000/callback",
            "http://127.000.000.001:5000/callback",
            "http://127.0.0.1:05000/callback",
            "http://127.0.0.1:0/callback",
            "http://127.0.0.1:65536/callback",
            "http://127.0.0.1:/callback",
            "http://127.0.0.1:5000:6000/callback",
            "http://[0:0:0:0:0:0:0:1]:5000/cb",
            "http://[::1]:5000/cb#f",
            " https://app.example/cb",
            "https://app.example/cb ",
            "https:/app.example/cb",
            "https://app.example./cb",
            "https://app.example:443/cb",
            "HTTPS://app.example/cb",
        ] {
            assert!(!redirect_uri_allowed(&c, trick), "{trick:?}");
        }
        assert!(redirect_uri_allowed(&c, "http://127.0.0.1:65535/callback"));
        assert!(redirect_uri_allowed(&c, "http://[::1]:1/cb"));
    }
}
