//! Streamable HTTP transport rules of the MCP endpoint, over real HTTP:
//! methods, headers, body bounds and malformed JSON-RPC, each with the
//! expected status and JSON-RPC error code, never a 500.

use crate::support;

use serde_json::{Value, json};
use support::{Harness, PING, TOKEN_ALL, status_and_json};

fn error_code(body: &Value) -> i64 {
    body["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("no error code: {body}"))
}

#[tokio::test]
async fn get_and_delete_are_405_with_allow_post() {
    let h = Harness::start().await;
    for method in [
        reqwest::Method::GET,
        reqwest::Method::DELETE,
        reqwest::Method::PUT,
    ] {
        let response = h
            .client
            .request(method.clone(), &h.mcp)
            .bearer_auth(TOKEN_ALL)
            .header("accept", "application/json, text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "{method}");
        assert_eq!(response.headers()["allow"], "POST");
        assert!(response.headers().get("mcp-session-id").is_none());
    }
    h.shutdown().await;
}

#[tokio::test]
async fn accept_must_allow_json_and_event_stream() {
    let h = Harness::start().await;
    // (reqwest sends `Accept: */*` when none is set; a missing header is
    // covered by the unit tests of the transport module.)
    for accept in [
        Some("application/json"),
        Some("text/event-stream"),
        Some("text/html"),
    ] {
        let mut request = h
            .client
            .post(&h.mcp)
            .bearer_auth(TOKEN_ALL)
            .header("content-type", "application/json")
            .body(PING);
        if let Some(accept) = accept {
            request = request.header("accept", accept);
        }
        let (status, body) = status_and_json(request.send().await.unwrap()).await;
        assert_eq!(status, 406, "{accept:?}");
        assert_eq!(body["jsonrpc"], "2.0");
        assert!(body["error"]["code"].is_i64());
    }
    let ok = h
        .ping_with_headers(&[("accept", "*/*"), ("content-type", "application/json")])
        .await;
    assert_eq!(ok.status(), 200);
    h.shutdown().await;
}

#[tokio::test]
async fn content_type_must_be_json() {
    let h = Harness::start().await;
    let response = h
        .ping_with_headers(&[
            ("accept", "application/json, text/event-stream"),
            ("content-type", "text/plain"),
        ])
        .await;
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 415);
    assert_eq!(body["jsonrpc"], "2.0");
    h.shutdown().await;
}

#[tokio::test]
async fn foreign_origins_are_forbidden_and_known_ones_pass() {
    let h = Harness::start().await;
    let send = |origin: &str| h.post(TOKEN_ALL).header("origin", origin).body(PING).send();
    assert_eq!(send("https://evil.example").await.unwrap().status(), 403);
    assert_eq!(send("null").await.unwrap().status(), 403);
    assert_eq!(
        send("https://app.example.test").await.unwrap().status(),
        200
    );
    assert_eq!(send(&h.base).await.unwrap().status(), 200, "same origin");
    h.shutdown().await;
}

#[tokio::test]
async fn protocol_version_header_is_checked() {
    let h = Harness::start().await;
    for version in ["2025-11-25", "2025-06-18", "2025-03-26"] {
        let response = h
            .post(TOKEN_ALL)
            .header("mcp-protocol-version", version)
            .body(PING)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{version}");
    }
    for version in ["2024-11-05", "2026-07-28", "garbage"] {
        let mut request = h.client.post(&h.mcp);
        request = request
            .bearer_auth(TOKEN_ALL)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", version);
        let (status, body) = status_and_json(request.body(PING).send().await.unwrap()).await;
        assert_eq!(status, 400, "{version}");
        assert_eq!(error_code(&body), -32600);
    }
    h.shutdown().await;
}

#[tokio::test]
async fn oversized_bodies_are_413_with_a_jsonrpc_error() {
    let h = Harness::start().await;
    let padding = "x".repeat(70 * 1024);
    let big = json!({"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":padding}}).to_string();
    let (status, body) =
        status_and_json(h.post(TOKEN_ALL).body(big.clone()).send().await.unwrap()).await;
    assert_eq!(status, 413);
    assert_eq!(body["jsonrpc"], "2.0");
    assert!(body["error"]["code"].is_i64());
    // Without a declared length (chunked), the cap applies while reading.
    let raw = chunked_post(&h, &big).await;
    assert!(raw.starts_with("HTTP/1.1 413"), "{raw}");
    assert!(raw.contains("\"jsonrpc\":\"2.0\""), "{raw}");
    h.shutdown().await;
}

/// POSTs `body` with `Transfer-Encoding: chunked` over a raw connection.
async fn chunked_post(h: &Harness, body: &str) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = h.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let head = format!(
        "POST /mcp/v1 HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {TOKEN_ALL}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    for chunk in body.as_bytes().chunks(4096) {
        let frame = [format!("{:x}\r\n", chunk.len()).as_bytes(), chunk, b"\r\n"].concat();
        if stream.write_all(&frame).await.is_err() {
            break;
        }
    }
    let _ = stream.write_all(b"0\r\n\r\n").await;
    let mut response = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        stream.read_to_end(&mut response),
    )
    .await;
    String::from_utf8_lossy(&response).into_owned()
}

#[tokio::test]
async fn malformed_json_is_a_parse_error() {
    let h = Harness::start().await;
    for body in [
        b"{\"jsonrpc\":\"2.0\",".to_vec(),
        b"".to_vec(),
        b"not json".to_vec(),
        vec![b'{', b'"', 0xff, 0xfe, b'"', b':', b'1', b'}'],
    ] {
        let (status, reply) =
            status_and_json(h.post(TOKEN_ALL).body(body.clone()).send().await.unwrap()).await;
        assert_eq!(status, 400, "{body:?}");
        assert_eq!(error_code(&reply), -32700, "{body:?}");
        assert_eq!(reply["id"], Value::Null);
    }
    h.shutdown().await;
}

#[tokio::test]
async fn invalid_requests_are_32600() {
    let h = Harness::start().await;
    let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
    let cases: Vec<(String, &str)> = vec![
        (
            json!([{"jsonrpc":"2.0","id":1,"method":"ping"}]).to_string(),
            "batch",
        ),
        (deep, "depth"),
        (
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{}1{}}}"#,
                "{\"a\":".repeat(20),
                "}".repeat(20)
            ),
            "depth in params",
        ),
        (
            json!({"jsonrpc":"1.0","id":1,"method":"ping"}).to_string(),
            "jsonrpc version",
        ),
        (json!({"id":1,"method":"ping"}).to_string(), "no jsonrpc"),
        (
            json!({"jsonrpc":"2.0","id":null,"method":"ping"}).to_string(),
            "null id",
        ),
        (
            json!({"jsonrpc":"2.0","id":true,"method":"ping"}).to_string(),
            "bool id",
        ),
        (
            json!({"jsonrpc":"2.0","id":{"a":1},"method":"ping"}).to_string(),
            "object id",
        ),
        (
            json!({"jsonrpc":"2.0","id":1.5,"method":"ping"}).to_string(),
            "float id",
        ),
        (
            json!({"jsonrpc":"2.0","id":1,"method":42}).to_string(),
            "method type",
        ),
        (json!({"jsonrpc":"2.0","id":1}).to_string(), "no method"),
        (json!("ping").to_string(), "scalar"),
    ];
    for (body, case) in cases {
        let (status, reply) =
            status_and_json(h.post(TOKEN_ALL).body(body).send().await.unwrap()).await;
        assert_eq!(status, 400, "{case}: {reply}");
        assert_eq!(error_code(&reply), -32600, "{case}: {reply}");
    }
    let (_, reply) = h.rpc(TOKEN_ALL, json!([])).await;
    assert!(
        reply["error"]["message"]
            .as_str()
            .unwrap()
            .contains("batch")
    );
    // The id is echoed when it could be read.
    let (_, reply) = h
        .rpc(TOKEN_ALL, json!({"jsonrpc":"1.0","id":"k","method":"ping"}))
        .await;
    assert_eq!(reply["id"], "k");
    h.shutdown().await;
}

#[tokio::test]
async fn unknown_methods_and_bad_params() {
    let h = Harness::start().await;
    let (status, reply) = h
        .rpc(
            TOKEN_ALL,
            json!({"jsonrpc":"2.0","id":"x1","method":"prompts/list"}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(error_code(&reply), -32601);
    assert_eq!(reply["id"], "x1");
    for params in [
        json!({"arguments": {}}),
        json!({"name": 3}),
        json!({"name": "orders_list", "arguments": "nope"}),
        json!({"name": "orders_list", "arguments": [1]}),
        json!(["orders_list"]),
    ] {
        let (status, reply) = h
            .rpc(
                TOKEN_ALL,
                json!({"jsonrpc":"2.0","id":7,"method":"tools/call","params":params}),
            )
            .await;
        assert_eq!(status, 200, "{params}");
        assert_eq!(error_code(&reply), -32602, "{params}: {reply}");
        assert_eq!(reply["id"], 7);
    }
    let (_, reply) = h
        .rpc(
            TOKEN_ALL,
            json!({"jsonrpc":"2.0","id":8,"method":"initialize","params":{}}),
        )
        .await;
    assert_eq!(error_code(&reply), -32602);
    assert!(
        h.tool_calls().is_empty(),
        "nothing reached the tool-service"
    );
    h.shutdown().await;
}

#[tokio::test]
async fn notifications_and_responses_are_202_without_body() {
    let h = Harness::start().await;
    for message in [
        json!({"jsonrpc":"2.0","method":"notifications/initialized"}),
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}),
        json!({"jsonrpc":"2.0","method":"anything/else"}),
        json!({"jsonrpc":"2.0","id":5,"result":{}}),
        json!({"jsonrpc":"2.0","id":"s1","error":{"code":-1,"message":"no"}}),
    ] {
        let response = h
            .post(TOKEN_ALL)
            .body(message.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 202, "{message}");
        assert!(response.headers().get("mcp-session-id").is_none());
        assert!(response.text().await.unwrap().is_empty(), "{message}");
    }
    h.shutdown().await;
}

#[tokio::test]
async fn responses_are_json_with_a_request_id_header() {
    let h = Harness::start().await;
    let response = h
        .post(TOKEN_ALL)
        .header("x-request-id", "client-chosen")
        .body(PING)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let id = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(id.starts_with("req_") && id.len() == 36, "{id}");
    assert!(response.headers().get("mcp-session-id").is_none());
    let body: Value = response.json().await.unwrap();
    assert_eq!(body, json!({"jsonrpc":"2.0","id":1,"result":{}}));
    h.shutdown().await;
}

#[tokio::test]
async fn stateless_any_request_is_served_without_or_with_a_stale_session() {
    let h = Harness::start().await;
    // No initialize first, and an unknown session id is ignored, not a 404:
    // any replica serves any request.
    for session in [None, Some("stale-session-from-another-replica")] {
        let mut request = h.post(TOKEN_ALL);
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        let response = request
            .body(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{session:?}");
        assert!(response.headers().get("mcp-session-id").is_none());
        let body: Value = response.json().await.unwrap();
        assert!(body["result"]["tools"].is_array(), "{body}");
    }
    h.shutdown().await;
}

#[tokio::test]
async fn bad_params_name_the_field_at_fault_whatever_the_order_they_come_in() {
    let h = Harness::start().await;
    for (method, params, message) in [
        ("tools/call", json!({}), "params.name must be a string"),
        (
            "tools/call",
            json!({"name": null}),
            "params.name must be a string",
        ),
        (
            "tools/call",
            json!({"arguments": 3, "name": 3}),
            "params.name must be a string",
        ),
        (
            "tools/call",
            json!({"name": "orders_list", "arguments": null}),
            "params.arguments must be an object",
        ),
        (
            "tools/call",
            json!(["orders_list"]),
            "params must be an object",
        ),
        ("tools/list", json!([]), "params must be an object"),
        ("ping", json!([1]), "params must be an object"),
        ("initialize", json!({}), "protocolVersion must be a string"),
        (
            "initialize",
            json!({"protocolVersion": 20251125}),
            "protocolVersion must be a string",
        ),
    ] {
        let (status, reply) = h
            .rpc(
                TOKEN_ALL,
                json!({"jsonrpc":"2.0","id":9,"method":method,"params":params}),
            )
            .await;
        assert_eq!(status, 200, "{method} {params}");
        assert_eq!(error_code(&reply), -32602, "{method} {params}: {reply}");
        assert_eq!(reply["error"]["message"], message, "{method} {params}");
    }
    h.shutdown().await;
}

#[tokio::test]
async fn an_unsupported_protocol_version_is_refused_listing_the_revision_versions() {
    let h = Harness::start().await;
    let response = h
        .ping_with_headers(&[
            ("accept", "application/json, text/event-stream"),
            ("content-type", "application/json"),
            ("mcp-protocol-version", "2026-07-28"),
        ])
        .await;
    let (status, body) = status_and_json(response).await;
    assert_eq!(status, 400);
    assert_eq!(
        body["error"]["message"],
        "Bad Request: unsupported MCP-Protocol-Version (supported: 2025-11-25, 2025-06-18, 2025-03-26)"
    );
    h.shutdown().await;
}
