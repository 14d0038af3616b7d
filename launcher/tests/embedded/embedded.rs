//! The embedded binary as a user runs it: it prints `MCP_URL=` and
//! `MCP_TOKEN=`, and the official Python SDK client lists tools and reads
//! orders with them; SIGTERM stops it cleanly.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use chataigne_tests::process::{start_embedded, start_embedded_with};
use chataigne_tests::{SdkClients, TempDir};

#[test]
fn embedded_binary_prints_a_working_url_and_token() {
    let data = TempDir::new("embedded");
    let (mut child, start) = start_embedded(Path::new(env!("CARGO_BIN_EXE_chataigne")), &data.0);
    assert!(
        start.curl.starts_with("curl "),
        "third line is a curl command: {}",
        start.curl
    );
    let (url, token) = (start.url, start.token);
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp/v1"));
    assert_eq!(start.profile, "default");
    assert!(
        start.issuer.starts_with("http://127.0.0.1:"),
        "{}",
        start.issuer
    );
    assert!(
        start.tool_service_grpc.starts_with("http://127.0.0.1:"),
        "{}",
        start.tool_service_grpc
    );
    assert!(
        start.tool_service_grpc != start.issuer && !url.starts_with(&start.issuer),
        "three distinct listeners"
    );

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listed: serde_json::Value = runtime.block_on(async {
        reqwest::Client::new()
            .post(&url)
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .json(&serde_json::json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}))
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .expect("gateway answers")
            .json()
            .await
            .expect("json body")
    });
    assert!(
        listed["result"]["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == "chataigne_orders_list")),
        "{listed}"
    );

    if let Some(clients) = SdkClients::find() {
        let (code, out, stderr) = clients.pyclient(
            &clients.python,
            &[
                &url,
                &token,
                "chataigne_orders_list",
                "{}",
                "--expect-protocol",
                "2025-11-25",
            ],
        );
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(
            out["call"]["structuredContent"]["data"]["orders"]
                .as_array()
                .map(Vec::len),
            Some(20)
        );
    }

    let pid = child.0.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let status = child.0.wait().unwrap();
    assert!(status.success(), "clean exit on SIGTERM: {status:?}");
}

/// `--profile google` serves the Connected Apps profile on the same endpoint:
/// no output schemas listed, each result's payload as JSON text, and fatal
/// failures as JSON-RPC errors with the platform's codes.
#[test]
fn embedded_binary_serves_the_connected_apps_profile_on_request() {
    let data = TempDir::new("embedded-google");
    let (_child, start) = start_embedded_with(
        Path::new(env!("CARGO_BIN_EXE_chataigne")),
        &data.0,
        &["--profile", "google"],
    );
    assert_eq!(start.profile, "google");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let post = |message: serde_json::Value| {
        runtime.block_on(async {
            reqwest::Client::new()
                .post(&start.url)
                .bearer_auth(&start.token)
                .header("accept", "application/json, text/event-stream")
                .json(&message)
                .timeout(Duration::from_secs(30))
                .send()
                .await
                .expect("gateway answers")
                .json::<serde_json::Value>()
                .await
                .expect("json body")
        })
    };
    let listed = post(serde_json::json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}));
    let tools = listed["result"]["tools"].as_array().expect("tools");
    assert!(!tools.is_empty());
    assert!(
        tools.iter().all(|t| t.get("outputSchema").is_none()),
        "{listed}"
    );
    let called = post(
        serde_json::json!({"jsonrpc":"2.0","id":2,"method":"tools/call",
        "params":{"name":"chataigne_orders_list","arguments":{"limit":2}}}),
    );
    let result = &called["result"];
    assert!(result.get("structuredContent").is_none(), "{called}");
    let payload: serde_json::Value =
        serde_json::from_str(result["content"][0]["text"].as_str().expect("text")).unwrap();
    assert_eq!(payload["data"]["orders"].as_array().map(Vec::len), Some(2));
    assert!(payload["meta"]["request_id"].is_string());
}

#[test]
fn dash_dash_version_prints_the_version_and_the_revision() {
    chataigne_common::testing::assert_prints_its_version(env!("CARGO_BIN_EXE_chataigne"));
}
