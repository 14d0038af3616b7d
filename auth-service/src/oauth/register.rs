//! RFC 7591 dynamic client registration (off unless configured): public
//! clients only, with validated redirect URIs and a generated client id.

use serde::Deserialize;

use crate::error::{AuthError, OAuthCode};
use crate::model::now_ms;
use crate::store::oauth::{ClientKind, ClientRecord};

use super::client_metadata::valid_redirect_uri;
use super::{OAuthServer, secrets};

/// The registration request fields this server reads.
#[derive(Debug, Default, Deserialize)]
pub struct RegistrationRequest {
    #[serde(default)]
    pub redirect_uris: Vec<String>,
    pub client_name: Option<String>,
    pub token_endpoint_auth_method: Option<String>,
    #[serde(default)]
    pub grant_types: Vec<String>,
    #[serde(default)]
    pub response_types: Vec<String>,
}

impl OAuthServer {
    /// Registers a public client; returns the stored record.
    pub async fn register(&self, request: RegistrationRequest) -> Result<ClientRecord, AuthError> {
        if !self.config.dynamic_registration {
            return Err(AuthError::NotFound {
                what: "registration endpoint",
            });
        }
        let bad =
            |description: &str| AuthError::oauth(OAuthCode::InvalidClientMetadata, description);
        if request.redirect_uris.is_empty()
            || request.redirect_uris.len() > 10
            || request
                .redirect_uris
                .iter()
                .any(|uri| !valid_redirect_uri(uri))
        {
            return Err(AuthError::oauth(
                OAuthCode::InvalidRedirectUri,
                "redirect_uris must be 1 to 10 https URLs (http only on loopback), without fragment",
            ));
        }
        if !matches!(
            request.token_endpoint_auth_method.as_deref(),
            None | Some("none")
        ) {
            return Err(bad(
                "only public clients (token_endpoint_auth_method none) may register",
            ));
        }
        if request
            .grant_types
            .iter()
            .any(|g| g != "authorization_code" && g != "refresh_token")
        {
            return Err(bad(
                "grant_types may only be authorization_code and refresh_token",
            ));
        }
        if request.response_types.iter().any(|r| r != "code") {
            return Err(bad("response_types may only be code"));
        }
        let name = request
            .client_name
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| "Unnamed client".to_owned());
        let client = ClientRecord {
            client_id: format!("dyn_{}", &secrets::generate()?[..22]),
            name: name.chars().take(200).collect(),
            enabled: true,
            redirect_uris: request.redirect_uris,
            kind: ClientKind::Public,
            secret_hash: None,
            allowed_scopes: String::new(),
            service_user_id: None,
            origin: "dynamic".to_owned(),
        };
        self.core.store().upsert_client(&client, now_ms()).await?;
        Ok(client)
    }
}
