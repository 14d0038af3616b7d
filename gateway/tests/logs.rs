//! Log hygiene: with every target at TRACE, the logs of a realistic session
//! hold one line per MCP request with its facts, and never an argument value,
//! a token, the principal assertion or a cursor.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};
use support::{Harness, TOKEN_ALL, assertion_for};

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const ARGUMENT_CANARY: &str = "CANARY-ARG-7f3a9e";
const KEY_CANARY: &str = "CANARY-IDEMPOTENCY-51c0";
const CURSOR_CANARY: &str = "CANARY-CURSOR-88d2";
const REFUSED_TOKEN: &str = "CANARY-REFUSED-TOKEN-0b44";

#[tokio::test]
async fn logs_never_hold_arguments_tokens_or_cursors() {
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let h = Harness::start().await;
    let arguments = json!({"note": ARGUMENT_CANARY, "idempotency_key": KEY_CANARY,
                           "cursor": CURSOR_CANARY});
    let body = h
        .call_tool(TOKEN_ALL, "orders_list", arguments.clone())
        .await;
    let request_id = body["result"]["structuredContent"]["meta"]["request_id"]
        .as_str()
        .unwrap()
        .to_owned();
    h.call_tool(TOKEN_ALL, "order_get_missing", arguments.clone())
        .await;
    h.call_tool(TOKEN_ALL, "orders_slow", arguments.clone())
        .await;
    h.rpc_google(
        TOKEN_ALL,
        json!({"jsonrpc":"2.0","id":3,"method":"tools/call",
        "params":{"name":"orders_invalid","arguments":arguments}}),
    )
    .await;
    h.rpc(
        TOKEN_ALL,
        json!({"jsonrpc":"2.0","id":4,"method":"tools/list",
        "params":{"cursor": CURSOR_CANARY}}),
    )
    .await;
    h.rpc(
        REFUSED_TOKEN,
        json!({"jsonrpc":"2.0","id":5,"method":"ping"}),
    )
    .await;
    h.rpc(
        TOKEN_ALL,
        json!({"jsonrpc":"2.0","id":6,"method":"tools/call",
        "params":{"name": ARGUMENT_CANARY}}),
    )
    .await;
    h.shutdown().await;

    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.lines().count() > 10,
        "the subscriber captured the session"
    );
    for secret in [
        ARGUMENT_CANARY,
        KEY_CANARY,
        CURSOR_CANARY,
        REFUSED_TOKEN,
        TOKEN_ALL,
        &assertion_for("user-1"),
        "cursor-abc",
    ] {
        assert!(!logs.contains(secret), "{secret} leaked into the logs");
    }

    let lines: Vec<Value> = logs
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|line| line["fields"]["message"] == "mcp request")
        .collect();
    assert_eq!(lines.len(), 7, "one line per MCP request");
    let first = lines
        .iter()
        .find(|line| line["fields"]["request_id"] == request_id.as_str())
        .expect("the envelope's request id is in the logs");
    let fields = &first["fields"];
    assert_eq!(fields["method"], "tools/call");
    assert_eq!(fields["tool"], "orders_list");
    assert_eq!(fields["client_id"], "client-1");
    assert_eq!(fields["user_id"], "user-1");
    assert_eq!(fields["outcome"], "ok");
    assert!(fields["latency_ms"].is_number());
    let outcomes: Vec<&str> = lines
        .iter()
        .map(|line| line["fields"]["outcome"].as_str().unwrap())
        .collect();
    for expected in [
        "MCP_RESOURCE_NOT_FOUND",
        "MCP_TOOL_TIMEOUT",
        "MCP_INVALID_ARGUMENTS",
        "unauthenticated",
        "invalid_params",
    ] {
        assert!(outcomes.contains(&expected), "{expected} in {outcomes:?}");
    }
}
