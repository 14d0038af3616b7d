//! `/mcp/v2` on MCP 2026-07-28, over real HTTP against the three services:
//! stateless requests carrying `_meta`, `server/discover`, results tagged
//! with their type and the server's identity, `tools/list` cacheable per
//! caller, the standard and `Mcp-Param-*` headers checked against the body
//! (a disagreeing header is refused, never trusted), removed methods not
//! found, tokens bound to their endpoint, and the same tools, envelopes and
//! authorization as `/mcp/v1`.

use chataigne_tests::{Backend, Sandbox, demo};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};

const PROTOCOL: &str = "2026-07-28";

/// The `_meta` every modern request carries.
fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "revision-tests", "version": "1"},
    })
}

/// The standard headers of `method` (and `Mcp-Name` for a tool call).
fn standard_headers(method: &str, name: Option<&str>) -> Vec<(String, String)> {
    let mut headers = vec![
        ("MCP-Protocol-Version".to_owned(), PROTOCOL.to_owned()),
        ("Mcp-Method".to_owned(), method.to_owned()),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name".to_owned(), name.to_owned()));
    }
    headers
}

struct Reply {
    status: u16,
    headers: HeaderMap,
    text: String,
    body: Value,
}

/// POSTs `message` to `url` with `token` and exactly `headers` besides the
/// transport's own (Accept, Content-Type).
async fn post(url: &str, token: &str, headers: &[(String, String)], message: &Value) -> Reply {
    let mut request = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(message.to_string());
    for (name, value) in headers {
        request = request.header(
            HeaderName::from_bytes(name.as_bytes()).unwrap(),
            HeaderValue::from_str(value).unwrap(),
        );
    }
    let response = request.send().await.expect("gateway reachable");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let text = response.text().await.expect("body");
    let body = serde_json::from_str(&text).unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        text,
        body,
    }
}

struct Modern {
    sandbox: Sandbox,
    url: String,
    token: String,
}

impl Modern {
    async fn start() -> Modern {
        let sandbox = Sandbox::start(Backend::Sqlite)
            .await
            .expect("sqlite sandbox");
        let (url, token) = sandbox.modern_endpoint(demo::USER_MANAGER).await;
        Modern {
            sandbox,
            url,
            token,
        }
    }

    /// A well-formed modern request: `_meta` merged into `params`, the
    /// standard headers, plus `extra` headers.
    async fn request(&self, method: &str, params: Value, extra: &[(&str, &str)]) -> Reply {
        let mut params = params;
        params["_meta"] = meta();
        let name = params["name"].as_str().map(str::to_owned);
        let mut headers = standard_headers(method, name.as_deref());
        // An extra header replaces the standard one of the same name.
        headers.retain(|(standard, _)| {
            !extra
                .iter()
                .any(|(name, _)| name.eq_ignore_ascii_case(standard))
        });
        headers.extend(
            extra
                .iter()
                .map(|(n, v)| ((*n).to_owned(), (*v).to_owned())),
        );
        let message = json!({"jsonrpc": "2.0", "id": 41, "method": method, "params": params});
        post(&self.url, &self.token, &headers, &message).await
    }

    async fn call(&self, tool: &str, arguments: Value, extra: &[(&str, &str)]) -> Reply {
        self.request(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            extra,
        )
        .await
    }
}

/// The JSON-RPC error code of a reply (`None` for a result).
fn error_code(reply: &Reply) -> Option<i64> {
    reply.body["error"]["code"].as_i64()
}

fn assert_refused(reply: &Reply, status: u16, code: i64, label: &str) {
    assert_eq!(reply.status, status, "{label}: {}", reply.text);
    assert_eq!(error_code(reply), Some(code), "{label}: {}", reply.text);
    assert_eq!(
        reply.body["id"], 41,
        "{label}: the error answers the request's id"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discover_and_results_describe_a_stateless_2026_07_28_server() {
    let modern = Modern::start().await;
    let discover = modern.request("server/discover", json!({}), &[]).await;
    assert_eq!(discover.status, 200, "{}", discover.text);
    let result = &discover.body["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!([PROTOCOL]));
    assert!(result["capabilities"]["tools"].is_object());
    assert!(
        result["instructions"]
            .as_str()
            .is_some_and(|text| !text.is_empty())
    );
    assert_eq!(result["cacheScope"], "public");
    assert!(result["ttlMs"].as_u64().is_some());
    assert_eq!(
        result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "chataigne-mcp"
    );
    assert!(
        discover.headers.get("mcp-session-id").is_none(),
        "no session"
    );

    // clientInfo is optional.
    let mut headers = standard_headers("server/discover", None);
    headers.push(("Mcp-Session-Id".to_owned(), "ignored".to_owned()));
    let bare = json!({"jsonrpc": "2.0", "id": 41, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let reply = post(&modern.url, &modern.token, &headers, &bare).await;
    assert_eq!(reply.status, 200, "{}", reply.text);

    // The same tool answers the same data on both endpoints.
    let v1_token = modern.sandbox.token(demo::USER_MANAGER).await;
    let v1 = modern
        .sandbox
        .call_tool(&v1_token, "chataigne_organizations_list", json!({}))
        .await;
    let v2 = modern
        .call("chataigne_organizations_list", json!({}), &[])
        .await;
    assert_eq!(v2.status, 200, "{}", v2.text);
    let v2 = &v2.body["result"];
    assert_eq!(v2["resultType"], "complete");
    assert_eq!(v2["isError"], false);
    assert_eq!(
        v2["structuredContent"]["data"],
        v1["structuredContent"]["data"]
    );
    assert!(v2.get("ttlMs").is_none(), "a tool result is not cacheable");
    modern.sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_is_the_v1_catalogue_private_cacheable_deterministic_and_annotated() {
    let modern = Modern::start().await;
    let first = modern.request("tools/list", json!({}), &[]).await;
    let second = modern.request("tools/list", json!({}), &[]).await;
    assert_eq!(first.status, 200, "{}", first.text);
    assert_eq!(first.text, second.text, "deterministic, byte for byte");
    let result = &first.body["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["cacheScope"], "private",
        "it depends on the caller's scopes"
    );
    assert_eq!(
        result["ttlMs"], 30_000,
        "as fresh as the catalogue snapshot"
    );

    let v1_token = modern.sandbox.token(demo::USER_MANAGER).await;
    let (_, v1) = modern
        .sandbox
        .mcp(
            &v1_token,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    let names = |list: &Value| -> Vec<String> {
        list["result"]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tool| tool["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names(&first.body), names(&v1), "one catalogue, same order");
    assert!(
        !v1.to_string().contains("x-mcp-header"),
        "v1 lists no annotation"
    );

    let annotated: Vec<(String, String, String)> = result["tools"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|tool| {
            let name = tool["name"].as_str().unwrap().to_owned();
            tool["inputSchema"]["properties"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(move |(property, schema)| {
                    schema["x-mcp-header"]
                        .as_str()
                        .map(|header| (name.clone(), property.clone(), header.to_owned()))
                })
        })
        .collect();
    assert!(
        annotated
            .iter()
            .any(|(_, property, header)| property == "location_id" && header == "LocationId"),
        "{annotated:?}"
    );
    assert!(
        annotated.iter().any(
            |(_, property, header)| property == "organization_id" && header == "OrganizationId"
        ),
        "{annotated:?}"
    );
    assert!(
        annotated
            .iter()
            .all(|(_, property, _)| property == "location_id" || property == "organization_id"),
        "only tenant arguments are mirrored: {annotated:?}"
    );
    modern.sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_that_disagree_with_the_body_are_refused_before_anything_runs() {
    let modern = Modern::start().await;
    let message = |method: &str| json!({"jsonrpc": "2.0", "id": 41, "method": method, "params": {"_meta": meta()}});
    // Missing standard headers.
    let only_method = vec![("Mcp-Method".to_owned(), "tools/list".to_owned())];
    let reply = post(
        &modern.url,
        &modern.token,
        &only_method,
        &message("tools/list"),
    )
    .await;
    assert_refused(&reply, 400, -32020, "no MCP-Protocol-Version");
    let only_version = vec![("MCP-Protocol-Version".to_owned(), PROTOCOL.to_owned())];
    let reply = post(
        &modern.url,
        &modern.token,
        &only_version,
        &message("tools/list"),
    )
    .await;
    assert_refused(&reply, 400, -32020, "no Mcp-Method");
    // Method values are case-sensitive; header names are not.
    let reply = modern
        .request("tools/list", json!({}), &[("mcp-method", "TOOLS/LIST")])
        .await;
    assert_refused(&reply, 400, -32020, "case-mismatched method");
    let reply = modern
        .request("tools/list", json!({}), &[("MCP-METHOD", "tools/list")])
        .await;
    assert_eq!(reply.status, 200, "upper-case header name: {}", reply.text);

    // Mcp-Name: required for a tool call, plain or in base64, trimmed.
    let tool = "chataigne_organizations_list";
    let reply = modern
        .call(tool, json!({}), &[("Mcp-Name", "chataigne_orders_list")])
        .await;
    assert_refused(&reply, 400, -32020, "Mcp-Name of another tool");
    let encoded = "=?base64?Y2hhdGFpZ25lX29yZ2FuaXphdGlvbnNfbGlzdA==?=";
    let reply = modern.call(tool, json!({}), &[("Mcp-Name", encoded)]).await;
    assert_eq!(reply.status, 200, "base64 Mcp-Name: {}", reply.text);
    let reply = modern
        .call(
            tool,
            json!({}),
            &[("Mcp-Name", "  chataigne_organizations_list  ")],
        )
        .await;
    assert_eq!(
        reply.status, 200,
        "whitespace around the value: {}",
        reply.text
    );
    let headers = standard_headers("tools/call", None);
    let call = json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call",
        "params": {"name": tool, "arguments": {}, "_meta": meta()}});
    let reply = post(&modern.url, &modern.token, &headers, &call).await;
    assert_refused(&reply, 400, -32020, "no Mcp-Name");

    // Mcp-Param-*: a tenant argument needs its header, equal to the body.
    let org = demo_organization(&modern).await;
    let orders = "chataigne_locations_list";
    let reply = modern
        .call(
            orders,
            json!({"organization_id": org}),
            &[("Mcp-Param-OrganizationId", &org)],
        )
        .await;
    assert_eq!(reply.status, 200, "{}", reply.text);
    assert_eq!(reply.body["result"]["isError"], false, "{}", reply.text);
    let reply = modern
        .call(orders, json!({"organization_id": org}), &[])
        .await;
    assert_refused(&reply, 400, -32020, "tenant argument without its header");
    let reply = modern
        .call(
            orders,
            json!({"organization_id": org}),
            &[("Mcp-Param-OrganizationId", "org_other")],
        )
        .await;
    assert_refused(&reply, 400, -32020, "header naming another tenant");
    let reply = modern
        .call(orders, json!({}), &[("Mcp-Param-OrganizationId", &org)])
        .await;
    assert_refused(&reply, 400, -32020, "header without the argument");
    let reply = modern
        .call(
            orders,
            json!({"organization_id": org}),
            &[("Mcp-Param-OrganizationId", "=?base64?b3Jn?=")],
        )
        .await;
    assert_refused(&reply, 400, -32020, "base64 of another value");
    modern.sandbox.shutdown().await;
}

/// The id of the manager's first organization, read on `/mcp/v2`.
async fn demo_organization(modern: &Modern) -> String {
    let reply = modern
        .call("chataigne_organizations_list", json!({}), &[])
        .await;
    let data = &reply.body["result"]["structuredContent"]["data"];
    data["organizations"][0]["id"]
        .as_str()
        .or_else(|| data["items"][0]["id"].as_str())
        .unwrap_or_else(|| panic!("an organization: {}", reply.text))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn meta_versions_and_methods_are_checked_as_the_revision_prescribes() {
    let modern = Modern::start().await;
    let headers = standard_headers("server/discover", None);
    let discover = |meta: Value| json!({"jsonrpc": "2.0", "id": 41, "method": "server/discover", "params": {"_meta": meta}});
    for (label, meta) in [
        ("no _meta", Value::Null),
        (
            "no protocol version",
            json!({"io.modelcontextprotocol/clientCapabilities": {}}),
        ),
        (
            "no client capabilities",
            json!({"io.modelcontextprotocol/protocolVersion": PROTOCOL}),
        ),
        (
            "capabilities not an object",
            json!({
            "io.modelcontextprotocol/protocolVersion": PROTOCOL,
            "io.modelcontextprotocol/clientCapabilities": "all"}),
        ),
    ] {
        let reply = post(&modern.url, &modern.token, &headers, &discover(meta)).await;
        assert_refused(&reply, 400, -32602, label);
    }
    // A version spoken elsewhere, named in both places: unsupported here.
    let legacy = json!({"jsonrpc": "2.0", "id": 41, "method": "server/discover", "params": {"_meta": {
        "io.modelcontextprotocol/protocolVersion": "2025-11-25",
        "io.modelcontextprotocol/clientCapabilities": {}}}});
    let legacy_headers = vec![
        ("MCP-Protocol-Version".to_owned(), "2025-11-25".to_owned()),
        ("Mcp-Method".to_owned(), "server/discover".to_owned()),
    ];
    let reply = post(&modern.url, &modern.token, &legacy_headers, &legacy).await;
    assert_refused(&reply, 400, -32022, "unsupported version");
    assert_eq!(reply.body["error"]["data"]["supported"], json!([PROTOCOL]));
    assert_eq!(reply.body["error"]["data"]["requested"], "2025-11-25");
    // The header and _meta disagree.
    let reply = post(&modern.url, &modern.token, &headers, &legacy).await;
    assert_refused(&reply, 400, -32020, "header and _meta disagree");

    // Removed methods and unknown ones: 404, method not found, same id.
    for method in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "unknown/method",
    ] {
        let reply = modern.request(method, json!({}), &[]).await;
        assert_refused(&reply, 404, -32601, method);
        assert_eq!(
            reply.body["error"]["data"]["supported"],
            json!([PROTOCOL]),
            "{method}"
        );
    }
    // No GET stream, no session to delete.
    let client = reqwest::Client::new();
    for method in [reqwest::Method::GET, reqwest::Method::DELETE] {
        let response = client
            .request(method.clone(), &modern.url)
            .bearer_auth(&modern.token)
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 405, "{method}");
    }
    // Notifications are acknowledged.
    let notification = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 3}});
    let reply = post(&modern.url, &modern.token, &[], &notification).await;
    assert_eq!(reply.status, 202);
    modern.sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_bound_to_their_endpoint_with_its_own_metadata() {
    let modern = Modern::start().await;
    let v1_url = modern.sandbox.mcp_url.clone();
    let v1_token = modern.sandbox.token(demo::USER_MANAGER).await;
    let list =
        json!({"jsonrpc": "2.0", "id": 41, "method": "tools/list", "params": {"_meta": meta()}});

    let reply = post(
        &modern.url,
        &v1_token,
        &standard_headers("tools/list", None),
        &list,
    )
    .await;
    assert_eq!(reply.status, 401, "a v1 token on v2: {}", reply.text);
    let challenge = reply.headers["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        challenge.contains("/.well-known/oauth-protected-resource/mcp/v2\""),
        "{challenge}"
    );

    let reply = post(
        &v1_url,
        &modern.token,
        &[("MCP-Protocol-Version".to_owned(), "2025-11-25".to_owned())],
        &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .await;
    assert_eq!(reply.status, 401, "a v2 token on v1: {}", reply.text);
    let challenge = reply.headers["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    assert!(
        challenge.contains("/.well-known/oauth-protected-resource/mcp/v1\""),
        "{challenge}"
    );

    let metadata: Value = reqwest::get(format!(
        "{}/.well-known/oauth-protected-resource/mcp/v2",
        modern.sandbox.gateway_url
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(metadata["resource"], modern.url.as_str());
    modern.sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_on_v2_gets_a_client_error_never_a_server_error() {
    let modern = Modern::start().await;
    let headers = standard_headers("tools/call", Some("chataigne_orders_list"));
    let raw_bodies = [
        "not json".to_owned(),
        "[]".to_owned(),
        r#"{"jsonrpc":"2.0","id":41,"method":"tools/call","params":[]}"#.to_owned(),
        r#"{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"_meta":[]}}"#.to_owned(),
        json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {
            "name": "chataigne_orders_list", "arguments": "x", "_meta": meta()}})
        .to_string(),
        json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {
            "name": "x".repeat(5000), "arguments": {}, "_meta": meta()}})
        .to_string(),
        json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {
            "name": "chataigne_orders_list", "arguments": {"location_id": {"$ne": 1}},
            "_meta": meta()}})
        .to_string(),
    ];
    let client = reqwest::Client::new();
    for body in raw_bodies {
        let mut request = client
            .post(&modern.url)
            .bearer_auth(&modern.token)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json");
        for (name, value) in &headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let response = request.body(body.clone()).send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        assert!((200..500).contains(&status), "{status} for {body}: {text}");
    }
    // A header value with a control character is refused by the transport
    // or as a mismatch, never served.
    let reply = modern
        .call(
            "chataigne_orders_list",
            json!({"location_id": "loc"}),
            &[("Mcp-Param-LocationId", "=?base64?bG9jCg==?=")],
        )
        .await;
    assert_refused(
        &reply,
        400,
        -32020,
        "decoded value differs (trailing newline)",
    );
    modern.sandbox.shutdown().await;
}
