//! The MCP endpoint: one POST, one JSON-RPC message, one JSON response.
//! Order of checks: endpoint (path + Host), method, transport headers, one
//! `Authorization` header at most, body size and read time (408), UTF-8,
//! nesting depth, JSON, JSON-RPC shape (from here on a refusal answers the
//! request's id), per-address limit, bearer token, method.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use futures::FutureExt;
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
///
/// Once the body's JSON-RPC id is read, every later refusal (per-address
/// limit, auth-service outage or rate limit, the request's own time bound, a
/// panic) is answered as a JSON-RPC error to that id, with the profile's code
/// and the error object carrying the Chataigne code and request id.
pub async fn handle(state: SharedState, path: Arc<str>, request: Request) -> Response {
    let id = request
        .extensions()
        .get::<RequestId>()
        .map_or_else(request_id::generate, |id| id.0.clone());
    let mut log = RequestLog::new(id);
    let mut reply_to = None;
    let served = AssertUnwindSafe(serve(&state, &path, request, &mut log, &mut reply_to))
        .catch_unwind()
        .await;
    let result = served.unwrap_or_else(|_panic| {
        tracing::error!(request_id = %log.request_id, "request handler panicked");
        Err(GatewayError::Internal)
    });
    let response = match result {
        Ok(response) => response,
        Err(error) => {
            if log.outcome == "ok" {
                log.outcome = error.outcome();
            }
            match &reply_to {
                Some(to) => error.answering(to, &log.request_id),
                None => error,
            }
            .into_response()
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

/// Reads the whole body, at most `max` bytes within `within` (a client that
/// stalls or trickles its body is answered 408).
async fn read_body(body: Body, max: usize, within: Duration) -> Result<Vec<u8>, GatewayError> {
    let collected = tokio::time::timeout(within, Limited::new(body, max).collect())
        .await
        .map_err(|_elapsed| GatewayError::BodyTimeout)?;
    match collected {
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
            Err(GatewayError::AddressRateLimited { retry_after })
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
    reply_to: &mut Option<ReplyTo>,
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
    transport::check(request.headers(), &endpoint, &config.allowed_origins)?;
    auth::single_authorization(request.headers()).inspect_err(|_| {
        state.metrics.auth_failure("ambiguous_credentials");
    })?;
    let (parts, body) = request.into_parts();
    let body_timeout = config.connections.body_read_timeout();
    let bytes = read_body(body, config.max_body_bytes, body_timeout).await?;
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
    let incoming = jsonrpc::classify(document).map_err(GatewayError::InvalidRequest)?;
    if let Incoming::Request { id, method, .. } = &incoming {
        log.set_method(method);
        *reply_to = Some(ReplyTo {
            id: id.clone(),
            profile: endpoint.profile,
        });
    }
    let bounded = tokio::time::timeout(
        config.deadlines.request(),
        answer(state, &endpoint, client, &parts.headers, incoming, log),
    );
    bounded.await.unwrap_or_else(|_elapsed| {
        tracing::warn!("request exceeded the gateway timeout");
        Err(GatewayError::Timeout)
    })
}

/// The JSON-RPC id and profile a refusal is answered to.
pub struct ReplyTo {
    pub id: jsonrpc::Id,
    pub profile: crate::config::Profile,
}

/// Everything after the message is read: the per-address limit, the bearer
/// token, then the method.
async fn answer(
    state: &SharedState,
    endpoint: &Arc<crate::endpoints::Endpoint>,
    client: Option<ClientAddress>,
    headers: &http::HeaderMap,
    incoming: Incoming,
    log: &mut RequestLog,
) -> Result<Response, GatewayError> {
    let config = &state.config;
    limit_address(state, client).await?;
    let auth_deadline = std::time::Duration::from_millis(config.deadlines.auth_ms);
    let principal =
        auth::authenticate(state, endpoint, headers, &log.request_id, auth_deadline).await?;
    log.client_id = Some(principal.client_id.clone());
    log.user_id = Some(principal.user_id.clone());
    match incoming {
        Incoming::Notification { method } => {
            log.set_method(&method);
            Ok(reply::accepted())
        }
        Incoming::Response => Ok(reply::accepted()),
        Incoming::Request { id, method, params } => {
            let ctx = Context {
                state,
                endpoint,
                principal: &principal,
                log,
            };
            let result = methods::dispatch(ctx, &id, &method, params).await?;
            Ok(reply::json(StatusCode::OK, jsonrpc::success(&id, &result)))
        }
    }
}
