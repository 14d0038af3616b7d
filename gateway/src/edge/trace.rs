//! The public listener's request span and HTTP metrics, one middleware.
//!
//! Each request gets an OpenTelemetry HTTP server span named
//! `{method} {route}` (e.g. `POST /mcp/v1`) with the HTTP semantic-convention
//! attributes (`http.request.method`, `http.route`, `url.path` — never the
//! query —, `url.scheme`, `network.protocol.version`,
//! `http.response.status_code`, `error.type` and an error status on 5xx), the
//! gateway's `request_id`, and the MCP ones (`mcp.method.name`,
//! `mcp.protocol.version`, `gen_ai.tool.name`, `gen_ai.operation.name`),
//! recorded once the JSON-RPC message is read
//! (`ops::http_telemetry::record_mcp`). The server is session-less: no
//! `mcp.session.id`, the `request_id` is what joins a request's span, log
//! lines and answer. The span is the root of the request's trace (or
//! continues the caller's `traceparent`); its context goes to the backends.
//!
//! The same middleware times the request into
//! `chataigne_gateway_http_request_duration_seconds{method,path,status}`:
//! the method is one of the standard ones (`_OTHER` otherwise) and the path
//! the route template (`unmatched` when no route matched), so labels stay
//! bounded whatever the client sends.

use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;

use crate::endpoints::Endpoints;
use crate::ops::http_telemetry::{UNMATCHED, method_label, protocol_version};
use crate::ops::request_id::RequestId;
use crate::state::SharedState;

/// The HTTP server span of `request`.
pub fn server_span(
    request: &Request,
    scheme: &'static str,
    endpoints: &Endpoints,
) -> tracing::Span {
    let method = method_label(request.method());
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map(MatchedPath::as_str);
    let name = match route {
        Some(route) => format!("{method} {route}"),
        None => method.to_owned(),
    };
    let request_id = request
        .extensions()
        .get::<RequestId>()
        .map_or("-", |id| id.0.as_str());
    // A protocol version the gateway does not serve is refused anyway;
    // only known ones are recorded (the header is the client's).
    let protocol = request
        .headers()
        .get("mcp-protocol-version")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| endpoints.known_version(value));
    tracing::info_span!(
        "http",
        otel.name = %name,
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = method,
        http.route = route,
        url.path = %request.uri().path(),
        url.scheme = scheme,
        network.protocol.version = protocol_version(request.version()),
        http.response.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
        request_id = %request_id,
        mcp.method.name = tracing::field::Empty,
        mcp.protocol.version = protocol,
        gen_ai.tool.name = tracing::field::Empty,
        gen_ai.operation.name = tracing::field::Empty,
    )
}

/// The middleware: runs the request in its span, then records the status
/// and the latency.
pub async fn trace(State(state): State<SharedState>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let scheme = if state.config.tls.is_some() {
        "https"
    } else {
        "http"
    };
    let span = server_span(&request, scheme, &state.endpoints);
    // A caller's W3C trace context in the request's headers: the request
    // continues that trace (a malformed one is ignored, the span then roots
    // a trace of its own).
    let headers = request.headers();
    let header = |name: &str| headers.get(name).and_then(|value| value.to_str().ok());
    if let Some(traceparent) = header("traceparent") {
        chataigne_common::trace_context::continue_trace(&span, traceparent, header("tracestate"));
    }
    let method = method_label(request.method());
    let path = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| UNMATCHED.to_owned(), |route| route.as_str().to_owned());
    let response = next.run(request).instrument(span.clone()).await;
    let status = response.status();
    let elapsed = started.elapsed();
    span.record("http.response.status_code", i64::from(status.as_u16()));
    if status.is_server_error() {
        span.record("otel.status_code", "error");
        span.record("error.type", status.as_str());
    }
    // Per-response detail at debug; the info line is the handler's.
    tracing::debug!(
        parent: &span,
        status = status.as_u16(),
        latency_ms = elapsed.as_secs_f64() * 1000.0,
        "response"
    );
    state
        .metrics
        .http_request(method, &path, status.as_u16(), elapsed);
    response
}
