//! The machine endpoints: `/token`, `/revoke` (RFC 7009) and `/register`
//! (RFC 7591, when enabled). Client credentials come from HTTP Basic or the
//! form; secrets are never logged.

use axum::Json;
use axum::extract::{Form, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use serde_json::json;

use crate::error::{AuthError, OAuthCode};
use crate::oauth::{RegistrationRequest, TokenRequest};

use super::{Shared, error_response, no_store_json};

/// Client credentials of an `Authorization: Basic` header (RFC 6749 §2.3.1:
/// both parts form-urlencoded).
fn basic(headers: &HeaderMap) -> Result<Option<crate::oauth::ClientCredentials>, AuthError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let bad = || AuthError::oauth(OAuthCode::InvalidClient, "client authentication failed");
    let value = value.to_str().map_err(|_| bad())?;
    let Some(encoded) = value
        .split_once(' ')
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("basic"))
        .map(|(_, rest)| rest.trim())
    else {
        return Err(bad());
    };
    let decoded = STANDARD.decode(encoded).map_err(|_| bad())?;
    let decoded = String::from_utf8(decoded).map_err(|_| bad())?;
    let (id, secret) = decoded.split_once(':').ok_or_else(bad)?;
    let unescape = |part: &str| -> String {
        url::form_urlencoded::parse(format!("v={part}").as_bytes())
            .next()
            .map(|(_, v)| v.into_owned())
            .unwrap_or_default()
    };
    Ok(Some(crate::oauth::ClientCredentials {
        client_id: unescape(id),
        secret: Some(unescape(secret)),
    }))
}

/// `POST /token`.
pub async fn token(
    State(state): State<Shared>,
    headers: HeaderMap,
    Form(request): Form<TokenRequest>,
) -> Response {
    let outcome = async {
        let basic = basic(&headers)?;
        state.oauth.token(request, basic).await
    }
    .await;
    match outcome {
        Ok(response) => match serde_json::to_string(&response) {
            Ok(body) => no_store_json(StatusCode::OK, body),
            Err(_) => error_response(&AuthError::Internal("serializing a token response".into())),
        },
        Err(error) => error_response(&error),
    }
}

/// The revocation form.
#[derive(Deserialize)]
pub struct RevokeForm {
    #[serde(default)]
    token: String,
    client_id: Option<String>,
    client_secret: Option<String>,
}

/// `POST /revoke`.
pub async fn revoke(
    State(state): State<Shared>,
    headers: HeaderMap,
    Form(form): Form<RevokeForm>,
) -> Response {
    let outcome = async {
        let basic = basic(&headers)?;
        state
            .oauth
            .revoke(
                &form.token,
                form.client_id.as_deref(),
                form.client_secret.as_deref(),
                basic,
            )
            .await
    }
    .await;
    match outcome {
        Ok(()) => no_store_json(StatusCode::OK, "{}".to_owned()),
        Err(error) => error_response(&error),
    }
}

/// `POST /register`.
pub async fn register(
    State(state): State<Shared>,
    Json(request): Json<RegistrationRequest>,
) -> Response {
    match state.oauth.register(request).await {
        Ok(client) => no_store_json(
            StatusCode::CREATED,
            json!({
                "client_id": client.client_id,
                "client_name": client.name,
                "redirect_uris": client.redirect_uris,
                "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
            })
            .to_string(),
        ),
        Err(error) => error_response(&error),
    }
}
