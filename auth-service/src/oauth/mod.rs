//! The OAuth 2.1 authorization server, independent of HTTP: authorization
//! requests and codes (PKCE S256, RFC 8707 resources), sign-in and consent,
//! the token endpoint grants (authorization code, rotating refresh tokens,
//! client credentials for service accounts), revocation, client resolution
//! (registered clients, Client ID Metadata Documents, dynamic registration).

mod account;
mod authorize;
mod cleanup;
mod client_metadata;
mod clients;
mod grants;
pub mod login;
pub mod password;
mod register;
pub mod secrets;

use std::sync::Arc;

use crate::config::OAuthConfig;
use crate::core::Core;

pub use account::Account;
pub use authorize::{AuthorizationRequest, ValidatedRequest};
pub use client_metadata::MetadataFetcher;
pub use clients::ClientCredentials;
pub use grants::TokenRequest;
pub use register::RegistrationRequest;

/// The authorization server over the shared core (store and keys).
pub struct OAuthServer {
    core: Arc<Core>,
    config: OAuthConfig,
    access_token_ttl_secs: i64,
    session_ttl_secs: i64,
    metadata: MetadataFetcher,
}

impl OAuthServer {
    pub fn new(
        core: Arc<Core>,
        config: OAuthConfig,
        access_token_ttl_secs: u64,
        session_ttl_secs: u64,
    ) -> OAuthServer {
        let metadata = MetadataFetcher::new(&config);
        OAuthServer {
            core,
            config,
            access_token_ttl_secs: i64::try_from(access_token_ttl_secs).unwrap_or(900),
            session_ttl_secs: i64::try_from(session_ttl_secs).unwrap_or(86_400),
            metadata,
        }
    }

    pub fn config(&self) -> &OAuthConfig {
        &self.config
    }

    pub fn issuer(&self) -> &str {
        self.core.tokens().issuer()
    }

    pub fn core(&self) -> &Core {
        &self.core
    }
}

/// Deduplicated, space-joined scopes.
fn join_scopes<'a>(scopes: impl IntoIterator<Item = &'a str>) -> String {
    let mut joined: Vec<&str> = Vec::new();
    for scope in scopes {
        if !joined.contains(&scope) {
            joined.push(scope);
        }
    }
    joined.join(" ")
}
