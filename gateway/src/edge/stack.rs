//! The public listener's middleware stack, declared in one function, outermost
//! layer first, each with the reason it is there.

use std::any::Any;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::error_handling::HandleErrorLayer;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use http::header;
use tower::ServiceBuilder;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::sensitive_headers::SetSensitiveRequestHeadersLayer;
use tower_http::set_header::SetResponseHeaderLayer;

use chataigne_common::hardening;

use crate::edge::allowlist::{self, Policy};
use crate::error::GatewayError;
use crate::ops::request_id;
use crate::state::SharedState;

/// Wraps the public routes in the gateway's layers.
pub fn public(routes: Router, state: &SharedState) -> Router {
    let config = &state.config;
    let max_body = config.max_body_bytes;
    // The handler bounds each request itself (answering with its JSON-RPC
    // id); this outer bound is the backstop for what happens before it.
    let request_timeout = config.deadlines.request() + Duration::from_secs(2);
    routes.layer(
        ServiceBuilder::new()
            // Every answer, the refusals of the layers below included:
            // `X-Content-Type-Options: nosniff`, so no browser reads a
            // JSON-RPC answer or an error as a script or a page.
            .layer(SetResponseHeaderLayer::overriding(
                header::X_CONTENT_TYPE_OPTIONS,
                hardening::nosniff(),
            ))
            // Every answer, when the listener serves TLS or a public URL is
            // https: `Strict-Transport-Security` for a year.
            .option_layer(config.hsts().map(|hsts| {
                SetResponseHeaderLayer::overriding(header::STRICT_TRANSPORT_SECURITY, hsts)
            }))
            // Every HTML answer (none is expected): a CSP with
            // `frame-ancestors 'none'`, `X-Frame-Options` and
            // `Referrer-Policy`, so nothing this listener answers is framed.
            .layer(middleware::from_fn(hardening::html_page_policies))
            // Finds each request's client address (for the per-address limit)
            // and refuses, with an empty 403 before any other work, clients
            // outside the source-address allowlist that only
            // X-Forwarded-For from a trusted proxy names; every other
            // connection was already screened at accept (`edge/listener.rs`).
            .layer(middleware::from_fn_with_state(
                (Policy::new(&config.allowlist), state.clone()),
                allowlist::enforce,
            ))
            // Marks credentials as sensitive so no layer below (trace, debug
            // output of requests) can print the Authorization header.
            .layer(SetSensitiveRequestHeadersLayer::new([
                header::AUTHORIZATION,
                header::PROXY_AUTHORIZATION,
                header::COOKIE,
            ]))
            // Gives every request a gateway-generated id (logs, envelopes,
            // response header) before anything is traced.
            .layer(middleware::from_fn(request_id::assign))
            // The request's HTTP server span (OpenTelemetry semantic
            // conventions, never the query), at info so it is the root of the
            // request's trace (its context goes to the backends), and the HTTP
            // duration histogram; the info line is the handler's.
            .layer(middleware::from_fn_with_state(
                state.clone(),
                crate::edge::trace::trace,
            ))
            // A panic the handler did not catch itself (it catches those of a
            // request whose JSON-RPC id it has read, answering with that id)
            // becomes a JSON-RPC internal error, not a dropped connection.
            .layer(CatchPanicLayer::custom(panic_response))
            // Bounds the whole request (auth + the longest tool deadline +
            // margins) so no client ever waits forever.
            .layer(HandleErrorLayer::new(timeout_response))
            .timeout(request_timeout)
            // Refuses a declared oversized body before reading it, and caps
            // streamed bodies; both end as a 413 with a JSON-RPC error.
            .layer(middleware::from_fn_with_state(max_body, limit_body)),
    )
}

fn panic_response(_panic: Box<dyn Any + Send + 'static>) -> Response {
    tracing::error!("request handler panicked");
    GatewayError::Internal.into_response()
}

async fn timeout_response(_error: tower::BoxError) -> GatewayError {
    tracing::warn!("request exceeded the gateway timeout");
    GatewayError::Timeout
}

async fn limit_body(State(max): State<usize>, request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > max as u64) {
        return GatewayError::PayloadTooLarge.into_response();
    }
    let request = request.map(|body| Body::new(http_body_util::Limited::new(body, max)));
    next.run(request).await
}
