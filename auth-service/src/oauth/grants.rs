//! The token endpoint (authorization code with PKCE, rotating refresh tokens
//! with reuse detection, client credentials for service accounts) and token
//! revocation (RFC 7009).
//!
//! A refresh is checked in full (client, expiry, resource, scopes, live
//! state) before anything is written: a refused refresh leaves its token
//! valid. Only a successful one rotates, in one transaction that spends the
//! presented token and stores its successor; a token already spent (by an
//! earlier rotation, or by a concurrent one that won) is reuse and ends the
//! family. Write scopes reach only clients the trust policy trusts.

use serde::{Deserialize, Serialize};

use crate::error::{AuthError, OAuthCode};
use crate::live;
use crate::model::{now_ms, split_scopes};
use crate::store::NewSession;
use crate::store::oauth::{ClientKind, ClientRecord, Consumed, NewRefresh};
use crate::tokens::{Claims, TokenKind, Tokens, Verified};

use super::clients::ClientCredentials;
use super::{OAuthServer, join_scopes, secrets};

/// The form of a token request, as received.
#[derive(Default, Deserialize)]
pub struct TokenRequest {
    pub grant_type: Option<String>,
    pub code: Option<String>,
    pub redirect_uri: Option<String>,
    pub code_verifier: Option<String>,
    pub refresh_token: Option<String>,
    pub scope: Option<String>,
    pub resource: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
}

/// A successful token response (RFC 6749 §5.1).
#[derive(Serialize)]
pub struct TokenResponse {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    pub scope: String,
}

impl std::fmt::Debug for TokenResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenResponse")
            .field("expires_in", &self.expires_in)
            .field("scope", &self.scope)
            .finish_non_exhaustive()
    }
}

fn invalid_grant(description: &str) -> AuthError {
    AuthError::oauth(OAuthCode::InvalidGrant, description)
}

/// `Err(invalid_target: refusal)` when `request` names a resource other
/// than `resource`.
fn same_resource(request: &TokenRequest, resource: &str, refusal: &str) -> Result<(), AuthError> {
    match request.resource.as_deref() {
        Some(requested) if requested != resource => {
            Err(AuthError::oauth(OAuthCode::InvalidTarget, refusal))
        }
        _ => Ok(()),
    }
}

/// The scopes `request` asks for (all of `granted` when it names none), or
/// `Err(invalid_scope: refusal)` when one of them is not in `granted`.
fn narrowed(request: &TokenRequest, granted: &str, refusal: &str) -> Result<String, AuthError> {
    let Some(requested) = request.scope.as_deref() else {
        return Ok(granted.to_owned());
    };
    if split_scopes(requested).any(|scope| !split_scopes(granted).any(|g| g == scope)) {
        return Err(AuthError::oauth(OAuthCode::InvalidScope, refusal));
    }
    Ok(join_scopes(split_scopes(requested)))
}

/// What [`OAuthServer::issue`] does about refresh tokens.
enum RefreshPlan<'a> {
    /// No refresh token (service accounts).
    None,
    /// A new family member for these scopes (code exchange).
    New { scopes: &'a str },
    /// Rotation of the presented token (its hash), for these scopes.
    Rotate {
        spent_hash: &'a str,
        scopes: &'a str,
    },
}

fn required<'a>(value: &'a Option<String>, name: &str) -> Result<&'a str, AuthError> {
    value
        .as_deref()
        .filter(|v| !v.is_empty() && v.len() <= 4096)
        .ok_or_else(|| AuthError::oauth(OAuthCode::InvalidRequest, format!("{name} is required")))
}

/// Client credentials from the Authorization header (Basic) or the form, not both.
fn credentials(
    request: &TokenRequest,
    basic: Option<ClientCredentials>,
) -> Result<ClientCredentials, AuthError> {
    match basic {
        Some(_) if request.client_secret.is_some() => Err(AuthError::oauth(
            OAuthCode::InvalidRequest,
            "use one client authentication method",
        )),
        Some(basic) => {
            if request
                .client_id
                .as_deref()
                .is_some_and(|id| id != basic.client_id)
            {
                return Err(AuthError::oauth(
                    OAuthCode::InvalidClient,
                    "client authentication failed",
                ));
            }
            Ok(basic)
        }
        None => Ok(ClientCredentials {
            client_id: required(&request.client_id, "client_id")?.to_owned(),
            secret: request.client_secret.clone(),
        }),
    }
}

impl OAuthServer {
    /// Serves one token request.
    pub async fn token(
        &self,
        request: TokenRequest,
        basic: Option<ClientCredentials>,
    ) -> Result<TokenResponse, AuthError> {
        let grant_type = required(&request.grant_type, "grant_type")?.to_owned();
        let credentials = credentials(&request, basic)?;
        let client = self.authenticate_client(&credentials).await?;
        match grant_type.as_str() {
            "authorization_code" => self.exchange_code(&client, &request).await,
            "refresh_token" => self.refresh(&client, &request).await,
            "client_credentials" => self.client_credentials(&client, &request).await,
            _ => Err(AuthError::oauth(
                OAuthCode::UnsupportedGrantType,
                "grant_type must be authorization_code, refresh_token or client_credentials",
            )),
        }
    }

    async fn exchange_code(
        &self,
        client: &ClientRecord,
        request: &TokenRequest,
    ) -> Result<TokenResponse, AuthError> {
        if client.kind == ClientKind::Service {
            return Err(AuthError::oauth(
                OAuthCode::UnauthorizedClient,
                "service clients use client_credentials",
            ));
        }
        let code = required(&request.code, "code")?;
        let redirect_uri = required(&request.redirect_uri, "redirect_uri")?;
        let verifier = required(&request.code_verifier, "code_verifier")?;
        let store = self.core.store();
        let now = now_ms();
        let code_hash = secrets::hash(code);
        let record = match store.consume_code(&code_hash, now).await? {
            Consumed::Fresh(record) => record,
            Consumed::Reused { session_id } => {
                // A replayed code: whatever it produced is compromised.
                if let Some(session_id) = session_id {
                    store.revoke_family(&session_id, now).await?;
                }
                tracing::warn!(client_id = %client.client_id, "authorization code reused");
                return Err(invalid_grant("the code was already used"));
            }
            Consumed::Missing => return Err(invalid_grant("unknown code")),
        };
        if record.client_id != client.client_id {
            return Err(invalid_grant("the code was issued to another client"));
        }
        if record.expires_at_ms <= now {
            return Err(invalid_grant("the code has expired"));
        }
        if record.redirect_uri != redirect_uri {
            return Err(invalid_grant(
                "redirect_uri differs from the authorization request",
            ));
        }
        if !secrets::pkce_s256_matches(verifier, &record.code_challenge) {
            return Err(invalid_grant(
                "code_verifier does not match the code_challenge",
            ));
        }
        if request
            .resource
            .as_deref()
            .is_some_and(|resource| resource != record.resource)
        {
            return Err(AuthError::oauth(
                OAuthCode::InvalidTarget,
                "resource differs from the authorization request",
            ));
        }
        let session_id = self
            .open_session(&record.user_id, &client.client_id, self.session_ttl_secs)
            .await?;
        store.set_code_session(&code_hash, &session_id).await?;
        self.issue(
            &record.user_id,
            client,
            &session_id,
            &record.scopes,
            RefreshPlan::New {
                scopes: &record.scopes,
            },
            &record.resource,
        )
        .await
    }

    async fn refresh(
        &self,
        client: &ClientRecord,
        request: &TokenRequest,
    ) -> Result<TokenResponse, AuthError> {
        let token = required(&request.refresh_token, "refresh_token")?;
        let store = self.core.store();
        let now = now_ms();
        let token_hash = secrets::hash(token);
        let record = match store.refresh(&token_hash).await? {
            Some(record) if record.spent => {
                // Reuse of a spent refresh token: end the whole family and its session.
                store.revoke_family(&record.session_id, now).await?;
                tracing::warn!(client_id = %client.client_id, "refresh token reused; family revoked");
                return Err(invalid_grant("the refresh token is no longer valid"));
            }
            Some(record) => record,
            None => return Err(invalid_grant("unknown refresh token")),
        };
        // Every refusal below leaves the token as it was: valid.
        if record.client_id != client.client_id {
            return Err(invalid_grant(
                "the refresh token was issued to another client",
            ));
        }
        if record.expires_at_ms <= now {
            return Err(invalid_grant("the refresh token has expired"));
        }
        same_resource(
            request,
            &record.resource,
            "resource differs from the original grant",
        )?;
        let scope = narrowed(
            request,
            &record.scopes,
            "a refresh can only narrow the granted scopes",
        )?;
        self.issue(
            &record.user_id,
            client,
            &record.session_id,
            &scope,
            RefreshPlan::Rotate {
                spent_hash: &token_hash,
                scopes: &record.scopes,
            },
            &record.resource,
        )
        .await
    }

    async fn client_credentials(
        &self,
        client: &ClientRecord,
        request: &TokenRequest,
    ) -> Result<TokenResponse, AuthError> {
        let Some(service_user) = client
            .service_user_id
            .as_deref()
            .filter(|_| client.kind == ClientKind::Service)
        else {
            return Err(AuthError::oauth(
                OAuthCode::UnauthorizedClient,
                "client_credentials is for service-account clients",
            ));
        };
        let audience = self.core.service_audience().to_owned();
        same_resource(
            request,
            &audience,
            "service accounts get tokens for the tool-service only",
        )?;
        let scope = narrowed(
            request,
            &client.allowed_scopes,
            "a requested scope is not allowed for this service account",
        )?;
        let session_id = self
            .open_session(service_user, &client.client_id, self.access_token_ttl_secs)
            .await?;
        self.issue(
            service_user,
            client,
            &session_id,
            &scope,
            RefreshPlan::None,
            &audience,
        )
        .await
    }

    /// Creates a `sid` session for (user, client) lasting `ttl_secs`.
    async fn open_session(
        &self,
        user_id: &str,
        client_id: &str,
        ttl_secs: i64,
    ) -> Result<String, AuthError> {
        let now = now_ms();
        let session = NewSession {
            id: format!("ses_{}", uuid::Uuid::now_v7().simple()),
            user_id: user_id.to_owned(),
            client_id: client_id.to_owned(),
            created_at_ms: now,
            expires_at_ms: now.saturating_add(ttl_secs.saturating_mul(1000)),
        };
        self.core.store().create_session(&session).await?;
        Ok(session.id)
    }

    /// `scopes` without the write scopes when the trust policy does not
    /// trust `client` (seed 002: write scopes for trusted clients only).
    fn trusted_scopes(&self, client: &ClientRecord, scopes: &str) -> String {
        if self
            .config
            .client_trust
            .trusts(&client.client_id, &client.origin)
        {
            return scopes.to_owned();
        }
        join_scopes(split_scopes(scopes).filter(|scope| !chataigne_common::scopes::is_write(scope)))
    }

    /// Re-checks the live state of the session and signs an access token for
    /// `scope` (narrowed to the live consent and the trust policy); stores a
    /// refresh token of the session's family as `refresh` says, atomically
    /// with spending the presented one for a rotation.
    async fn issue(
        &self,
        user_id: &str,
        client: &ClientRecord,
        session_id: &str,
        scope: &str,
        refresh: RefreshPlan<'_>,
        resource: &str,
    ) -> Result<TokenResponse, AuthError> {
        let now = now_ms();
        let iat = now / 1000;
        let exp = iat + self.access_token_ttl_secs;
        let mut claims = Claims {
            iss: self.issuer().to_owned(),
            sub: user_id.to_owned(),
            aud: resource.to_owned(),
            client_id: client.client_id.clone(),
            scope: self.trusted_scopes(client, scope),
            sid: session_id.to_owned(),
            exp,
            iat,
            jti: uuid::Uuid::new_v4().simple().to_string(),
            grants: None,
        };
        let state = self.core.live_state(session_id, None).await?;
        let principal = live::evaluate(state.as_ref(), &claims, now)
            .map_err(|_| invalid_grant("the grant is no longer valid"))?;
        if principal.scopes.is_empty() {
            return Err(AuthError::oauth(
                OAuthCode::InvalidScope,
                "none of the requested scopes is consented",
            ));
        }
        claims.scope = principal.scopes.join(" ");
        let access_token = self.core.tokens().sign(TokenKind::Access, &claims)?;
        let (family_scopes, spent_hash) = match refresh {
            RefreshPlan::None => (None, None),
            RefreshPlan::New { scopes } => (Some(scopes), None),
            RefreshPlan::Rotate { spent_hash, scopes } => (Some(scopes), Some(spent_hash)),
        };
        let refresh_token = match family_scopes {
            None => None,
            Some(scopes) => {
                let token = secrets::generate()?;
                let ttl_ms = i64::try_from(self.config.refresh_token_ttl_secs)
                    .unwrap_or(86_400)
                    .saturating_mul(1000);
                let next = NewRefresh {
                    token_hash: secrets::hash(&token),
                    session_id: session_id.to_owned(),
                    client_id: client.client_id.clone(),
                    user_id: user_id.to_owned(),
                    scopes: self.trusted_scopes(client, scopes),
                    resource: resource.to_owned(),
                    created_at_ms: now,
                    expires_at_ms: now.saturating_add(ttl_ms),
                };
                let store = self.core.store();
                match spent_hash {
                    None => store.insert_refresh(&next).await?,
                    Some(spent) => {
                        if !store.rotate_refresh(spent, now, &next).await? {
                            // Spent by a concurrent refresh meanwhile: reuse.
                            store.revoke_family(session_id, now).await?;
                            tracing::warn!(client_id = %client.client_id, "refresh token reused concurrently; family revoked");
                            return Err(invalid_grant("the refresh token is no longer valid"));
                        }
                    }
                }
                Some(token)
            }
        };
        Ok(TokenResponse {
            access_token,
            token_type: "Bearer",
            expires_in: self.access_token_ttl_secs,
            refresh_token,
            scope: claims.scope,
        })
    }

    /// RFC 7009: revokes a refresh token (its whole family and session) or
    /// an access token (its session), when it belongs to the authenticated
    /// client. Unknown tokens are not an error.
    pub async fn revoke(
        &self,
        token: &str,
        client_id: Option<&str>,
        client_secret: Option<&str>,
        basic: Option<ClientCredentials>,
    ) -> Result<(), AuthError> {
        let request = TokenRequest {
            client_id: client_id.map(str::to_owned),
            client_secret: client_secret.map(str::to_owned),
            ..TokenRequest::default()
        };
        let credentials = credentials(&request, basic)?;
        let client = self.authenticate_client(&credentials).await?;
        if token.is_empty() || token.len() > 8192 {
            return Ok(());
        }
        let store = self.core.store();
        let now = now_ms();
        if let Some(record) = store.refresh(&secrets::hash(token)).await? {
            if record.client_id == client.client_id {
                store.revoke_family(&record.session_id, now).await?;
            }
            return Ok(());
        }
        if Tokens::claimed_kind(token) == Some(TokenKind::Access)
            && let Some(audience) = unverified_audience(token)
            && let Ok(Verified { claims, .. }) = self
                .core
                .verify(TokenKind::Access, token, &audience, now)
                .await
            && claims.client_id == client.client_id
        {
            store.revoke_family(&claims.sid, now).await?;
        }
        Ok(())
    }
}

/// The `aud` claim of a JWT before verification (verification follows).
fn unverified_audience(token: &str) -> Option<String> {
    use base64::Engine;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    value.get("aud")?.as_str().map(str::to_owned)
}
