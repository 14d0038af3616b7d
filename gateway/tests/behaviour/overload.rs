//! Load shedding of the backends' gRPC servers as the gateway answers it:
//! past a server's concurrency limit a call is refused at once with
//! RESOURCE_EXHAUSTED, which the Connected Apps profile receives as the
//! platform's -32501 (`MCP_OVERLOADED`, retryable, with a retry hint) and
//! the default profile as `MCP_OVERLOADED`; an unavailable backend stays
//! -32502.

use crate::support;

use std::time::Duration;

use serde_json::{Value, json};
use support::{GOOGLE_HOST, GrpcServerLimits, Harness, TOKEN_ALL, TOKEN_SLOW, status_and_json};
use tokio::time::Instant;

/// One RPC at a time per backend.
fn one_at_a_time() -> GrpcServerLimits {
    GrpcServerLimits {
        max_concurrent_requests: 1,
        ..GrpcServerLimits::default()
    }
}

/// Sends `message` with `token` to `mcp`, through the Connected Apps host
/// when `google`.
async fn send(mcp: String, token: &'static str, message: Value, google: bool) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(mcp)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    if google {
        request = request.header("host", GOOGLE_HOST);
    }
    status_and_json(request.body(message.to_string()).send().await.unwrap()).await
}

#[tokio::test(start_paused = true)]
async fn an_overloaded_auth_service_is_answered_32501_to_the_request() {
    let h = Harness::start_with_backend_limits(&one_at_a_time(), |config| {
        config.deadlines.auth_ms = 3_000;
    })
    .await;
    let ping = json!({"jsonrpc":"2.0","id":5,"method":"ping"});
    // A slow token check holds the auth-service's only slot.
    let holder = tokio::spawn(send(h.mcp.clone(), TOKEN_SLOW, ping.clone(), false));
    // The paused clock moves only once the holder waits on the slow check.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let (status, body) = send(h.mcp.clone(), TOKEN_ALL, ping.clone(), true).await;
    assert_eq!(started.elapsed(), Duration::ZERO, "refused at once");
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], 5, "{body}");
    assert_eq!(body["error"]["code"], -32501, "{body}");
    assert_eq!(body["error"]["data"]["code"], "MCP_OVERLOADED", "{body}");
    assert!(body["error"]["data"]["retry_after_ms"].as_u64().unwrap() > 0);
    let (status, body) = send(h.mcp.clone(), TOKEN_ALL, ping, false).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["error"]["data"]["code"], "MCP_OVERLOADED", "{body}");
    let (status, _) = holder.await.unwrap();
    assert_eq!(status, 200, "the held call is served");
    h.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_overloaded_tool_service_is_answered_32501_and_the_call_is_retryable() {
    let h = Harness::start_with_backend_limits(&one_at_a_time(), |config| {
        config.deadlines.read_ms = 3_000;
    })
    .await;
    let call = |name: &str, id: i64| {
        json!({"jsonrpc":"2.0","id":id,"method":"tools/call",
               "params":{"name":name,"arguments":{}}})
    };
    // Warm the catalogue (ListTools takes the slot only briefly).
    let (status, _) = send(h.mcp.clone(), TOKEN_ALL, call("orders_list", 1), true).await;
    assert_eq!(status, 200);
    let holder = tokio::spawn(send(h.mcp.clone(), TOKEN_ALL, call("orders_slow", 2), true));
    // The paused clock moves only once the holder waits on the slow tool.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (status, body) = send(h.mcp.clone(), TOKEN_ALL, call("orders_list", 3), true).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], 3, "{body}");
    assert_eq!(body["error"]["code"], -32501, "{body}");
    assert_eq!(body["error"]["data"]["code"], "MCP_OVERLOADED", "{body}");
    let (status, body) = send(h.mcp.clone(), TOKEN_ALL, call("orders_list", 4), false).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["isError"], true, "{body}");
    assert!(body.to_string().contains("MCP_OVERLOADED"), "{body}");
    let (_, held) = holder.await.unwrap();
    assert!(
        held["result"].is_object(),
        "the held call is answered: {held}"
    );
    // Capacity is back.
    let (_, body) = send(h.mcp.clone(), TOKEN_ALL, call("orders_list", 5), true).await;
    assert!(body["result"].is_object(), "{body}");
    // An unavailable backend stays -32502.
    let (_, body) = send(
        h.mcp.clone(),
        TOKEN_ALL,
        call("orders_unavailable", 6),
        true,
    )
    .await;
    assert_eq!(body["error"]["code"], -32502, "{body}");
    h.shutdown().await;
}
