//! The management API of the auth-service (embedded launcher, tests, admin
//! tooling): issue tokens and change the live state that every call re-reads.

use std::time::Duration;

use crate::app::AuthApp;
use crate::error::AuthError;
use crate::model::{UserStatus, now_ms, split_scopes};
use crate::store::{ClientConsent, NewClient, NewMembership, NewSession};
use crate::tokens::{Claims, TokenKind};

const MAX_ID_LEN: usize = 128;

/// What [`AuthApp::issue_access_token`] needs.
#[derive(Debug, Clone)]
pub struct IssueTokenRequest {
    pub user_id: String,
    pub client_id: String,
    pub scopes: Vec<String>,
    /// Canonical URL of the protected resource: the token's audience.
    pub resource: String,
    /// Defaults to `access_token_ttl_secs`.
    pub ttl: Option<Duration>,
}

/// A freshly issued access token.
#[derive(Clone)]
pub struct IssuedToken {
    pub access_token: String,
    pub session_id: String,
    /// Unix seconds.
    pub expires_at: i64,
}

impl std::fmt::Debug for IssuedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedToken")
            .field("access_token", &"[redacted]")
            .field("session_id", &self.session_id)
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

fn check_id(field: &'static str, value: &str) -> Result<(), AuthError> {
    if value.is_empty() || value.len() > MAX_ID_LEN || value.chars().any(char::is_control) {
        return Err(AuthError::invalid(
            field,
            format!("must be 1 to {MAX_ID_LEN} printable characters"),
        ));
    }
    Ok(())
}

fn check_scopes<S: AsRef<str>>(scopes: &[S]) -> Result<String, AuthError> {
    let mut joined: Vec<&str> = Vec::new();
    for scope in scopes {
        let scope = scope.as_ref();
        if !chataigne_common::scopes::is_known(scope) {
            return Err(AuthError::invalid(
                "scopes",
                format!("unknown scope {scope:?}"),
            ));
        }
        if !joined.contains(&scope) {
            joined.push(scope);
        }
    }
    Ok(joined.join(" "))
}

fn found(matched: bool, what: &'static str) -> Result<(), AuthError> {
    if matched {
        Ok(())
    } else {
        Err(AuthError::NotFound { what })
    }
}

impl AuthApp {
    /// Creates a live session and a consent for (user, client) covering the
    /// scopes (added to any current consent), then signs an access token.
    pub async fn issue_access_token(
        &self,
        request: IssueTokenRequest,
    ) -> Result<IssuedToken, AuthError> {
        check_id("user_id", &request.user_id)?;
        check_id("client_id", &request.client_id)?;
        if request.resource.is_empty() || request.resource.len() > 2048 {
            return Err(AuthError::invalid(
                "resource",
                "must be the protected resource URL",
            ));
        }
        let scope = check_scopes(&request.scopes)?;
        let store = self.core().store();
        found(store.user_exists(&request.user_id).await?, "user")?;
        found(store.client_exists(&request.client_id).await?, "client")?;

        let ttl = request
            .ttl
            .unwrap_or(Duration::from_secs(self.config().access_token_ttl_secs));
        let ttl_secs = i64::try_from(ttl.as_secs()).unwrap_or(i64::MAX / 2_000);
        let now = now_ms();
        let iat = now / 1000;
        let exp = iat.saturating_add(ttl_secs);
        let session_ttl_ms = i64::try_from(self.config().session_ttl_secs)
            .unwrap_or(0)
            .max(ttl_secs)
            .saturating_mul(1000);
        let session = NewSession {
            id: format!("ses_{}", uuid::Uuid::now_v7().simple()),
            user_id: request.user_id.clone(),
            client_id: request.client_id.clone(),
            created_at_ms: now,
            expires_at_ms: now.saturating_add(session_ttl_ms),
        };
        store.create_session(&session).await?;

        let mut consented: Vec<String> =
            match store.consent(&request.user_id, &request.client_id).await? {
                Some(consent) if !consent.revoked => {
                    split_scopes(&consent.scopes).map(str::to_owned).collect()
                }
                _ => Vec::new(),
            };
        for requested in split_scopes(&scope) {
            if !consented.iter().any(|c| c == requested) {
                consented.push(requested.to_owned());
            }
        }
        store
            .grant_consent(
                &request.user_id,
                &request.client_id,
                &consented.join(" "),
                now,
            )
            .await?;

        // Reads this replica's signing key state too: a key retired by
        // another replica or the admin command is replaced before signing.
        self.core().live_state(&session.id, None).await?;
        let access_token = self.core().tokens().sign(
            TokenKind::Access,
            &Claims {
                iss: self.issuer().to_owned(),
                sub: request.user_id,
                aud: request.resource,
                client_id: request.client_id,
                scope,
                sid: session.id.clone(),
                exp,
                iat,
                jti: uuid::Uuid::new_v4().simple().to_string(),
                grants: None,
            },
        )?;
        Ok(IssuedToken {
            access_token,
            session_id: session.id,
            expires_at: exp,
        })
    }

    /// Sets a user's status: `active`, `revoked` or `banned`.
    pub async fn set_user_status(&self, user_id: &str, status: &str) -> Result<(), AuthError> {
        let status = UserStatus::parse(status)
            .ok_or_else(|| AuthError::invalid("status", "must be active, revoked or banned"))?;
        let store = self.core().store();
        found(
            store.set_user_status(user_id, status.as_str()).await?,
            "user",
        )
    }

    /// Grants or withdraws the platform-admin role.
    pub async fn set_platform_admin(&self, user_id: &str, admin: bool) -> Result<(), AuthError> {
        found(
            self.core()
                .store()
                .set_platform_admin(user_id, admin)
                .await?,
            "user",
        )
    }

    /// Ends a session: its tokens and assertions are refused from the next call.
    pub async fn revoke_session(&self, session_id: &str) -> Result<(), AuthError> {
        let store = self.core().store();
        found(store.revoke_session(session_id, now_ms()).await?, "session")
    }

    /// Ends every current session of `user_id` (through `client_id` only,
    /// when given) with their refresh tokens, and for all clients the user's
    /// sign-in on the consent page: every token of those sessions is refused
    /// from the next call. Returns the number of sessions ended.
    pub async fn revoke_user_sessions(
        &self,
        user_id: &str,
        client_id: Option<&str>,
    ) -> Result<u64, AuthError> {
        check_id("user_id", user_id)?;
        let store = self.core().store();
        found(store.user_exists(user_id).await?, "user")?;
        if let Some(client_id) = client_id {
            found(store.client_exists(client_id).await?, "client")?;
        }
        Ok(store
            .revoke_user_sessions(user_id, client_id, now_ms())
            .await?)
    }

    /// The consents of `user_id`, by client id (revoked ones included).
    pub async fn consents(&self, user_id: &str) -> Result<Vec<ClientConsent>, AuthError> {
        let store = self.core().store();
        found(store.user_exists(user_id).await?, "user")?;
        Ok(store.user_consents(user_id).await?)
    }

    /// Enables or disables an OAuth client.
    pub async fn set_client_enabled(
        &self,
        client_id: &str,
        enabled: bool,
    ) -> Result<(), AuthError> {
        let store = self.core().store();
        found(
            store.set_client_enabled(client_id, enabled).await?,
            "client",
        )
    }

    /// Withdraws the consent of `user_id` to `client_id`.
    pub async fn revoke_consent(&self, user_id: &str, client_id: &str) -> Result<(), AuthError> {
        let store = self.core().store();
        found(
            store.revoke_consent(user_id, client_id, now_ms()).await?,
            "consent",
        )
    }

    /// Replaces the consented scopes (a revoked consent stays revoked).
    pub async fn set_consent_scopes<S: AsRef<str>>(
        &self,
        user_id: &str,
        client_id: &str,
        scopes: &[S],
    ) -> Result<(), AuthError> {
        let scopes = check_scopes(scopes)?;
        let store = self.core().store();
        found(
            store
                .set_consent_scopes(user_id, client_id, &scopes)
                .await?,
            "consent",
        )
    }

    /// Removes the membership of `user_id` on the organization (`location_id`
    /// `None`) or on one of its locations.
    pub async fn remove_membership(
        &self,
        user_id: &str,
        organization_id: &str,
        location_id: Option<&str>,
    ) -> Result<(), AuthError> {
        let store = self.core().store();
        found(
            store
                .remove_membership(user_id, organization_id, location_id)
                .await?,
            "membership",
        )
    }

    /// Gives `user_id` the `role` on the organization or one of its
    /// locations, replacing the role of an existing membership there.
    pub async fn add_membership(
        &self,
        user_id: &str,
        organization_id: &str,
        location_id: Option<&str>,
        role: &str,
    ) -> Result<(), AuthError> {
        check_id("organization_id", organization_id)?;
        if let Some(location_id) = location_id {
            check_id("location_id", location_id)?;
        }
        check_id("role", role)?;
        let store = self.core().store();
        found(store.user_exists(user_id).await?, "user")?;
        let membership = NewMembership {
            id: format!("mem_{}", uuid::Uuid::now_v7().simple()),
            user_id: user_id.to_owned(),
            organization_id: organization_id.to_owned(),
            location_id: location_id.map(str::to_owned),
            role: role.to_owned(),
        };
        Ok(store.put_membership(&membership, now_ms()).await?)
    }

    /// Registers an OAuth client (enabled) or updates its name and redirect URIs.
    pub async fn register_client<S: AsRef<str>>(
        &self,
        client_id: &str,
        name: &str,
        redirect_uris: &[S],
    ) -> Result<(), AuthError> {
        check_id("client_id", client_id)?;
        if name.is_empty() || name.len() > 200 {
            return Err(AuthError::invalid("name", "must be 1 to 200 characters"));
        }
        let uris: Vec<&str> = redirect_uris.iter().map(AsRef::as_ref).collect();
        if let Some(bad) = uris.iter().find(|uri| {
            !(uri.starts_with("https://") || uri.starts_with("http://")) || uri.contains('#')
        }) {
            return Err(AuthError::invalid(
                "redirect_uris",
                format!("{bad:?} must be an http(s) URL without a fragment"),
            ));
        }
        let client = NewClient {
            client_id: client_id.to_owned(),
            name: name.to_owned(),
            redirect_uris_json: serde_json::json!(uris).to_string(),
        };
        Ok(self.core().store().put_client(&client, now_ms()).await?)
    }
}
