//! The official Python MCP SDK (both client lines) drives the running stack:
//! initialize with protocol negotiation, tools/list, and tools/call reading
//! orders through gateway → auth-service → tool-service → storage.

use chataigne_tests::{Backend, Sandbox, SdkClients, demo};
use serde_json::Value;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_lists_tools_and_reads_orders() {
    let Some(clients) = SdkClients::find() else {
        return;
    };
    let sandbox = Sandbox::start(Backend::Sqlite)
        .await
        .expect("sqlite sandbox");
    let token = sandbox.token(demo::USER_MANAGER).await;
    let url = sandbox.mcp_url.clone();

    for (python, expected_protocol) in [
        (&clients.python, "2025-11-25"),
        (&clients.python_v1, "2025-11-25"),
    ] {
        let python = python.clone();
        let (url, token, clients_ref) = (url.clone(), token.clone(), &clients);
        let (code, out, stderr) = tokio::task::block_in_place(|| {
            clients_ref.pyclient(
                &python,
                &[
                    &url,
                    &token,
                    "chataigne_orders_list",
                    r#"{"limit": 5, "statuses": ["completed"]}"#,
                    "--expect-protocol",
                    expected_protocol,
                ],
            )
        });
        assert_eq!(code, 0, "pyclient failed: {stderr}\n{out}");
        assert_eq!(out["protocolVersion"], expected_protocol);
        assert_eq!(out["serverInfo"]["name"], "chataigne-mcp");
        let tools: Vec<&str> = out["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        for name in [
            "chataigne_organizations_list",
            "chataigne_locations_list",
            "chataigne_orders_list",
            "chataigne_order_get",
        ] {
            assert!(tools.contains(&name), "{name} listed: {tools:?}");
        }
        let call = &out["call"];
        assert_ne!(call["isError"], Value::Bool(true), "{call}");
        let orders = call["structuredContent"]["data"]["orders"]
            .as_array()
            .expect("orders");
        assert_eq!(orders.len(), 5);
        for order in orders {
            assert_eq!(order["status"], "completed");
            let location = order["location_id"].as_str().unwrap();
            assert!(
                demo::LOCATIONS
                    .iter()
                    .any(|l| l.id == location && l.organization_id == demo::ORG_BISTRO),
                "manager of Bistro only sees Bistro orders, got {location}"
            );
        }
        assert!(call["structuredContent"]["meta"]["next_cursor"].is_string());
        assert!(
            call["structuredContent"]["meta"]["request_id"]
                .as_str()
                .unwrap()
                .starts_with("req_")
        );
    }
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_without_a_token_is_refused() {
    let Some(clients) = SdkClients::find() else {
        return;
    };
    let sandbox = Sandbox::start(Backend::Sqlite)
        .await
        .expect("sqlite sandbox");
    let url = sandbox.mcp_url.clone();
    let (code, _, _) = tokio::task::block_in_place(|| {
        clients.pyclient(&clients.python, &[&url, "-", "chataigne_orders_list"])
    });
    assert_eq!(
        code, 1,
        "a call without a token fails at the transport (401)"
    );
    sandbox.shutdown().await;
}

/// The 2.x SDK's high-level client first probes the 2026-07-28 revision
/// (`server/discover` with that `MCP-Protocol-Version`); `/mcp/v1` refuses the
/// probe with a 400 and the client falls back cleanly to the 2025-11-25
/// `initialize` handshake, then lists and calls tools.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_auto_mode_falls_back_from_the_2026_probe() {
    let Some(clients) = SdkClients::find() else {
        return;
    };
    let sandbox = Sandbox::start(Backend::Sqlite)
        .await
        .expect("sqlite sandbox");
    let token = sandbox.token(demo::USER_MANAGER).await;
    let url = sandbox.mcp_url.clone();
    let (code, out, stderr) = tokio::task::block_in_place(|| {
        clients.pyclient(
            &clients.python,
            &[
                &url,
                &token,
                "chataigne_organizations_list",
                "{}",
                "--mode",
                "auto",
                "--trace",
                "--expect-protocol",
                "2025-11-25",
            ],
        )
    });
    assert_eq!(code, 0, "pyclient failed: {stderr}\n{out}");
    assert_eq!(out["protocolVersion"], "2025-11-25");
    let http = out["http"].as_array().expect("trace");
    let probe = http
        .iter()
        .position(|e| e["dir"] == ">" && e["headers"]["mcp-protocol-version"] == "2026-07-28")
        .expect("the client probed 2026-07-28 first");
    assert_eq!(http[probe + 1]["status"], 400, "probe refused: {http:?}");
    assert!(
        http[probe + 2..]
            .iter()
            .any(|e| e["dir"] == "<" && e["status"] == 200),
        "then served: {http:?}"
    );
    let call = &out["call"];
    assert_ne!(call["isError"], Value::Bool(true), "{call}");
    let organizations = call["structuredContent"]["data"]["organizations"]
        .as_array()
        .expect("organizations");
    assert!(
        organizations.iter().any(|o| o["id"] == demo::ORG_BISTRO),
        "{organizations:?}"
    );
    sandbox.shutdown().await;
}
