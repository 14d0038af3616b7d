//! The internal listener: `/healthz` (the process is up; never depends on a
//! dependency), `/readyz` (the replica can serve calls under its configured
//! policy: both gRPC backends SERVING on the standard health service, which
//! they report only while their database answers, and — only when the rate
//! limits fail closed — Redis answering) and `/metrics` (the gateway's
//! Prometheus metrics). Never mounted on the public listener.

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use http::StatusCode;
use serde_json::json;

use chataigne_common::balance::Balanced;
use tonic_health::pb::health_client::HealthClient;

use crate::config::OnStoreFailure;
use crate::ops::breaker::{self, Breaker};
use crate::reply;
use crate::state::SharedState;

async fn healthz() -> Response {
    reply::json(
        StatusCode::OK,
        json!({"status": "ok"}).to_string().into_bytes(),
    )
}

/// Ready when the replica can serve calls: both backends' breakers closed
/// and each SERVING on `grpc.health.v1` now (which they report only while
/// their database answers). Redis down is `degraded` (200: calls are served
/// without rate limits) under `rate_limits.on_store_failure = fail_open`,
/// and not ready (503: calls are refused) under `fail_closed`. The body
/// names each dependency (`redis` is `null` without Redis). An open breaker
/// answers at once.
async fn readyz(State(state): State<SharedState>) -> Response {
    let backends = &state.backends;
    let probe = |breaker: &Breaker, client: &HealthClient<Balanced>| {
        let open = breaker.is_open();
        let client = client.clone();
        async move { !open && breaker::serving(client).await }
    };
    let redis = async {
        match &backends.redis {
            None => None,
            Some(redis) => Some(!redis.breaker().is_open() && redis.ping().await),
        }
    };
    let (auth, tools, redis) = tokio::join!(
        probe(&backends.auth_breaker, &backends.auth_health),
        probe(&backends.tools_breaker, &backends.tools_health),
        redis
    );
    let fail_closed = state.config.rate_limits.on_store_failure == OnStoreFailure::FailClosed;
    let (status, label) = match (auth && tools, redis.unwrap_or(true), fail_closed) {
        (true, true, _) => (StatusCode::OK, "ready"),
        (true, false, false) => (StatusCode::OK, "degraded"),
        _ => (StatusCode::SERVICE_UNAVAILABLE, "not_ready"),
    };
    let body =
        json!({"status": label, "auth_service": auth, "tool_service": tools, "redis": redis});
    reply::json(status, body.to_string().into_bytes())
}

/// The gateway's metrics in the Prometheus text format.
async fn metrics(State(state): State<SharedState>) -> Response {
    chataigne_common::metrics::response(state.metrics.render())
}

/// Routes of the internal listener.
pub fn router(state: SharedState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .with_state(state)
}
