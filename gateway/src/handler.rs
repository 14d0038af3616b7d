//! The MCP endpoint: one POST, one JSON-RPC message, one JSON response.
//! Order of checks: endpoint (path + Host), method, per-address limit,
//! transport headers,
//! bearer token, body size, UTF-8, nesting depth, JSON, JSON-RPC shape.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{Method, StatusCode, header};
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::allowlist::ClientAddress;
use crate::counters::{Limit, Store};
use crate::error::GatewayError;
use crate::jsonrpc::{self, Incoming, Invalid};
use crate::methods::{self, Context};
use crate::rate_limit::{self, Decision};
use crate::request_id::RequestId;
use crate::request_log::RequestLog;
use crate::state::SharedState;
use crate::{auth, json_depth, reply, request_id, transport};

/// The `Host` the client addressed (HTTP/2 authority or HTTP/1 Host header).
pub fn host(request: &Request) -> Option<String> {
    request
        .uri()
        .authority()
        .map(|a| a.as_str().to_owned())
        .or_else(|| {
            request
                .headers()
                .get(header::HOST)
                .and_then(|h| h.to_str().ok())
                .map(str::to_owned)
        })
}

/// Serves a request to the endpoint path `path`, logging one line.
pub async fn handle(state: SharedState, path: Arc<str>, request: Request) -> Response {
    let id = request
        .extensions()
        .get::<RequestId>()
        .map_or_else(request_id::generate, |id| id.0.clone());
    let mut log = RequestLog::new(id);
    let response = match serve(&state, &path, request, &mut log).await {
        Ok(response) => response,
        Err(error) => {
            if log.outcome == "ok" {
                log.outcome = error.outcome();
            }
            error.into_response()
        }
    };
    log.emit(response.status().as_u16());
    state
        .metrics
        .request(log.method, log.tool.as_deref(), log.outcome, log.elapsed());
    response
}

/// Whether `error` or any of its sources is a body length limit.
fn is_length_limit(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut current = Some(error);
    while let Some(error) = current {
        if error.is::<LengthLimitError>() {
            return true;
        }
        current = error.source();
    }
    false
}

async fn read_body(body: Body, max: usize) -> Result<Vec<u8>, GatewayError> {
    match Limited::new(body, max).collect().await {
        Ok(collected) => Ok(collected.to_bytes().to_vec()),
        Err(error) if is_length_limit(error.as_ref()) => Err(GatewayError::PayloadTooLarge),
        Err(_) => Err(GatewayError::Parse("the request body could not be read")),
    }
}

/// The pre-authentication limit per client address. A store failure lets the
/// request through (fail-open, counted): the per-user limits still apply.
async fn limit_address(
    state: &SharedState,
    client: Option<ClientAddress>,
    profile: crate::config::Profile,
) -> Result<(), GatewayError> {
    let per_minute = state.config.rate_limits.per_ip_per_minute;
    let Some(ClientAddress(client)) = client else {
        return Ok(());
    };
    let key = rate_limit::key("address", &[&client.to_canonical().to_string()]);
    match state.limiter.check(&key, per_minute).await {
        Ok(Decision::Allowed) => Ok(()),
        Ok(Decision::Limited(retry_after)) => {
            state.metrics.rate_limited(Limit::Address);
            tracing::info!(client = %client, "request refused by the per-address limit");
            Err(GatewayError::AddressRateLimited {
                profile,
                retry_after,
            })
        }
        Err(error) => {
            state.metrics.served_without(Store::RateLimit);
            tracing::warn!(store = "rate_limit", %error, "store unavailable: request served without the address limit");
            Ok(())
        }
    }
}

async fn serve(
    state: &SharedState,
    path: &str,
    request: Request,
    log: &mut RequestLog,
) -> Result<Response, GatewayError> {
    let endpoint = state
        .endpoints
        .resolve(path, host(&request).as_deref())
        .ok_or(GatewayError::NotFound)?;
    if request.method() != Method::POST {
        return Err(GatewayError::MethodNotAllowed);
    }
    let config = &state.config;
    let client = request.extensions().get::<ClientAddress>().copied();
    limit_address(state, client, endpoint.profile).await?;
    transport::check(request.headers(), &endpoint, &config.allowed_origins)?;
    let auth_deadline = std::time::Duration::from_millis(config.deadlines.auth_ms);
    let principal = auth::authenticate(
        state,
        &endpoint,
        request.headers(),
        &log.request_id,
        auth_deadline,
    )
    .await?;
    log.client_id = Some(principal.client_id.clone());
    log.user_id = Some(principal.user_id.clone());

    let bytes = read_body(request.into_body(), config.max_body_bytes).await?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| GatewayError::Parse("the request body is not valid UTF-8"))?;
    if json_depth::exceeds(text.as_bytes(), config.max_json_depth) {
        return Err(GatewayError::InvalidRequest(Invalid {
            id: None,
            message: "Invalid Request: JSON nesting is too deep",
        }));
    }
    let document: serde_json::Value = serde_json::from_str(text)
        .map_err(|_| GatewayError::Parse("the request body is not valid JSON"))?;
    match jsonrpc::classify(document).map_err(GatewayError::InvalidRequest)? {
        Incoming::Notification { method } => {
            log.set_method(&method);
            Ok(reply::accepted())
        }
        Incoming::Response => Ok(reply::accepted()),
        Incoming::Request { id, method, params } => {
            log.set_method(&method);
            let ctx = Context {
                state,
                endpoint: &endpoint,
                principal: &principal,
                log,
            };
            let result = methods::dispatch(ctx, &id, &method, params).await?;
            Ok(reply::json(StatusCode::OK, jsonrpc::success(&id, &result)))
        }
    }
}
