//! The internal listener: `/healthz` (the process is up) and `/readyz` (both
//! gRPC backends answer). Never mounted on the public listener.

use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::response::Response;
use axum::routing::get;
use http::StatusCode;
use serde_json::json;

use crate::reply;
use crate::state::SharedState;

const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

async fn healthz() -> Response {
    reply::json(
        StatusCode::OK,
        json!({"status": "ok"}).to_string().into_bytes(),
    )
}

/// Auth-service: a TCP connection to its gRPC port. Tool-service: the
/// catalogue through the cache (a `ListTools` call once per TTL).
async fn readyz(State(state): State<SharedState>) -> Response {
    let auth = async {
        tokio::time::timeout(
            PROBE_TIMEOUT,
            tokio::net::TcpStream::connect(state.backends.auth_authority.as_str()),
        )
        .await
        .is_ok_and(|connected| connected.is_ok())
    };
    let tools = async {
        tokio::time::timeout(PROBE_TIMEOUT, state.catalog.snapshot())
            .await
            .is_ok_and(|snapshot| snapshot.is_ok())
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

/// Routes of the internal listener.
pub fn router(state: SharedState) -> Router {
    Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(state)
}
