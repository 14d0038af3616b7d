//! The authorization request (RFC 6749 §4.1.1 with OAuth 2.1 and RFC 8707
//! rules): validation, consent recording and code issuance. Errors found
//! before the redirect URI is trusted are shown to the user; later ones are
//! sent back to the client on its redirect URI.

use serde::Deserialize;

use crate::error::{AuthError, OAuthCode};
use crate::model::{now_ms, split_scopes};
use crate::store::oauth::{ClientKind, ClientRecord, NewCode};

use super::clients::{demo_loopback_redirect, redirect_uri_allowed};
use super::{OAuthServer, join_scopes, secrets};

/// The parameters of `/authorize`, as received (query string or form).
#[derive(Debug, Clone, Default, Deserialize)]
pub struct AuthorizationRequest {
    pub response_type: Option<String>,
    pub client_id: Option<String>,
    pub redirect_uri: Option<String>,
    pub scope: Option<String>,
    pub state: Option<String>,
    pub code_challenge: Option<String>,
    pub code_challenge_method: Option<String>,
    pub resource: Option<String>,
    /// The languages the user prefers for the pages (OpenID Connect), by preference.
    pub ui_locales: Option<String>,
}

impl AuthorizationRequest {
    /// Every parameter, in a fixed order (CSRF binding, forms).
    pub fn fields(&self) -> [Option<&str>; 9] {
        [
            self.response_type.as_deref(),
            self.client_id.as_deref(),
            self.redirect_uri.as_deref(),
            self.scope.as_deref(),
            self.state.as_deref(),
            self.code_challenge.as_deref(),
            self.code_challenge_method.as_deref(),
            self.resource.as_deref(),
            self.ui_locales.as_deref(),
        ]
    }
}

/// A request that passed every check.
#[derive(Debug, Clone)]
pub struct ValidatedRequest {
    pub client: ClientRecord,
    pub redirect_uri: String,
    pub scopes: Vec<String>,
    pub state: Option<String>,
    pub code_challenge: String,
    pub resource: String,
    /// Registered by an operator or trusted by the configured policy; any
    /// other client (metadata document, dynamic registration) is shown as
    /// unverified, its self-chosen name second to the host it comes from.
    pub verified: bool,
}

/// `host[:port]` of an absolute URL (the port only when not the scheme's default).
fn host_of(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    let host = url.host_str()?.to_owned();
    Some(match url.port() {
        Some(port) => format!("{host}:{port}"),
        None => host,
    })
}

impl ValidatedRequest {
    /// The host the client's metadata document was fetched from over a
    /// checked connection (its `client_id` URL): the one verified fact about
    /// who publishes a client that is not registered. `None` for others.
    pub fn publisher_host(&self) -> Option<String> {
        if self.client.origin == "metadata" {
            host_of(&self.client.client_id)
        } else {
            None
        }
    }

    /// The host the browser is sent back to, with the code.
    pub fn redirect_host(&self) -> String {
        host_of(&self.redirect_uri).unwrap_or_else(|| self.redirect_uri.clone())
    }
}

/// A refused authorization request.
#[derive(Debug)]
pub struct Rejection {
    pub error: AuthError,
    /// Where to send the error (redirect URI and state), when it can be trusted.
    pub redirect: Option<(String, Option<String>)>,
}

impl Rejection {
    fn shown(error: AuthError) -> Rejection {
        Rejection {
            error,
            redirect: None,
        }
    }
}

/// Longest `state` echoed back.
const MAX_STATE_LEN: usize = 1024;

impl OAuthServer {
    /// Checks an authorization request: client, redirect URI, response type,
    /// PKCE S256, resource, scopes.
    pub async fn validate(
        &self,
        request: &AuthorizationRequest,
    ) -> Result<ValidatedRequest, Rejection> {
        let client_id = request.client_id.as_deref().unwrap_or_default();
        let client = self
            .resolve_client(client_id)
            .await
            .map_err(Rejection::shown)?;
        if client.kind == ClientKind::Service {
            return Err(Rejection::shown(AuthError::oauth(
                OAuthCode::UnauthorizedClient,
                "service clients cannot use the authorization code flow",
            )));
        }
        let demo = client.client_id == chataigne_common::demo::DEMO_CLIENT_ID
            && client.origin == "registered";
        let redirect_uri = match request.redirect_uri.as_deref() {
            Some(uri) if redirect_uri_allowed(&client, uri) => uri.to_owned(),
            Some(uri)
                if demo
                    && demo_loopback_redirect(
                        uri,
                        self.config.demo_client_any_loopback_redirect,
                    ) =>
            {
                uri.to_owned()
            }
            None => {
                return Err(Rejection::shown(AuthError::oauth(
                    OAuthCode::InvalidRequest,
                    "redirect_uri is missing",
                )));
            }
            Some(_) if demo => {
                return Err(Rejection::shown(AuthError::oauth(
                    OAuthCode::InvalidRequest,
                    "redirect_uri is not one of this client's: the demo client accepts \
                     http://127.0.0.1, http://[::1] or http://localhost on any port, with the \
                     path /callback (any path in embedded mode)",
                )));
            }
            Some(_) => {
                return Err(Rejection::shown(AuthError::oauth(
                    OAuthCode::InvalidRequest,
                    "redirect_uri is not one of the redirect URIs registered for this client \
                     (compared as exact strings; on 127.0.0.1 and [::1] any port)",
                )));
            }
        };
        let state = request.state.clone();
        if state.as_ref().is_some_and(|s| s.len() > MAX_STATE_LEN) {
            return Err(Rejection::shown(AuthError::oauth(
                OAuthCode::InvalidRequest,
                "state is too long",
            )));
        }
        let back = |code: OAuthCode, description: &str| Rejection {
            error: AuthError::oauth(code, description),
            redirect: Some((redirect_uri.clone(), state.clone())),
        };
        if request.response_type.as_deref() != Some("code") {
            return Err(back(
                OAuthCode::UnsupportedResponseType,
                "response_type must be code",
            ));
        }
        let code_challenge = match (
            request.code_challenge.as_deref(),
            request.code_challenge_method.as_deref(),
        ) {
            (Some(challenge), Some("S256")) if secrets::is_s256_challenge(challenge) => {
                challenge.to_owned()
            }
            (None, _) => {
                return Err(back(
                    OAuthCode::InvalidRequest,
                    "code_challenge is required (PKCE S256)",
                ));
            }
            (Some(_), Some("S256")) => {
                return Err(back(
                    OAuthCode::InvalidRequest,
                    "code_challenge must be a base64url SHA-256 digest",
                ));
            }
            (Some(_), _) => {
                return Err(back(
                    OAuthCode::InvalidRequest,
                    "code_challenge_method must be S256",
                ));
            }
        };
        let resource = match request.resource.as_deref() {
            Some(resource) if self.config.resource_allowed(resource) => resource.to_owned(),
            Some(_) => {
                return Err(back(
                    OAuthCode::InvalidTarget,
                    "resource is not served by this authorization server",
                ));
            }
            None => {
                return Err(back(
                    OAuthCode::InvalidTarget,
                    "resource is required (RFC 8707)",
                ));
            }
        };
        let requested = request.scope.as_deref().unwrap_or_default();
        let scopes: Vec<String> = split_scopes(&join_scopes(split_scopes(requested)))
            .map(str::to_owned)
            .collect();
        if scopes.is_empty() {
            return Err(back(OAuthCode::InvalidScope, "scope is required"));
        }
        if let Some(unknown) = scopes
            .iter()
            .find(|scope| !chataigne_common::scopes::is_known(scope))
        {
            return Err(back(
                OAuthCode::InvalidScope,
                &format!(
                    "unknown scope {}",
                    unknown.chars().take(64).collect::<String>()
                ),
            ));
        }
        let trust = &self.config.client_trust;
        if !trust.trusts(&client.client_id, &client.origin)
            && let Some(write) = scopes
                .iter()
                .find(|scope| chataigne_common::scopes::is_write(scope))
        {
            return Err(back(
                OAuthCode::InvalidScope,
                &format!(
                    "{write} is a write scope: write scopes are granted only to clients this \
                     authorization server trusts, and this client is not one; request read scopes only"
                ),
            ));
        }
        let verified =
            client.origin == "registered" || trust.trusted_client_ids.contains(&client.client_id);
        Ok(ValidatedRequest {
            client,
            redirect_uri,
            scopes,
            state,
            code_challenge,
            resource,
            verified,
        })
    }

    /// Records the user's consent to the request's scopes (added to any
    /// current consent) and issues a one-time code; returns the redirect URL.
    pub async fn approve(
        &self,
        request: &ValidatedRequest,
        user_id: &str,
    ) -> Result<String, AuthError> {
        let store = self.core.store();
        let now = now_ms();
        let current = match store.consent(user_id, &request.client.client_id).await? {
            Some(consent) if !consent.revoked => consent.scopes,
            _ => String::new(),
        };
        let granted =
            join_scopes(split_scopes(&current).chain(request.scopes.iter().map(String::as_str)));
        store
            .grant_consent(user_id, &request.client.client_id, &granted, now)
            .await?;
        let code = secrets::generate()?;
        let ttl_ms = i64::try_from(self.config.code_ttl_secs)
            .unwrap_or(60)
            .saturating_mul(1000);
        store
            .insert_code(&NewCode {
                code_hash: secrets::hash(&code),
                client_id: request.client.client_id.clone(),
                user_id: user_id.to_owned(),
                redirect_uri: request.redirect_uri.clone(),
                scopes: request.scopes.join(" "),
                resource: request.resource.clone(),
                code_challenge: request.code_challenge.clone(),
                created_at_ms: now,
                expires_at_ms: now.saturating_add(ttl_ms),
            })
            .await?;
        self.redirect(
            &request.redirect_uri,
            &[("code", code.as_str())],
            request.state.as_deref(),
        )
    }

    /// The redirect URL carrying an error back to the client.
    pub fn error_redirect(
        &self,
        redirect_uri: &str,
        state: Option<&str>,
        code: OAuthCode,
        description: &str,
    ) -> Result<String, AuthError> {
        self.redirect(
            redirect_uri,
            &[("error", code.as_str()), ("error_description", description)],
            state,
        )
    }

    /// `redirect_uri` with `params`, `state` and `iss` (RFC 9207) appended.
    fn redirect(
        &self,
        redirect_uri: &str,
        params: &[(&str, &str)],
        state: Option<&str>,
    ) -> Result<String, AuthError> {
        let mut url = url::Url::parse(redirect_uri)
            .map_err(|_| AuthError::Internal("a registered redirect URI does not parse".into()))?;
        {
            let mut query = url.query_pairs_mut();
            for (name, value) in params {
                query.append_pair(name, value);
            }
            if let Some(state) = state {
                query.append_pair("state", state);
            }
            query.append_pair("iss", self.issuer());
        }
        Ok(url.into())
    }
}
