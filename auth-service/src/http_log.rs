//! One info log line and the metrics of every authorization-server HTTP
//! request: the route template (never the query string, which carries codes
//! and state), the status, the OAuth `error` code of an error response, and
//! the latency. Bodies, cookies, emails and secrets are never read here.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::StatusCode;
use tracing::Instrument;

use crate::metrics::{AuthMetrics, OAuthErrorCode};

/// The sign-in form's route: a 401 there is a refused sign-in.
const LOGIN_PATH: &str = "/authorize/login";

/// Middleware around the HTTP routes.
pub async fn observe(
    State(metrics): State<Arc<AuthMetrics>>,
    request: Request,
    next: Next,
) -> Response {
    let started = Instant::now();
    let path = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "unmatched".to_owned(), |path| path.as_str().to_owned());
    let method = request.method().clone();
    // The request's HTTP server span (its log line carries its trace ids).
    let span = chataigne_common::trace_context::http_server_span(&method, Some(&path));
    let response = next.run(request).instrument(span.clone()).await;
    let took = started.elapsed();
    let status = response.status();
    chataigne_common::trace_context::record_http_status(&span, status);
    let _in_span = span.enter();
    let oauth_error = response
        .extensions()
        .get::<OAuthErrorCode>()
        .map(|code| code.0);
    metrics.http(&path, status.as_u16(), oauth_error, took);
    if path == LOGIN_PATH && status == StatusCode::UNAUTHORIZED {
        metrics.sign_in_failure();
    }
    tracing::info!(
        method = %method,
        path = %path,
        status = status.as_u16(),
        error = oauth_error.unwrap_or("-"),
        latency_ms = took.as_secs_f64() * 1000.0,
        "oauth request"
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::response::IntoResponse;
    use axum::routing::post;

    #[tokio::test]
    async fn refused_sign_ins_and_oauth_errors_are_counted_by_route() {
        let metrics = Arc::new(AuthMetrics::new().unwrap());
        let router = Router::new()
            .route(
                LOGIN_PATH,
                post(|| async { StatusCode::UNAUTHORIZED.into_response() }),
            )
            .route(
                "/token",
                post(|| async {
                    let mut response = StatusCode::BAD_REQUEST.into_response();
                    response
                        .extensions_mut()
                        .insert(OAuthErrorCode("invalid_grant"));
                    response
                }),
            )
            .layer(axum::middleware::from_fn_with_state(
                metrics.clone(),
                observe,
            ));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let server = tokio::spawn(async move { axum::serve(listener, router).await });
        // The process-wide TLS provider the service installs at start.
        let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
        let client = reqwest::Client::new();
        for path in [LOGIN_PATH, "/token?code=canary-secret", "/nowhere"] {
            client.post(format!("{base}{path}")).send().await.unwrap();
        }
        server.abort();
        let text = metrics.render();
        assert!(
            text.contains("chataigne_auth_sign_in_failures_total 1"),
            "{text}"
        );
        assert!(
            text.contains(
                "chataigne_auth_oauth_errors_total{endpoint=\"/token\",error=\"invalid_grant\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "chataigne_auth_http_request_duration_seconds_count{path=\"/authorize/login\",status=\"401\"} 1"
            ),
            "{text}"
        );
        assert!(!text.contains("canary"), "never the query: {text}");
        assert!(
            !text.contains("/nowhere"),
            "unrouted paths are not labels: {text}"
        );
    }
}
