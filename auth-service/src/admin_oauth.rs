//! The management API of the authorization server (admin CLI, launcher,
//! tests): register clients and service accounts, rotate and retire signing
//! keys, set passwords, apply migrations.

use crate::app::AuthApp;
use crate::config::DatabaseConfig;
use crate::error::AuthError;
use crate::model::{now_ms, split_scopes};
use crate::oauth::{password, secrets};
use crate::store::NewUser;
use crate::store::oauth::{ClientKind, ClientRecord, KeyInfo};

/// A client to register.
#[derive(Debug, Clone)]
pub struct NewClientRequest {
    pub client_id: String,
    pub name: String,
    pub kind: ClientKind,
    pub redirect_uris: Vec<String>,
    /// Service accounts: the scopes they may request.
    pub allowed_scopes: Vec<String>,
}

/// A registered client; the secret is shown once and stored only hashed.
#[derive(Clone)]
pub struct RegisteredClient {
    pub client_id: String,
    pub secret: Option<String>,
    /// Service accounts: the user whose memberships they act with.
    pub service_user_id: Option<String>,
}

impl std::fmt::Debug for RegisteredClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredClient")
            .field("client_id", &self.client_id)
            .field("service_user_id", &self.service_user_id)
            .finish_non_exhaustive()
    }
}

/// A password the auth-service accepts: 12 to 512 characters.
pub(crate) fn check_password(password: &str) -> Result<(), AuthError> {
    if password.chars().count() < 12 || password.len() > 512 {
        return Err(AuthError::invalid(
            "password",
            "must be 12 to 512 characters",
        ));
    }
    Ok(())
}

/// Applies the migrations of the database named by `config` and returns.
pub async fn migrate(config: &DatabaseConfig) -> anyhow::Result<()> {
    crate::store::connect(config).await.map(|_| ())
}

impl AuthApp {
    /// Registers (or replaces) a client. Confidential and service clients get
    /// a fresh secret; a service client gets its own service user, with a
    /// consent covering its allowed scopes (memberships are added separately).
    pub async fn add_client(
        &self,
        request: NewClientRequest,
    ) -> Result<RegisteredClient, AuthError> {
        if request.client_id.is_empty()
            || request.client_id.len() > 128
            || !request
                .client_id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            return Err(AuthError::invalid(
                "client_id",
                "must be 1 to 128 letters, digits, '-', '_' or '.'",
            ));
        }
        if request.name.is_empty() || request.name.len() > 200 {
            return Err(AuthError::invalid("name", "must be 1 to 200 characters"));
        }
        if request.redirect_uris.iter().any(|uri| {
            !(uri.starts_with("https://") || uri.starts_with("http://")) || uri.contains('#')
        }) {
            return Err(AuthError::invalid(
                "redirect_uris",
                "must be http(s) URLs without fragment",
            ));
        }
        let mut scopes: Vec<&str> = Vec::new();
        for scope in &request.allowed_scopes {
            for scope in split_scopes(scope) {
                if !chataigne_common::scopes::is_known(scope) {
                    return Err(AuthError::invalid(
                        "scopes",
                        format!("unknown scope {scope:?}"),
                    ));
                }
                if !scopes.contains(&scope) {
                    scopes.push(scope);
                }
            }
        }
        let allowed_scopes = scopes.join(" ");
        let secret = match request.kind {
            ClientKind::Public => None,
            ClientKind::Confidential | ClientKind::Service => Some(secrets::generate()?),
        };
        let store = self.core().store();
        let now = now_ms();
        let service_user_id = if request.kind == ClientKind::Service {
            let user = NewUser {
                id: format!("svc_{}", request.client_id),
                email: format!("{}@service.chataigne.invalid", request.client_id),
                display_name: request.name.clone(),
                status: "active".to_owned(),
                platform_admin: false,
            };
            store.insert_user(&user, now).await?;
            Some(user.id)
        } else {
            None
        };
        let record = ClientRecord {
            client_id: request.client_id.clone(),
            name: request.name,
            enabled: true,
            redirect_uris: request.redirect_uris,
            kind: request.kind,
            secret_hash: secret.as_deref().map(secrets::hash),
            allowed_scopes: allowed_scopes.clone(),
            service_user_id: service_user_id.clone(),
            origin: "registered".to_owned(),
        };
        store.upsert_client(&record, now).await?;
        if let Some(user_id) = &service_user_id {
            store
                .grant_consent(user_id, &record.client_id, &allowed_scopes, now)
                .await?;
        }
        Ok(RegisteredClient {
            client_id: record.client_id,
            secret,
            service_user_id,
        })
    }

    /// Every client.
    pub async fn clients(&self) -> Result<Vec<ClientRecord>, AuthError> {
        Ok(self.core().store().clients().await?)
    }

    /// Adds a signing key that signs from now on (here at once, on other
    /// replicas at their next reload); older keys keep verifying.
    pub async fn rotate_signing_key(&self) -> Result<String, AuthError> {
        let core = self.core();
        let kid = crate::keys::rotate(core.store(), core.key_protection())
            .await
            .map_err(|e| AuthError::Internal(e.to_string()))?;
        core.reload_keys()
            .await
            .map_err(|e| AuthError::Internal(e.to_string()))?;
        Ok(kid)
    }

    /// Stored signing keys, oldest first.
    pub async fn signing_keys(&self) -> Result<Vec<KeyInfo>, AuthError> {
        Ok(self.core().store().signing_keys_info().await?)
    }

    /// Retires a key: tokens signed with it stop verifying. The key that
    /// currently signs cannot be retired (rotate first).
    pub async fn retire_signing_key(&self, kid: &str) -> Result<(), AuthError> {
        self.core()
            .reload_keys()
            .await
            .map_err(|e| AuthError::Internal(e.to_string()))?;
        if self.core().tokens().keys().signing_kid() == kid {
            return Err(AuthError::invalid(
                "kid",
                "the current signing key cannot be retired; rotate first",
            ));
        }
        let store = self.core().store();
        if !store.retire_signing_key(kid, now_ms()).await? {
            return Err(AuthError::NotFound {
                what: "signing key",
            });
        }
        self.core()
            .reload_keys()
            .await
            .map_err(|e| AuthError::Internal(e.to_string()))
    }

    /// Sets a user's password (Argon2id).
    pub async fn set_user_password(
        &self,
        user_id: &str,
        new_password: &str,
    ) -> Result<(), AuthError> {
        check_password(new_password)?;
        let owned = new_password.to_owned();
        let hash = tokio::task::spawn_blocking(move || password::hash(&owned))
            .await
            .map_err(|_| AuthError::Internal("password hashing task failed".into()))??;
        if self
            .core()
            .store()
            .set_password_hash(user_id, &hash)
            .await?
        {
            Ok(())
        } else {
            Err(AuthError::NotFound { what: "user" })
        }
    }
}
