//! The MCP endpoint: one POST, one JSON-RPC message, one JSON response.
//! Order of checks: endpoint (path + Host), method, transport headers, one
//! `Authorization` header at most, body size and read time (408), UTF-8,
//! nesting depth, JSON, JSON-RPC shape (from here on a refusal answers the
//! request's id), the revision's rules between headers and body, per-address
//! limit, bearer token, then the method, served by the endpoint's revision
//! (`mcp/revision/`). For `tools/call`
//! the per-address limit is counted with the tool limit, in one Redis round
//! trip (`access/address_limit.rs`); an address Redis already refused is refused
//! there, before any token work, either way.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use futures::FutureExt;
use http::{Method, StatusCode};
use http_body_util::{BodyExt, LengthLimitError, Limited};

use crate::access::address_limit::{AddressLimit, ClientAddress};
use crate::access::auth;
use crate::endpoints::host;
use crate::error::{GatewayError, ReplyTo};
use crate::mcp::context::Context;
use crate::mcp::request_log::RequestLog;
use crate::mcp::revision::protocol;
use crate::mcp::transport;
use crate::ops::request_id;
use crate::ops::request_id::RequestId;
use crate::reply;
use crate::state::SharedState;
use crate::wire::json_depth;
use crate::wire::jsonrpc::{self, Incoming, Invalid};
use crate::wire::method::McpMethod;

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
    state.metrics.request(
        log.method_name(),
        log.tool.as_deref(),
        log.outcome,
        log.elapsed(),
    );
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
        log.method = Some(*method);
        *reply_to = Some(ReplyTo {
            id: id.clone(),
            profile: endpoint.profile,
        });
    }
    protocol(endpoint.revision).check_message(&parts.headers, &incoming)?;
    let bounded = tokio::time::timeout(
        config.deadlines.request(),
        answer(state, &endpoint, client, &parts.headers, incoming, log),
    );
    bounded.await.unwrap_or_else(|_elapsed| {
        tracing::warn!("request exceeded the gateway timeout");
        Err(GatewayError::Timeout)
    })
}

/// Everything after the message is read: the per-address limit, the bearer
/// token, then the method. A `tools/call` counts its address with its tool
/// limit; one that stops before (refused token, unknown tool…) counts it
/// alone at the end, and an address refusal then replaces its answer, as it
/// would have come first.
async fn answer(
    state: &SharedState,
    endpoint: &Arc<crate::endpoints::Endpoint>,
    client: Option<ClientAddress>,
    headers: &http::HeaderMap,
    incoming: Incoming,
    log: &mut RequestLog,
) -> Result<Response, GatewayError> {
    let (limiter, metrics) = (&state.limiter, &state.metrics);
    let address = AddressLimit::new(&state.config.rate_limits, client);
    address.refuse_if_known(limiter, metrics)?;
    let with_tool_limit = matches!(
        &incoming,
        Incoming::Request {
            method: McpMethod::ToolsCall,
            ..
        }
    );
    if !with_tool_limit {
        address.count_alone(limiter, metrics).await?;
    }
    let answered = authenticated(state, endpoint, headers, incoming, log, &address).await;
    if let Err(refusal) = address.count_alone(limiter, metrics).await {
        log.outcome = "ok";
        return Err(refusal);
    }
    answered
}

/// How long the principal assertion of this request may live: the deadline
/// of the tool a `tools/call` names (the longest one while that tool is not
/// in the catalogue already fetched), and only the authentication's own
/// bound for any other message, whose assertion no backend ever sees.
fn assertion_lifetime(state: &SharedState, incoming: &Incoming) -> Duration {
    let deadlines = &state.config.deadlines;
    let Incoming::Request {
        method: McpMethod::ToolsCall,
        params,
        ..
    } = incoming
    else {
        return Duration::from_millis(deadlines.auth_ms);
    };
    params
        .as_ref()
        .and_then(|params| params.get("name"))
        .and_then(serde_json::Value::as_str)
        .and_then(|name| {
            let snapshot = state.catalog.cached()?;
            let tool = snapshot.get(name)?;
            Some(crate::backends::call::deadline(deadlines, tool.deadline))
        })
        .unwrap_or_else(|| deadlines.longest_call())
}

/// The bearer token, then the method.
async fn authenticated(
    state: &SharedState,
    endpoint: &Arc<crate::endpoints::Endpoint>,
    headers: &http::HeaderMap,
    incoming: Incoming,
    log: &mut RequestLog,
    address: &AddressLimit,
) -> Result<Response, GatewayError> {
    let config = &state.config;
    let auth_deadline = std::time::Duration::from_millis(config.deadlines.auth_ms);
    let valid_for = assertion_lifetime(state, &incoming);
    let principal = auth::authenticate(
        &state.authenticator,
        endpoint,
        headers,
        &log.request_id,
        (auth_deadline, valid_for),
    )
    .await?;
    log.client_id = Some(principal.client_id.clone());
    log.user_id = Some(principal.user_id.clone());
    match incoming {
        Incoming::Notification { method } => {
            log.method = Some(method);
            Ok(reply::accepted())
        }
        Incoming::Response => Ok(reply::accepted()),
        Incoming::Request {
            id, method, params, ..
        } => {
            let revision = protocol(endpoint.revision);
            let ctx = Context {
                state,
                endpoint,
                principal: &principal,
                log,
                address,
                headers,
            };
            let body = revision.dispatch(ctx, &id, method, params).await?;
            Ok(reply::json(StatusCode::OK, body))
        }
    }
}
