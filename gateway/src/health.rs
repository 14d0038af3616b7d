//! The internal listener: `/healthz` (the process is up), `/readyz` (both
//! gRPC backends report SERVING on the standard health service) and
//! `/metrics` (the gateway's Prometheus metrics). Never mounted on the public
//! listener.

use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use chataigne_common::balance::Balanced;
use http::StatusCode;
use serde_json::json;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus as Wire;
use tonic_health::pb::health_client::HealthClient;

use crate::reply;
use crate::state::SharedState;

const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

async fn healthz() -> Response {
    reply::json(
        StatusCode::OK,
        json!({"status": "ok"}).to_string().into_bytes(),
    )
}

/// Ready when both backends answer `grpc.health.v1.Health/Check` SERVING for
/// the whole server (NOT_SERVING while they drain), and the tool catalogue
/// loads through the cache (a `ListTools` call once per TTL).
async fn readyz(State(state): State<SharedState>) -> Response {
    let auth = serving(state.backends.auth_health.clone());
    let tools = async {
        let catalog = async {
            tokio::time::timeout(PROBE_TIMEOUT, state.catalog.snapshot())
                .await
                .is_ok_and(|snapshot| snapshot.is_ok())
        };
        let (up, catalog) = tokio::join!(serving(state.backends.tools_health.clone()), catalog);
        up && catalog
    };
    let (auth, tools) = tokio::join!(auth, tools);
    let (status, label) = if auth && tools {
        (StatusCode::OK, "ready")
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "not_ready")
    };
    let body = json!({"status": label, "auth_service": auth, "tool_service": tools});
    reply::json(status, body.to_string().into_bytes())
}

/// Whether a backend reports its overall status (empty service name) SERVING
/// within the probe timeout.
async fn serving(mut client: HealthClient<Balanced>) -> bool {
    let check = client.check(HealthCheckRequest {
        service: String::new(),
    });
    tokio::time::timeout(PROBE_TIMEOUT, check)
        .await
        .is_ok_and(|answer| {
            answer.is_ok_and(|answer| answer.into_inner().status == Wire::Serving as i32)
        })
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
