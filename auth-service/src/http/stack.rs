//! The authorization server's public middleware stack, declared in one
//! function, outermost layer first, each with the reason it is there. The
//! connection discipline in front of it (header read timeout, head bounds,
//! connection caps, HTTP/2 limits) is `chataigne_common::http_server`'s.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::middleware::{self, Next};
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use http_body_util::{BodyExt, LengthLimitError};
use serde_json::json;
use tokio::sync::Semaphore;
use tower::ServiceBuilder;
use tower_http::body::Limited;
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::sensitive_headers::{
    SetSensitiveRequestHeadersLayer, SetSensitiveResponseHeadersLayer,
};
use tower_http::timeout::TimeoutLayer;

use chataigne_common::hardening;
use tower_http::set_header::SetResponseHeaderLayer;

use crate::config::HttpServerConfig;
use crate::http_log;
use crate::metrics::AuthMetrics;

/// Wraps the authorization server's routes in its layers; `hsts`: the
/// `Strict-Transport-Security` of every answer, when it applies
/// (`chataigne_common::hardening::Hsts`).
pub fn public(
    routes: Router,
    config: &HttpServerConfig,
    metrics: Arc<AuthMetrics>,
    hsts: Option<HeaderValue>,
) -> Router {
    let body_timeout = config.connections.body_read_timeout();
    routes.layer(
        ServiceBuilder::new()
            // Every answer, the refusals of the layers below included:
            // `X-Content-Type-Options: nosniff`, so no browser reads a JSON
            // answer or an error as a script or a page.
            .layer(SetResponseHeaderLayer::overriding(
                header::X_CONTENT_TYPE_OPTIONS,
                hardening::nosniff(),
            ))
            // Every answer, when the listener serves TLS or the issuer is
            // https: `Strict-Transport-Security` for a year, so a browser
            // never signs in over plain HTTP to this host again.
            .option_layer(hsts.map(|hsts| {
                SetResponseHeaderLayer::overriding(header::STRICT_TRANSPORT_SECURITY, hsts)
            }))
            // Every answer that does not say otherwise (only the public
            // JWKS and metadata documents do): `Cache-Control: no-store`, so
            // no token, consent or refusal is kept by a cache, the refusals
            // of the layers below included.
            .layer(SetResponseHeaderLayer::if_not_present(
                header::CACHE_CONTROL,
                HeaderValue::from_static("no-store"),
            ))
            // Every HTML page (sign-in, consent, errors): a CSP with
            // `frame-ancestors 'none'`, `X-Frame-Options` and
            // `Referrer-Policy`, so no page is framed (clickjacking) and no
            // authorization request leaks in a referrer.
            .layer(middleware::from_fn(hardening::html_page_policies))
            // Marks credentials (client secrets in `Authorization: Basic`,
            // the sign-in cookie) and the cookies this server sets as
            // sensitive, so no layer below (traces, debug output) prints them.
            .layer(SetSensitiveRequestHeadersLayer::new([
                header::AUTHORIZATION,
                header::PROXY_AUTHORIZATION,
                header::COOKIE,
            ]))
            .layer(SetSensitiveResponseHeadersLayer::new([header::SET_COOKIE]))
            // One info line and the latency metrics per request, whatever
            // answers it, the refusals of the layers below included.
            .layer(middleware::from_fn_with_state(metrics, http_log::observe))
            // A panic becomes an OAuth `server_error` (500) without detail,
            // not a dropped connection.
            .layer(CatchPanicLayer::custom(panic_response))
            // Past `max_concurrent_requests` a request is refused at once
            // (503, `Retry-After`, `temporarily_unavailable`) instead of
            // queueing: sign-ins hash with Argon2, heavy in CPU and memory.
            // One semaphore shared by every route (tower's `ConcurrencyLimit`
            // is not `Sync`, which axum's route layers must be).
            .layer(middleware::from_fn_with_state(
                Arc::new(Semaphore::new(config.max_concurrent_requests)),
                shed_over_limit,
            ))
            // Refuses a declared oversized body before reading it and caps a
            // streamed one (413).
            .layer(RequestBodyLimitLayer::new(config.max_body_bytes))
            .map_request(|request: Request<Limited<Body>>| request.map(Body::new))
            // Bounds the whole request (body read and handling) so no client
            // holds a slot forever: 503 past it.
            .layer(TimeoutLayer::with_status_code(
                StatusCode::SERVICE_UNAVAILABLE,
                Duration::from_millis(config.request_timeout_ms),
            ))
            // Reads the whole body within the body read timeout before any
            // handler runs: a stalled or trickled body is answered 408.
            .layer(middleware::from_fn_with_state(
                body_timeout,
                read_body_within,
            )),
    )
}

fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    super::no_store_json(
        status,
        json!({"error": error, "error_description": description}).to_string(),
    )
}

fn panic_response(_panic: Box<dyn Any + Send + 'static>) -> Response {
    tracing::error!("authorization server handler panicked");
    oauth_error(
        StatusCode::INTERNAL_SERVER_ERROR,
        "server_error",
        "internal error",
    )
}

/// Serves the request while holding one of the semaphore's permits, or
/// refuses it at once when none is left.
async fn shed_over_limit(
    State(in_flight): State<Arc<Semaphore>>,
    request: Request,
    next: Next,
) -> Response {
    let Ok(_permit) = in_flight.try_acquire_owned() else {
        return overloaded_response();
    };
    next.run(request).await
}

fn overloaded_response() -> Response {
    tracing::warn!("request refused: too many requests in progress");
    let mut response = oauth_error(
        StatusCode::SERVICE_UNAVAILABLE,
        "temporarily_unavailable",
        "too many requests in progress: retry shortly",
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// Buffers the request body within `within`; 408 (and the connection
/// closed) when it does not arrive in time, 413 past the body limit.
async fn read_body_within(
    State(within): State<Duration>,
    request: Request,
    next: Next,
) -> Response {
    let (parts, body) = request.into_parts();
    let collected = match tokio::time::timeout(within, body.collect()).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(error)) if is_length_limit(&error) => {
            return oauth_error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "invalid_request",
                "request body too large",
            );
        }
        Ok(Err(_)) => {
            return oauth_error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "the request body could not be read",
            );
        }
        Err(_elapsed) => {
            tracing::info!("request refused: body not received in time");
            let mut response = oauth_error(
                StatusCode::REQUEST_TIMEOUT,
                "invalid_request",
                "the request body did not arrive in time",
            );
            response
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            return response;
        }
    };
    next.run(Request::from_parts(parts, Body::from(collected)))
        .await
}

/// Whether `error` or any of its sources is a body length limit.
fn is_length_limit(error: &axum::Error) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(error) = current {
        if error.is::<LengthLimitError>() {
            return true;
        }
        current = error.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::{get, post};
    use tower::ServiceExt;

    fn config() -> HttpServerConfig {
        let mut config = HttpServerConfig {
            request_timeout_ms: 600,
            max_body_bytes: 64,
            max_concurrent_requests: 1,
            ..HttpServerConfig::default()
        };
        config.connections.body_read_timeout_ms = 200;
        config
    }

    fn app() -> Router {
        let routes = Router::new()
            .route("/echo", post(|body: String| async move { body }))
            .route(
                "/slow",
                get(|| async {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    "late"
                }),
            )
            .route(
                "/panic",
                get(|| async {
                    if std::hint::black_box(true) {
                        panic!("boom with a secret");
                    }
                    "never"
                }),
            );
        public(
            routes,
            &config(),
            Arc::new(AuthMetrics::new().unwrap()),
            None,
        )
    }

    async fn text(response: Response) -> String {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[tokio::test]
    async fn bodies_are_bounded_in_size_and_read_time() {
        let ok = app()
            .oneshot(Request::post("/echo").body(Body::from("hello")).unwrap())
            .await
            .unwrap();
        assert_eq!(ok.status(), StatusCode::OK);
        assert_eq!(text(ok).await, "hello");

        let big = app()
            .oneshot(
                Request::post("/echo")
                    .body(Body::from("x".repeat(100)))
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(big.status(), StatusCode::PAYLOAD_TOO_LARGE);

        // A body that never ends.
        let stalled = futures::stream::pending::<Result<axum::body::Bytes, std::io::Error>>();
        let response = app()
            .oneshot(
                Request::post("/echo")
                    .body(Body::from_stream(stalled))
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::REQUEST_TIMEOUT);
        assert!(text(response).await.contains("invalid_request"));
    }

    #[tokio::test(start_paused = true)]
    async fn slow_requests_end_503_and_over_the_limit_others_are_refused_at_once() {
        let app = app();
        let slow = tokio::spawn(
            app.clone()
                .oneshot(Request::get("/slow").body(Body::empty()).unwrap()),
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        let started = std::time::Instant::now();
        let refused = app
            .clone()
            .oneshot(Request::post("/echo").body(Body::from("x")).unwrap())
            .await
            .unwrap();
        assert!(started.elapsed() < Duration::from_millis(300), "at once");
        assert_eq!(refused.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.headers()[header::RETRY_AFTER], "1");
        assert!(text(refused).await.contains("temporarily_unavailable"));
        let slow = slow.await.unwrap().unwrap();
        assert_eq!(
            slow.status(),
            StatusCode::SERVICE_UNAVAILABLE,
            "request timeout"
        );
        let again = app
            .oneshot(Request::post("/echo").body(Body::from("x")).unwrap())
            .await
            .unwrap();
        assert_eq!(again.status(), StatusCode::OK, "the slot is back");
    }

    #[tokio::test]
    async fn a_panic_is_a_safe_server_error() {
        let response = app()
            .oneshot(Request::get("/panic").body(Body::empty()).unwrap())
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::INTERNAL_SERVER_ERROR);
        let body = text(response).await;
        assert!(body.contains("server_error"), "{body}");
        assert!(!body.contains("secret"), "{body}");
    }

    #[tokio::test]
    async fn credentials_are_marked_sensitive_for_the_layers_below() {
        let routes = Router::new().route(
            "/seen",
            get(|request: Request| async move {
                let sensitive = [header::AUTHORIZATION, header::COOKIE]
                    .iter()
                    .all(|name| request.headers()[name].is_sensitive());
                let mut response = Response::new(Body::from(sensitive.to_string()));
                response
                    .headers_mut()
                    .insert(header::SET_COOKIE, HeaderValue::from_static("s=1"));
                response
            }),
        );
        let app = public(
            routes,
            &config(),
            Arc::new(AuthMetrics::new().unwrap()),
            None,
        );
        let response = app
            .oneshot(
                Request::get("/seen")
                    .header(header::AUTHORIZATION, "Basic c2VjcmV0")
                    .header(header::COOKIE, "session=secret")
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert!(response.headers()[header::SET_COOKIE].is_sensitive());
        assert_eq!(text(response).await, "true");
    }
}
