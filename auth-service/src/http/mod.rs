//! The HTTP side of the authorization server (axum): discovery documents,
//! JWKS, the sign-in and consent pages, and the token, revocation and
//! registration endpoints. [`error_response`] is the one mapping of the
//! crate's error to an OAuth HTTP answer; [`rate_limited_response`] the
//! answer of the brute-force limits (`limits.rs`).

mod authorize;
mod cookies;
mod device;
mod endpoints;
mod lang;
mod limits;
mod page;
pub mod stack;

use std::sync::Arc;

use axum::Router;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::json;

use crate::error::{AuthError, OAuthCode};
use crate::oauth::OAuthServer;

/// Path of the JWK Set.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";
/// Path of the authorization-server metadata (RFC 8414).
pub const METADATA_PATH: &str = "/.well-known/oauth-authorization-server";
/// Path of the OpenID Connect discovery document (same content).
pub const OIDC_METADATA_PATH: &str = "/.well-known/openid-configuration";
pub const AUTHORIZE_PATH: &str = "/authorize";
pub const TOKEN_PATH: &str = "/token";
pub const REVOKE_PATH: &str = "/revoke";
pub const REGISTER_PATH: &str = "/register";

/// What the handlers share.
pub struct HttpState {
    pub oauth: OAuthServer,
    /// Cookies get `Secure` when the issuer is https.
    pub secure_cookies: bool,
    /// Brute-force limits (in process).
    pub limits: limits::Limits,
    /// Recognises the browsers that have signed in to an account before.
    pub devices: device::Devices,
    metadata: String,
}

pub type Shared = Arc<HttpState>;

impl HttpState {
    /// `device_secrets`: the secrets the device-cookie keys derive from,
    /// newest first (none: a per-process random key).
    pub fn new(oauth: OAuthServer, device_secrets: &[&[u8]]) -> Result<HttpState, AuthError> {
        let secure_cookies = oauth.issuer().starts_with("https://");
        let metadata = metadata(&oauth).to_string();
        let limits = limits::Limits::new(&oauth.config().rate_limits);
        Ok(HttpState {
            oauth,
            secure_cookies,
            limits,
            devices: device::Devices::new(device_secrets)?,
            metadata,
        })
    }
}

/// The RFC 8414 document (also served as the OpenID discovery document):
/// public scopes only, and no OpenID capability this server does not serve
/// (no ID token, no userinfo).
fn metadata(oauth: &OAuthServer) -> serde_json::Value {
    let issuer = oauth.issuer();
    let mut document = json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}{AUTHORIZE_PATH}"),
        "token_endpoint": format!("{issuer}{TOKEN_PATH}"),
        "revocation_endpoint": format!("{issuer}{REVOKE_PATH}"),
        "jwks_uri": format!("{issuer}{JWKS_PATH}"),
        "scopes_supported": chataigne_common::scopes::public().collect::<Vec<_>>(),
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
        "revocation_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
        "authorization_response_iss_parameter_supported": true,
        "client_id_metadata_document_supported": oauth.config().client_metadata_documents,
        "ui_locales_supported": lang::Lang::SUPPORTED,
    });
    if oauth.config().dynamic_registration {
        document["registration_endpoint"] = json!(format!("{issuer}{REGISTER_PATH}"));
    }
    document
}

/// The HTTP routes.
pub fn router(state: Shared) -> Router {
    Router::new()
        .route(JWKS_PATH, get(jwks))
        .route(METADATA_PATH, get(metadata_document))
        .route(OIDC_METADATA_PATH, get(metadata_document))
        .route(AUTHORIZE_PATH, get(authorize::start))
        .route("/authorize/login", post(authorize::login))
        .route("/authorize/consent", post(authorize::consent))
        .route("/authorize/switch", post(authorize::switch_account))
        .route(TOKEN_PATH, post(endpoints::token))
        .route(REVOKE_PATH, post(endpoints::revoke))
        .route(REGISTER_PATH, post(endpoints::register))
        .with_state(state)
}

async fn jwks(axum::extract::State(state): axum::extract::State<Shared>) -> Response {
    let body = state.oauth.core().tokens().keys().jwks().to_string();
    json_document(body, "public, max-age=60")
}

async fn metadata_document(axum::extract::State(state): axum::extract::State<Shared>) -> Response {
    json_document(state.metadata.clone(), "public, max-age=300")
}

fn json_document(body: String, cache: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, cache),
        ],
        body,
    )
        .into_response()
}

/// A JSON answer of the token, revocation or registration endpoint
/// (never cached: it may carry secrets).
pub fn no_store_json(status: StatusCode, body: String) -> Response {
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    response
}

/// Forgets rate-limit keys that are back to a full quota, every minute,
/// until the task is aborted.
pub fn spawn_limit_pruning(state: Shared) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(std::time::Duration::from_secs(60));
        ticks.tick().await;
        loop {
            ticks.tick().await;
            state.limits.prune();
        }
    })
}

/// A refusal of the token, revocation or registration endpoints by a
/// brute-force limit: 429, `Retry-After`, an OAuth error body.
pub fn rate_limited_response(wait: std::time::Duration) -> Response {
    let secs = limits::retry_after_secs(wait);
    let mut response = no_store_json(
        StatusCode::TOO_MANY_REQUESTS,
        json!({
            "error": "temporarily_unavailable",
            "error_description": format!("too many requests: retry after {secs} seconds"),
        })
        .to_string(),
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    response
}

/// The one mapping of [`AuthError`] to an OAuth error response (RFC 6749 §5.2).
pub fn error_response(error: &AuthError) -> Response {
    let (status, code, description) = match error {
        AuthError::OAuth { code, description } => {
            let status = match code {
                OAuthCode::InvalidClient => StatusCode::UNAUTHORIZED,
                _ => StatusCode::BAD_REQUEST,
            };
            (status, code.as_str(), description.clone())
        }
        AuthError::NotFound { .. } => {
            return (StatusCode::NOT_FOUND, "Not Found").into_response();
        }
        AuthError::Unavailable(source) => {
            tracing::warn!(error = %source, "auth storage unavailable");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "temporarily_unavailable",
                "retry shortly".to_owned(),
            )
        }
        AuthError::Internal(detail) => {
            tracing::error!(detail = %detail, "internal error");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                "server_error",
                "internal error".to_owned(),
            )
        }
        AuthError::InvalidArgument { field, .. } => (
            StatusCode::BAD_REQUEST,
            "invalid_request",
            format!("{field} is invalid"),
        ),
        AuthError::Unauthenticated(_) | AuthError::ScopeRequired { .. } | AuthError::Forbidden => (
            StatusCode::BAD_REQUEST,
            "invalid_grant",
            "the grant is not valid".to_owned(),
        ),
    };
    let mut response = no_store_json(
        status,
        json!({"error": code, "error_description": description}).to_string(),
    );
    response
        .extensions_mut()
        .insert(crate::metrics::OAuthErrorCode(code));
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"chataigne\""),
        );
    }
    response
}
