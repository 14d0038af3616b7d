//! The operator's run-time write switch through the real stack, on both
//! backends: writes work; once the operator disables writes, the next write
//! over MCP is refused with `MCP_WRITES_DISABLED` in the error envelope and
//! a typed gRPC write by a service account is refused with the same code,
//! while reads keep working and `tools/list` (after the catalogue TTL) hides
//! every write tool; once enabled again, writes work at the next call.

use chataigne_tests::envelope;
use std::time::Duration;

use chataigne_common::ErrorCode;
use chataigne_common::codes::decode_status;
use chataigne_common::testing::eventually_every;
use chataigne_proto::tools::v1::{
    GetLocationStatusRequest, IntakeStatus, UpdateLocationStatusRequest,
    locations_client::LocationsClient,
};
use chataigne_tests::{Backend, Sandbox, demo};
use serde_json::{Value, json};

/// The gateway's catalogue TTL in this test: `tools/list` follows the switch
/// within this delay.
const CATALOG_TTL_SECS: u64 = 1;

fn after_catalog_ttl() -> Duration {
    Duration::from_millis(CATALOG_TTL_SECS * 1000 + 300)
}

/// The intake status (`accepting` or `paused`) of `location` over MCP.
async fn intake(sandbox: &Sandbox, token: &str, location: &str) -> String {
    let result = sandbox
        .call_tool(
            token,
            "chataigne_location_status_get",
            json!({"location_id": location}),
        )
        .await;
    assert_eq!(result["isError"], false, "{result}");
    result["structuredContent"]["data"]["status"]["status"]
        .as_str()
        .unwrap_or_else(|| panic!("an intake status: {result}"))
        .to_owned()
}

fn other(status: &str) -> &'static str {
    if status == "accepting" {
        "paused"
    } else {
        "accepting"
    }
}

/// `tools/call` of the intake toggle from `current`; returns HTTP status and body.
async fn toggle_over_mcp(
    sandbox: &Sandbox,
    token: &str,
    location: &str,
    current: &str,
) -> (u16, Value) {
    sandbox
        .mcp(
            token,
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
                "name": "chataigne_location_status_update",
                "arguments": {"location_id": location, "status": other(current),
                              "expected_status": current}}}),
        )
        .await
}

fn with_credential<T>(message: T, credential: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {credential}").parse().expect("ascii"),
    );
    request
}

fn intake_pb(status: &str) -> IntakeStatus {
    if status == "accepting" {
        IntakeStatus::Accepting
    } else {
        IntakeStatus::Paused
    }
}

/// The typed intake toggle of `location` from `current`, as an internal caller.
async fn toggle_over_grpc(
    sandbox: &Sandbox,
    credential: &str,
    location: &str,
    current: &str,
) -> Result<String, tonic::Status> {
    let mut client = LocationsClient::connect(sandbox.tools_grpc_url.clone())
        .await
        .expect("tool-service reachable");
    let response = client
        .update_location_status(with_credential(
            UpdateLocationStatusRequest {
                location_id: location.to_owned(),
                status: intake_pb(other(current)) as i32,
                expected_status: intake_pb(current) as i32,
                ..UpdateLocationStatusRequest::default()
            },
            credential,
        ))
        .await?
        .into_inner();
    let status = response.status.expect("a status");
    Ok(if status.status == IntakeStatus::Accepting as i32 {
        "accepting".to_owned()
    } else {
        "paused".to_owned()
    })
}

/// The typed intake read of `location`, as an internal caller.
async fn intake_over_grpc(
    sandbox: &Sandbox,
    credential: &str,
    location: &str,
) -> Result<i32, tonic::Status> {
    let mut client = LocationsClient::connect(sandbox.tools_grpc_url.clone())
        .await
        .expect("tool-service reachable");
    let response = client
        .get_location_status(with_credential(
            GetLocationStatusRequest {
                location_id: location.to_owned(),
                ..GetLocationStatusRequest::default()
            },
            credential,
        ))
        .await?
        .into_inner();
    Ok(response.status.expect("a status").status)
}

/// (read tools, write tools) of `tools/list`, told apart by `readOnlyHint`.
async fn listed(sandbox: &Sandbox, token: &str) -> (Vec<String>, Vec<String>) {
    let (status, body) = sandbox
        .mcp(
            token,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let tools = body["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tool list: {body}"));
    let (mut reads, mut writes) = (Vec::new(), Vec::new());
    for tool in tools {
        let name = tool["name"].as_str().unwrap_or_default().to_owned();
        if tool["annotations"]["readOnlyHint"] == true {
            reads.push(name);
        } else {
            writes.push(name);
        }
    }
    (reads, writes)
}

async fn write_switch(backend: Backend) {
    let Some(sandbox) = Sandbox::start_with(backend, |config| {
        config.gateway.tool_catalog_ttl_secs = CATALOG_TTL_SECS;
    })
    .await
    else {
        return;
    };
    let token = sandbox.token(demo::USER_MANAGER).await;
    let (client_id, secret) = sandbox
        .service_account(
            "bistro-intake",
            "locationStatusSettings.read locationStatusSettings.write",
            demo::ORG_BISTRO,
            "manager",
        )
        .await;
    let service = sandbox.client_credentials_token(&client_id, &secret).await;

    // Writes work: over MCP (Paris) and over the typed API (Lyon).
    let status = sandbox
        .tools
        .writes_status()
        .await
        .expect("switch readable");
    assert!(status.enabled, "writes start enabled: {status:?}");
    let mut paris = intake(&sandbox, &token, demo::LOC_PARIS).await;
    let (http, body) = toggle_over_mcp(&sandbox, &token, demo::LOC_PARIS, &paris).await;
    assert_eq!(http, 200, "{body}");
    assert_eq!(body["result"]["isError"], false, "{body}");
    paris = other(&paris).to_owned();
    assert_eq!(intake(&sandbox, &token, demo::LOC_PARIS).await, paris);
    let mut lyon = intake(&sandbox, &token, demo::LOC_LYON).await;
    lyon = toggle_over_grpc(&sandbox, &service, demo::LOC_LYON, &lyon)
        .await
        .expect("typed write allowed");
    assert_eq!(intake(&sandbox, &token, demo::LOC_LYON).await, lyon);
    let (reads, writes) = listed(&sandbox, &token).await;
    assert!(
        writes.contains(&"chataigne_location_status_update".to_owned()),
        "{writes:?}"
    );

    // The operator disables writes: the next MCP write is refused.
    let switch = sandbox
        .tools
        .disable_writes(Some("menu import"))
        .await
        .expect("disabled");
    assert!(!switch.enabled);
    assert_eq!(switch.reason.as_deref(), Some("menu import"));
    assert!(switch.changed_at_ms.is_some());
    let (http, body) = toggle_over_mcp(&sandbox, &token, demo::LOC_PARIS, &paris).await;
    assert_eq!(http, 200, "{body}");
    let result = &body["result"];
    assert_eq!(result["isError"], true, "{body}");
    let error = &envelope(result)["data"]["error"];
    assert_eq!(error["code"], "MCP_WRITES_DISABLED", "{body}");
    assert_eq!(error["category"], "authorization", "{body}");
    assert_eq!(error["retryable"], true, "{body}");
    assert_eq!(
        error["message"],
        ErrorCode::WritesDisabled.default_message(),
        "{body}"
    );
    let request_id = error["request_id"].as_str().unwrap_or_default();
    assert!(!request_id.is_empty(), "{body}");
    assert_eq!(envelope(result)["meta"]["request_id"], request_id, "{body}");
    assert!(
        !body.to_string().contains("menu import"),
        "the operator's reason stays internal: {body}"
    );
    // Nothing was written, and reads keep working over MCP.
    assert_eq!(intake(&sandbox, &token, demo::LOC_PARIS).await, paris);

    // A typed write by the service account is refused with the same code;
    // its reads still work.
    let refused = toggle_over_grpc(&sandbox, &service, demo::LOC_LYON, &lyon)
        .await
        .expect_err("typed write refused");
    assert_eq!(refused.code(), tonic::Code::Unavailable, "{refused:?}");
    assert_eq!(decode_status(&refused).code, ErrorCode::WritesDisabled);
    assert_eq!(
        intake_over_grpc(&sandbox, &service, demo::LOC_LYON)
            .await
            .expect("typed read allowed"),
        intake_pb(&lyon) as i32
    );

    // Once the catalogue is fetched again, tools/list hides every write tool.
    eventually_every(
        "tools/list hides every write tool",
        after_catalog_ttl() * 2,
        Duration::from_millis(100),
        || async { listed(&sandbox, &token).await.1.is_empty() },
    )
    .await;
    let (reads_off, _) = listed(&sandbox, &token).await;
    assert_eq!(reads_off, reads, "read tools stay listed");

    // Enabled again: the next write works on both paths, without waiting
    // for the catalogue.
    let switch = sandbox.tools.enable_writes().await.expect("enabled");
    assert!(switch.enabled);
    let (http, body) = toggle_over_mcp(&sandbox, &token, demo::LOC_PARIS, &paris).await;
    assert_eq!(http, 200, "{body}");
    assert_eq!(body["result"]["isError"], false, "{body}");
    paris = other(&paris).to_owned();
    assert_eq!(intake(&sandbox, &token, demo::LOC_PARIS).await, paris);
    lyon = toggle_over_grpc(&sandbox, &service, demo::LOC_LYON, &lyon)
        .await
        .expect("typed write allowed again");
    assert_eq!(intake(&sandbox, &token, demo::LOC_LYON).await, lyon);
    eventually_every(
        "write tools listed again",
        after_catalog_ttl() * 2,
        Duration::from_millis(100),
        || async { listed(&sandbox, &token).await.1 == writes },
    )
    .await;

    sandbox.shutdown().await;
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Backend::Sqlite,
    postgres: Some(Backend::Postgres),
    run: |backend| (backend),
    tests: [
        the_operator_write_switch_refuses_writes_until_enabled_again = write_switch,
    ],
}
