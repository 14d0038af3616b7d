//! The standard gRPC health service on both backends: `grpc.health.v1.Health/Check`
//! over the network reports the overall status (empty service name) SERVING
//! once the stack is up. (NOT_SERVING during shutdown is covered where the
//! health service is built, in the common crate.)

use chataigne_tests::{Backend, Sandbox};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

async fn overall_status(url: &str) -> i32 {
    let channel = tonic::transport::Endpoint::from_shared(url.to_owned())
        .expect("valid URL")
        .connect()
        .await
        .expect("backend reachable");
    HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .expect("Health/Check answers")
        .into_inner()
        .status
}

#[tokio::test]
async fn auth_service_reports_serving() {
    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let status = overall_status(&sandbox.auth_grpc_url).await;
    assert_eq!(status, ServingStatus::Serving as i32);
    sandbox.shutdown().await;
}

#[tokio::test]
async fn tool_service_reports_serving() {
    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let status = overall_status(&sandbox.tools_grpc_url).await;
    assert_eq!(status, ServingStatus::Serving as i32);
    sandbox.shutdown().await;
}

#[tokio::test]
async fn unknown_service_name_is_not_found() {
    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let channel = tonic::transport::Endpoint::from_shared(sandbox.tools_grpc_url.clone())
        .expect("valid URL")
        .connect()
        .await
        .expect("backend reachable");
    let refused = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: "no.such.Service".to_owned(),
        })
        .await
        .expect_err("unknown service");
    assert_eq!(refused.code(), tonic::Code::NotFound);
    sandbox.shutdown().await;
}

/// The gateway's readiness probe asks both backends' health services.
#[tokio::test]
async fn gateway_readiness_reflects_backend_health() {
    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let response = reqwest::get(format!("{}/readyz", sandbox.gateway_internal_url))
        .await
        .expect("internal listener reachable");
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.expect("JSON body");
    assert_eq!(body["auth_service"], true, "{body}");
    assert_eq!(body["tool_service"], true, "{body}");
    sandbox.shutdown().await;
}
