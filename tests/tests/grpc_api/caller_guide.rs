//! The Python session of the gRPC caller guide (`docs/grpc.md`,
//! `tests/clients/grpc_session.py`) against the running stack: a service
//! account created as the README shows, with the scopes the guide gives it,
//! gets a token from `/token`, lists the tool-service's services with
//! reflection, makes typed calls built from the reflected schemas, and reads
//! the details of an INVALID_ARGUMENT; the guide's `buf curl` commands do
//! the same from the shell; and the rich details repeat the status's code
//! and message, as the gRPC status libraries the guide uses require.

use std::process::Command;

use base64::Engine;
use base64::engine::general_purpose::STANDARD_NO_PAD;
use chataigne_proto::tools::v1::{ListLocationsRequest, restaurant_client::RestaurantClient};
use chataigne_tests::{Backend, Sandbox, demo, grpc_tools};
use prost::Message;
use serde_json::Value;
use tonic_types::pb::{BadRequest, ErrorInfo};

/// The scopes docs/grpc.md and the README give the reporting service account.
const GUIDE_SCOPES: &str = "businessOrganization.read location.read orders.read";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guides_python_session_lists_services_calls_typed_rpcs_and_reads_error_details() {
    let Some(python) = grpc_tools::grpc_python() else {
        return;
    };
    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let (client_id, secret) = sandbox
        .service_account("reporting", GUIDE_SCOPES, demo::ORG_BISTRO, "analyst")
        .await;
    let target = sandbox
        .tools_grpc_url
        .trim_start_matches("http://")
        .to_owned();
    let token_url = format!("{}/token", sandbox.auth_http_url);
    let script = grpc_tools::grpc_session_script();
    let output = tokio::task::spawn_blocking(move || {
        Command::new(python)
            .arg(script)
            .args(["--token-url", &token_url, "--client-id", &client_id])
            .args(["--target", &target])
            .env("CHATAIGNE_CLIENT_SECRET", secret)
            .output()
            .expect("python runs")
    })
    .await
    .expect("session ends");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "grpc_session.py failed: {stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("a JSON report");

    let services: Vec<&str> = report["services"]
        .as_array()
        .expect("services")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    for service in [
        "chataigne.tools.v1.Restaurant",
        "chataigne.tools.v1.Locations",
        "grpc.health.v1.Health",
        "grpc.reflection.v1alpha.ServerReflection",
    ] {
        assert!(
            services.contains(&service),
            "{service} listed: {services:?}"
        );
    }

    // The service account belongs to Bistro only.
    let organizations = report["organizations"].as_array().expect("organizations");
    let ids: Vec<&str> = organizations
        .iter()
        .filter_map(|o| o["id"].as_str())
        .collect();
    assert_eq!(ids, [demo::ORG_BISTRO], "{report}");
    let locations = report["locations"].as_array().expect("locations");
    assert!(!locations.is_empty());
    for location in locations {
        assert_eq!(location["organization_id"], demo::ORG_BISTRO, "{location}");
    }
    let first_location = &locations[0]["id"];
    let orders = report["orders"].as_array().expect("orders");
    assert!(!orders.is_empty(), "the demo location has orders: {report}");
    assert!(orders.len() <= 3, "the page limit is kept");
    for order in orders {
        assert_eq!(&order["location_id"], first_location, "{order}");
    }

    // An empty required field: INVALID_ARGUMENT with ErrorInfo and BadRequest.
    let refused = &report["invalid_argument"];
    assert_eq!(refused["code"], "INVALID_ARGUMENT", "{refused}");
    assert_eq!(refused["reason"], "MCP_INVALID_ARGUMENTS", "{refused}");
    assert_eq!(refused["domain"], "chataigne.mcp", "{refused}");
    let fields: Vec<&str> = refused["violations"]
        .as_array()
        .map(|v| v.iter().filter_map(|v| v["field"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(fields, ["organization_id"], "{refused}");
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guides_python_session_without_the_secret_is_a_usage_error() {
    let Some(python) = grpc_tools::grpc_python() else {
        return;
    };
    let output = Command::new(python)
        .arg(grpc_tools::grpc_session_script())
        .args([
            "--token-url",
            "http://127.0.0.1:9/token",
            "--client-id",
            "x",
        ])
        .args(["--target", "127.0.0.1:9"])
        .env_remove("CHATAIGNE_CLIENT_SECRET")
        .output()
        .expect("python runs");
    assert_eq!(output.status.code(), Some(64));
    assert!(String::from_utf8_lossy(&output.stderr).contains("CHATAIGNE_CLIENT_SECRET"));
}

/// Runs `buf curl` (gRPC over HTTP/2 without TLS, schema from reflection)
/// with `args`; returns whether it succeeded, stdout and stderr.
fn buf_curl(buf: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(buf)
        .args(["curl", "--protocol", "grpc", "--http2-prior-knowledge"])
        .args(["--timeout", "10s"])
        .args(args)
        .env(
            "BUF_CACHE_DIR",
            std::env::temp_dir().join("chataigne-buf-cache"),
        )
        .output()
        .expect("buf runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_guides_buf_curl_commands_list_services_and_call_typed_rpcs() {
    let Some(buf) = grpc_tools::buf() else {
        return;
    };
    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let (client_id, secret) = sandbox
        .service_account("reporting", GUIDE_SCOPES, demo::ORG_BISTRO, "analyst")
        .await;
    let token = sandbox.client_credentials_token(&client_id, &secret).await;
    let url = sandbox.tools_grpc_url.clone();
    let authorization = format!("authorization: Bearer {token}");
    let (listed, called, refused) = tokio::task::spawn_blocking(move || {
        let listed = buf_curl(&buf, &["--list-services", &url]);
        let called = buf_curl(
            &buf,
            &[
                "-H",
                &authorization,
                "-d",
                r#"{"page": {"limit": 5}}"#,
                &format!("{url}/chataigne.tools.v1.Restaurant/ListOrganizations"),
            ],
        );
        let refused = buf_curl(
            &buf,
            &[
                "-H",
                &authorization,
                "-d",
                r#"{"organization_id": ""}"#,
                &format!("{url}/chataigne.tools.v1.Restaurant/ListLocations"),
            ],
        );
        (listed, called, refused)
    })
    .await
    .expect("buf ends");

    let (ok, services, stderr) = listed;
    assert!(ok, "buf curl --list-services: {stderr}");
    for service in ["chataigne.tools.v1.Restaurant", "grpc.health.v1.Health"] {
        assert!(
            services.lines().any(|l| l == service),
            "{service} in {services}"
        );
    }

    let (ok, answer, stderr) = called;
    assert!(ok, "ListOrganizations: {stderr}");
    let answer: Value = serde_json::from_str(&answer).expect("a JSON answer");
    assert_eq!(
        answer["organizations"][0]["id"],
        demo::ORG_BISTRO,
        "{answer}"
    );

    let (ok, _, error) = refused;
    assert!(!ok, "ListLocations without organization_id is refused");
    let error: Value = serde_json::from_str(&error).expect("a JSON error");
    assert_eq!(error["code"], "invalid_argument", "{error}");
    // Without the google.rpc schemas buf prints each detail's bytes.
    let detail = |kind: &str| -> Vec<u8> {
        let value = error["details"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|d| d["type"] == kind)
            .and_then(|d| d["value"].as_str())
            .unwrap_or_else(|| panic!("a {kind} detail: {error}"));
        STANDARD_NO_PAD
            .decode(value.trim_end_matches('='))
            .expect("base64 detail")
    };
    let info = ErrorInfo::decode(detail("google.rpc.ErrorInfo").as_slice()).expect("ErrorInfo");
    assert_eq!(info.reason, "MCP_INVALID_ARGUMENTS");
    let bad_request =
        BadRequest::decode(detail("google.rpc.BadRequest").as_slice()).expect("BadRequest");
    let fields: Vec<&str> = bad_request
        .field_violations
        .iter()
        .map(|v| v.field.as_str())
        .collect();
    assert_eq!(fields, ["organization_id"]);
    sandbox.shutdown().await;
}

/// The guide reads error details with `grpc_status.rpc_status.from_call`
/// (Python; Go's `status.FromError` and Java's `StatusProto` read the same
/// trailer): the `google.rpc.Status` in `grpc-status-details-bin` must
/// repeat the call's code and message, or the client refuses the details.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_details_repeat_the_status_code_and_message_as_grpc_status_clients_require() {
    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let (client_id, secret) = sandbox
        .service_account("reporting", GUIDE_SCOPES, demo::ORG_BISTRO, "analyst")
        .await;
    let token = sandbox.client_credentials_token(&client_id, &secret).await;
    let mut client = RestaurantClient::connect(sandbox.tools_grpc_url.clone())
        .await
        .expect("tool-service reachable");
    let mut request = tonic::Request::new(ListLocationsRequest::default());
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {token}").parse().expect("ascii"),
    );
    let refused = client
        .list_locations(request)
        .await
        .expect_err("organization_id is required");
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    let details = tonic_types::pb::Status::decode(refused.details()).expect("rich details");
    assert_eq!(details.code, tonic::Code::InvalidArgument as i32);
    assert_eq!(details.message, refused.message());
    sandbox.shutdown().await;
}
