//! MCP methods end to end against the fake backends: initialize negotiation,
//! tools/list filtering and caching, tools/call envelopes for both profiles,
//! error mapping, deadlines, the write switch and what the backend receives.

use crate::support;

use chataigne_common::testing::envelope;
use serde_json::{Value, json};
use support::{FIXTURE_INSTRUCTIONS, Harness, TOKEN_ALL, TOKEN_READ, assertion_for};

fn call(name: &str, arguments: Value) -> Value {
    json!({"jsonrpc":"2.0","id":11,"method":"tools/call",
           "params":{"name":name,"arguments":arguments}})
}

fn is_request_id(value: &Value) -> bool {
    value
        .as_str()
        .is_some_and(|id| id.starts_with("req_") && id.len() == 36)
}

#[tokio::test]
async fn initialize_negotiates_each_supported_version() {
    let h = Harness::start().await;
    for (requested, expected) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let request = h
            .client
            .post(&h.mcp)
            .bearer_auth(TOKEN_ALL)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .body(
                json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                    "protocolVersion": requested, "capabilities": {},
                    "clientInfo": {"name": "test", "version": "1"}}})
                .to_string(),
            );
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200);
        assert!(response.headers().get("mcp-session-id").is_none());
        let body: Value = response.json().await.unwrap();
        let result = &body["result"];
        assert_eq!(result["protocolVersion"], expected, "{requested}");
        assert_eq!(result["serverInfo"]["name"], "chataigne-mcp");
        assert_eq!(result["serverInfo"]["title"], "Chataigne");
        assert_eq!(result["serverInfo"]["version"], env!("CARGO_PKG_VERSION"));
        assert_eq!(result["capabilities"]["tools"]["listChanged"], false);
        // The instructions are the catalogue's, as the tool-service gives them.
        assert_eq!(result["instructions"], FIXTURE_INSTRUCTIONS);
    }
    h.shutdown().await;
}

#[tokio::test]
async fn tools_list_is_filtered_by_scope_and_cached() {
    let h = Harness::start().await;
    let list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"ignored"}});
    let (status, body) = h.rpc(TOKEN_ALL, list.clone()).await;
    assert_eq!(status, 200, "{body}");
    let tools = body["result"]["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert!(names.contains(&"orders_list"));
    assert!(names.contains(&"order_status_update"));
    assert!(names.contains(&"analytics_query"));
    assert!(
        !names.contains(&"customers_list"),
        "customers.read not granted"
    );
    assert!(body["result"].get("nextCursor").is_none());

    let orders = tools.iter().find(|t| t["name"] == "orders_list").unwrap();
    assert_eq!(orders["title"], "Title of orders_list");
    assert_eq!(orders["description"], "Description of orders_list.");
    assert_eq!(orders["inputSchema"]["type"], "object");
    assert_eq!(orders["inputSchema"]["additionalProperties"], false);
    assert_eq!(orders["outputSchema"]["type"], "object");
    assert_eq!(
        orders["annotations"],
        json!({"title":"Title of orders_list","readOnlyHint":true,"destructiveHint":false,
               "idempotentHint":true,"openWorldHint":false})
    );
    let update = tools
        .iter()
        .find(|t| t["name"] == "order_status_update")
        .unwrap();
    assert_eq!(update["annotations"]["readOnlyHint"], false);
    assert_eq!(update["annotations"]["destructiveHint"], true);

    let (_, body) = h.rpc(TOKEN_READ, list.clone()).await;
    let names: Vec<String> = body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_owned())
        .collect();
    assert!(names.contains(&"orders_list".to_owned()));
    assert!(!names.contains(&"order_status_update".to_owned()));
    assert!(!names.contains(&"analytics_query".to_owned()));

    h.call_tool(TOKEN_ALL, "orders_list", json!({})).await;
    assert_eq!(h.tools.0.lock().unwrap().list_calls, 1, "one fetch per TTL");
    h.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn the_catalogue_is_fetched_again_after_its_ttl() {
    let h = Harness::start_with(|config| config.tool_catalog_ttl_secs = 1).await;
    let list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list"});
    h.rpc(TOKEN_ALL, list.clone()).await;
    h.rpc(TOKEN_ALL, list.clone()).await;
    assert_eq!(h.tools.0.lock().unwrap().list_calls, 1);
    tokio::time::advance(std::time::Duration::from_millis(1100)).await;
    h.rpc(TOKEN_ALL, list).await;
    assert_eq!(h.tools.0.lock().unwrap().list_calls, 2);
    h.shutdown().await;
}

#[tokio::test]
async fn success_envelope_default_profile() {
    let h = Harness::start().await;
    let body = h
        .call_tool(TOKEN_ALL, "orders_list", json!({"note": "x"}))
        .await;
    assert_eq!(body["id"], 1);
    let result = &body["result"];
    assert_eq!(result["isError"], false);
    assert_eq!(
        result["content"],
        json!([{"type":"text","text":"1 order."}])
    );
    let structured = &result["structuredContent"];
    assert_eq!(
        structured["data"],
        json!({"orders":[{"id":"ord_1","status":"received"}]})
    );
    let meta = &structured["meta"];
    assert!(is_request_id(&meta["request_id"]), "{meta}");
    assert_eq!(meta["next_cursor"], "cursor-abc");
    assert_eq!(meta["truncated"], false);
    assert_eq!(meta["replayed"], false);
    // No next_cursor key when there is no next page.
    let body = h.call_tool(TOKEN_ALL, "analytics_query", json!({})).await;
    let meta = &body["result"]["structuredContent"]["meta"];
    assert!(meta.get("next_cursor").is_none(), "{meta}");
    // The request id of the envelope is the one the backend received.
    let seen = h.tool_calls();
    assert_eq!(seen[1].request_id, meta["request_id"]);
    h.shutdown().await;
}

#[tokio::test]
async fn success_envelope_google_profile_chosen_by_host() {
    let h = Harness::start().await;
    let (status, body) = h
        .rpc_google(TOKEN_ALL, call("orders_list", json!({})))
        .await;
    assert_eq!(status, 200, "{body}");
    let result = &body["result"];
    assert_eq!(result["isError"], false);
    assert!(result.get("structuredContent").is_none(), "{result}");
    let content = result["content"].as_array().unwrap();
    assert_eq!(content.len(), 1);
    assert_eq!(content[0]["type"], "text");
    let payload: Value = serde_json::from_str(content[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(payload["data"]["orders"][0]["id"], "ord_1");
    assert!(is_request_id(&payload["meta"]["request_id"]));
    assert_eq!(payload["meta"]["next_cursor"], "cursor-abc");
    assert_eq!(payload["meta"]["replayed"], false);
    h.shutdown().await;
}

#[tokio::test]
async fn hidden_and_unknown_tools_are_refused_alike() {
    let h = Harness::start().await;
    let (_, hidden) = h
        .rpc(TOKEN_READ, call("order_status_update", json!({})))
        .await;
    let (_, unknown) = h
        .rpc(TOKEN_READ, call("orders_delete_everything", json!({})))
        .await;
    assert_eq!(hidden["error"]["code"], -32602);
    assert_eq!(
        hidden["error"]["message"],
        "Unknown tool: order_status_update"
    );
    assert_eq!(unknown["error"]["code"], -32602);
    assert_eq!(
        unknown["error"]["message"],
        "Unknown tool: orders_delete_everything"
    );
    assert_eq!(hidden["id"], 11);
    assert!(
        h.tool_calls().is_empty(),
        "neither reached the tool-service"
    );
    h.shutdown().await;
}

#[tokio::test]
async fn backend_errors_map_to_the_envelope() {
    let h = Harness::start().await;
    let body = h.call_tool(TOKEN_ALL, "order_get_missing", json!({})).await;
    let result = &body["result"];
    assert_eq!(result["isError"], true);
    let error = &envelope(result)["data"]["error"];
    assert_eq!(error["code"], "MCP_RESOURCE_NOT_FOUND");
    assert_eq!(error["category"], "not_found");
    assert_eq!(error["retryable"], false);
    assert!(is_request_id(&error["request_id"]));
    assert_eq!(envelope(result)["meta"]["request_id"], error["request_id"]);
    assert!(
        result.get("structuredContent").is_none(),
        "an error result need not match the output schema, so it carries none"
    );
    assert_eq!(result["content"][0]["text"], error["message"]);

    let body = h
        .call_tool(TOKEN_ALL, "orders_rate_limited", json!({}))
        .await;
    let error = &envelope(&body["result"])["data"]["error"];
    assert_eq!(error["code"], "MCP_RATE_LIMITED");
    assert_eq!(error["retryable"], true);
    assert_eq!(error["retry_after_ms"], 1500);
    // The tool-service's "after the suggested delay" is spoken in words.
    assert_eq!(error["message"], "Too many calls. Retry in 2 seconds.");

    let body = h.call_tool(TOKEN_ALL, "orders_invalid", json!({})).await;
    let error = &envelope(&body["result"])["data"]["error"];
    assert_eq!(error["category"], "validation");
    assert_eq!(
        error["fields"],
        json!([{"field":"limit","description":"must be at most 50"}])
    );

    let body = h
        .call_tool(TOKEN_ALL, "orders_unavailable", json!({}))
        .await;
    let error = &envelope(&body["result"])["data"]["error"];
    assert_eq!(error["code"], "MCP_DEPENDENCY_UNAVAILABLE");
    assert!(
        !body.to_string().contains("10.0.0.7"),
        "no internal detail leaks"
    );
    h.shutdown().await;
}

#[tokio::test]
async fn google_profile_raises_fatal_categories_with_platform_codes() {
    let h = Harness::start().await;
    for (tool, code, category) in [
        ("orders_rate_limited", -32300, "rate_limit"),
        ("orders_unavailable", -32502, "dependency"),
        ("orders_slow", -32500, "timeout"),
    ] {
        let (status, body) = h.rpc_google(TOKEN_ALL, call(tool, json!({}))).await;
        assert_eq!(status, 200);
        assert_eq!(body["error"]["code"], code, "{tool}: {body}");
        assert_eq!(body["id"], 11);
        assert_eq!(body["error"]["data"]["category"], category);
        assert!(is_request_id(&body["error"]["data"]["request_id"]));
        assert_eq!(body["error"]["message"], body["error"]["data"]["message"]);
    }
    // Recoverable failures (seed 004: an unknown id, a bad argument) stay
    // results: the actionable message, then the envelope as JSON text.
    for (tool, code) in [
        ("order_get_missing", "MCP_RESOURCE_NOT_FOUND"),
        ("orders_invalid", "MCP_INVALID_ARGUMENTS"),
    ] {
        let (_, body) = h.rpc_google(TOKEN_ALL, call(tool, json!({}))).await;
        let result = &body["result"];
        assert_eq!(result["isError"], true, "{tool}: {body}");
        assert!(result.get("structuredContent").is_none());
        let payload: Value =
            serde_json::from_str(result["content"][1]["text"].as_str().unwrap()).unwrap();
        assert_eq!(payload["data"]["error"]["code"], code);
        assert_eq!(
            result["content"][0]["text"],
            payload["data"]["error"]["message"]
        );
    }
    h.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn deadlines_give_timeout_for_reads_and_outcome_unknown_for_writes() {
    let h = Harness::start().await;
    // On the paused clock each call takes exactly as long as the gateway
    // waits: its 400 ms deadline, never the fake's late 1.5 s answer.
    let started = tokio::time::Instant::now();
    let body = h.call_tool(TOKEN_ALL, "orders_slow", json!({})).await;
    let error = &envelope(&body["result"])["data"]["error"];
    assert_eq!(error["code"], "MCP_TOOL_TIMEOUT", "{body}");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("Call orders_slow again"),
        "{body}"
    );
    assert_eq!(error["category"], "timeout");
    assert_eq!(error["retryable"], true);
    assert!(started.elapsed() < support::SLOW_TOOL_ANSWERS_AFTER);
    let started = tokio::time::Instant::now();
    let body = h.call_tool(TOKEN_ALL, "order_slow_write", json!({})).await;
    let error = &envelope(&body["result"])["data"]["error"];
    assert_eq!(error["code"], "MCP_OUTCOME_UNKNOWN", "{body}");
    assert_eq!(error["retryable"], false);
    // The text names the read tool the catalogue gives for the write's state.
    assert_eq!(
        error["message"],
        "The change did not finish in time and may have taken effect. Read the current state \
         with orders_list before calling order_slow_write again."
    );
    assert!(started.elapsed() < support::SLOW_TOOL_ANSWERS_AFTER);
    // The deadline travels as a gRPC deadline.
    let seen = h.tool_calls();
    let timeout = seen[0].metadata.iter().find(|(k, _)| k == "grpc-timeout");
    assert!(timeout.is_some(), "{:?}", seen[0].metadata);
    h.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_tool_service_is_a_quick_dependency_error() {
    let down = support::closed_port_url().await;
    let h = Harness::start_with(|config| config.tool_service_url = down).await;
    // Paused clock: the refused connection is reported without waiting out
    // the 400 ms read deadline.
    let started = tokio::time::Instant::now();
    let body = h.call_tool(TOKEN_ALL, "orders_list", json!({})).await;
    let error = &envelope(&body["result"])["data"]["error"];
    assert_eq!(error["code"], "MCP_DEPENDENCY_UNAVAILABLE", "{body}");
    let (status, body) = h
        .rpc(
            TOKEN_ALL,
            json!({"jsonrpc":"2.0","id":3,"method":"tools/list"}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["error"]["code"], -32603, "{body}");
    assert!(started.elapsed() < std::time::Duration::from_millis(400));
    h.shutdown().await;
}

#[tokio::test]
async fn the_backend_sees_the_assertion_never_the_user_token() {
    let h = Harness::start().await;
    let (status, _) = h
        .rpc(
            TOKEN_ALL,
            json!({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{
                "name":"orders_list","arguments":{"note":"hello"},
                "_meta":{"user_locale":"fr-FR"}}}),
        )
        .await;
    assert_eq!(status, 200);
    h.rpc(
        TOKEN_ALL,
        json!({"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"analytics_query"}}),
    )
    .await;
    let seen = h.tool_calls();
    assert_eq!(seen.len(), 2);
    let first = &seen[0];
    let authorization: Vec<&String> = first
        .metadata
        .iter()
        .filter(|(k, _)| k == "authorization")
        .map(|(_, v)| v)
        .collect();
    assert_eq!(
        authorization,
        vec![&format!("Bearer {}", assertion_for("user-1"))]
    );
    for call in &seen {
        for (key, value) in &call.metadata {
            assert!(!value.contains(TOKEN_ALL), "user token in metadata {key}");
        }
        assert!(!call.arguments_json.contains(TOKEN_ALL));
    }
    let request_id = first
        .metadata
        .iter()
        .find(|(k, _)| k == "x-request-id")
        .unwrap();
    assert_eq!(request_id.1, first.request_id);
    assert!(first.request_id.starts_with("req_"));
    assert_ne!(
        seen[0].request_id, seen[1].request_id,
        "one id per HTTP request"
    );
    assert_eq!(first.arguments_json, r#"{"note":"hello"}"#);
    assert_eq!(first.locale, "fr-FR");
    assert_eq!(
        seen[1].arguments_json, "{}",
        "absent arguments are an empty object"
    );
    h.shutdown().await;
}

#[tokio::test]
async fn disabled_writes_are_hidden_and_refused() {
    let h = Harness::start_with(|config| config.writes_enabled = false).await;
    let (_, body) = h
        .rpc(
            TOKEN_ALL,
            json!({"jsonrpc":"2.0","id":2,"method":"tools/list"}),
        )
        .await;
    let names: Vec<&str> = body["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"orders_list"));
    assert!(!names.contains(&"order_status_update"));
    let body = h
        .call_tool(TOKEN_ALL, "order_status_update", json!({}))
        .await;
    let error = &envelope(&body["result"])["data"]["error"];
    assert_eq!(error["code"], "MCP_WRITES_DISABLED", "{body}");
    assert!(
        h.tool_calls().is_empty(),
        "the write never reached the backend"
    );
    // Reads still work.
    let body = h.call_tool(TOKEN_ALL, "orders_list", json!({})).await;
    assert_eq!(body["result"]["isError"], false);
    h.shutdown().await;
}

#[tokio::test]
async fn a_second_path_serves_alongside_v1() {
    let h = Harness::start_with(|config| {
        config.endpoints.push(chataigne_gateway::EndpointConfig {
            path: "/mcp/beta".to_owned(),
            ..Default::default()
        });
    })
    .await;
    let response = h
        .client
        .post(format!("{}/mcp/beta", h.base))
        .bearer_auth(TOKEN_ALL)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let resources: Vec<String> = h.auth_calls().into_iter().map(|(_, r)| r).collect();
    assert_eq!(resources, vec![format!("{}/mcp/beta", h.base)]);
    let (status, _) = h
        .rpc(TOKEN_ALL, json!({"jsonrpc":"2.0","id":1,"method":"ping"}))
        .await;
    assert_eq!(status, 200);
    h.shutdown().await;
}

#[tokio::test]
async fn an_endpoint_serves_the_revision_its_config_names() {
    let h = Harness::start_with(|config| {
        config.endpoints.push(chataigne_gateway::EndpointConfig {
            path: "/mcp/beta".to_owned(),
            revision: chataigne_gateway::Revision::V2025_11_25,
            ..Default::default()
        });
    })
    .await;
    let send = |message: Value| {
        h.client
            .post(format!("{}/mcp/beta", h.base))
            .bearer_auth(TOKEN_ALL)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-06-18")
            .body(message.to_string())
            .send()
    };
    let initialize = json!({"jsonrpc":"2.0","id":1,"method":"initialize",
        "params":{"protocolVersion":"2025-06-18"}});
    let body: Value = send(initialize).await.unwrap().json().await.unwrap();
    assert_eq!(body["result"]["protocolVersion"], "2025-06-18", "{body}");
    // A notification method sent as a request is outside the method set.
    let stray = json!({"jsonrpc":"2.0","id":2,"method":"notifications/initialized"});
    let body: Value = send(stray).await.unwrap().json().await.unwrap();
    assert_eq!(body["error"]["code"], -32601, "{body}");
    let notification = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    assert_eq!(send(notification).await.unwrap().status(), 202);
    h.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_lets_in_flight_requests_finish() {
    let h = Harness::start().await;
    let request = h
        .post(TOKEN_ALL)
        .body(call("orders_slow", json!({})).to_string());
    let in_flight = tokio::spawn(async move { request.send().await });
    // The paused clock moves only once the call waits on the slow tool.
    tokio::time::sleep(std::time::Duration::from_millis(150)).await;
    h.shutdown().await;
    let response = in_flight
        .await
        .unwrap()
        .expect("the in-flight request was answered");
    assert_eq!(response.status(), 200);
    let body: Value = response.json().await.unwrap();
    assert_eq!(
        envelope(&body["result"])["data"]["error"]["code"],
        "MCP_TOOL_TIMEOUT"
    );
}

#[tokio::test]
async fn initialize_is_answered_without_instructions_while_the_catalogue_is_unreachable() {
    let closed = support::closed_port_url().await;
    let h = Harness::start_with(|config| config.tool_service_url = closed).await;
    let (status, body) = h
        .rpc(
            TOKEN_ALL,
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "test", "version": "1"}}}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(body["result"]["protocolVersion"], "2025-11-25");
    assert!(body["result"].get("instructions").is_none(), "{body}");
    h.shutdown().await;
}
