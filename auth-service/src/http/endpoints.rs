//! The machine endpoints: `/token`, `/revoke` (RFC 7009) and `/register`
//! (RFC 7591, when enabled). Client credentials come from HTTP Basic or the
//! form; secrets are never logged. Each is limited per client address, and
//! `/token` and `/revoke` also on refused requests per client address ×
//! `client_id`: whoever floods a public client spends only their own budget.

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

use super::limits::{ClientAddress, Subject};
use super::{Shared, error_response, no_store_json, rate_limited_response};

/// Refusals that count against the requester: every refusal of the
/// request itself (client authentication, grant, scope, target, malformed
/// request), not the server's own unavailability.
fn counts_against_requester(error: &AuthError) -> bool {
    !matches!(
        error,
        AuthError::Unavailable(_) | AuthError::Internal(_) | AuthError::NotFound { .. }
    )
}

/// The client id a request names (Basic first, then the form); empty when none.
fn named_client<'a>(
    basic: Option<&'a crate::oauth::ClientCredentials>,
    form: Option<&'a str>,
) -> &'a str {
    basic
        .map(|credentials| credentials.client_id.as_str())
        .or(form)
        .unwrap_or_default()
}

/// The address and requester limits of `/token` and `/revoke`; the
/// requester's subject when its address is known.
async fn limited(
    state: &Shared,
    address: Option<&std::net::IpAddr>,
    headers: &HeaderMap,
    form_client_id: Option<&str>,
) -> Result<(Option<crate::oauth::ClientCredentials>, Option<Subject>), Box<Response>> {
    if let Err(wait) = state.limits.endpoint_request(address).await {
        tracing::info!("token endpoint request refused by a rate limit");
        return Err(Box::new(rate_limited_response(wait)));
    }
    let basic = basic(headers);
    let client_id = match &basic {
        Ok(basic) => named_client(basic.as_ref(), form_client_id),
        Err(_) => form_client_id.unwrap_or_default(),
    };
    let requester = state.limits.token_requester(address, client_id);
    if let Some(requester) = &requester
        && let Err(wait) = state.limits.token_allowed(requester).await
    {
        tracing::info!("token endpoint request refused by a rate limit");
        return Err(Box::new(rate_limited_response(wait)));
    }
    match basic {
        Ok(basic) => Ok((basic, requester)),
        Err(error) => Err(Box::new(refused(state, requester.as_ref(), &error).await)),
    }
}

/// Counts a refusal against the requester, then answers it.
async fn refused(state: &Shared, requester: Option<&Subject>, error: &AuthError) -> Response {
    if let Some(requester) = requester
        && counts_against_requester(error)
    {
        state.limits.token_failed(requester).await;
    }
    error_response(error)
}

/// Client credentials of an `Authorization: Basic` header (RFC 6749 §2.3.1:
/// both parts form-urlencoded).
fn basic(headers: &HeaderMap) -> Result<Option<crate::oauth::ClientCredentials>, AuthError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let bad = || AuthError::oauth(OAuthCode::InvalidClient, "client authentication failed");
    let value = value.to_str().map_err(|_| bad())?;
    let Some(encoded) = chataigne_common::authorization::credentials(value, "basic").map(str::trim)
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
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    Form(request): Form<TokenRequest>,
) -> Response {
    let (basic, requester) = match limited(
        &state,
        address.as_ref(),
        &headers,
        request.client_id.as_deref(),
    )
    .await
    {
        Ok(found) => found,
        Err(response) => return *response,
    };
    match state.oauth.token(request, basic).await {
        Ok(response) => match serde_json::to_string(&response) {
            Ok(body) => no_store_json(StatusCode::OK, body),
            Err(_) => error_response(&AuthError::Internal("serializing a token response".into())),
        },
        Err(error) => refused(&state, requester.as_ref(), &error).await,
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
    ClientAddress(address): ClientAddress,
    headers: HeaderMap,
    Form(form): Form<RevokeForm>,
) -> Response {
    let (basic, requester) = match limited(
        &state,
        address.as_ref(),
        &headers,
        form.client_id.as_deref(),
    )
    .await
    {
        Ok(found) => found,
        Err(response) => return *response,
    };
    let outcome = state
        .oauth
        .revoke(
            &form.token,
            form.client_id.as_deref(),
            form.client_secret.as_deref(),
            basic,
        )
        .await;
    match outcome {
        Ok(()) => no_store_json(StatusCode::OK, "{}".to_owned()),
        Err(error) => refused(&state, requester.as_ref(), &error).await,
    }
}

/// `POST /register`.
pub async fn register(
    State(state): State<Shared>,
    ClientAddress(address): ClientAddress,
    Json(request): Json<RegistrationRequest>,
) -> Response {
    let allowed = match state.limits.endpoint_request(address.as_ref()).await {
        Ok(()) => state.limits.registration(address.as_ref()).await,
        refused => refused,
    };
    if let Err(wait) = allowed {
        tracing::info!("registration refused by a rate limit");
        return rate_limited_response(wait);
    }
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
