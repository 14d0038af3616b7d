//! The official MCP clients a host or a developer would use — the Python SDK
//! (2.x and 1.x), the TypeScript SDK, the MCP Inspector 2 and the Inspector
//! CLI 1.x — each offering every protocol version it can (2025-11-25,
//! 2025-06-18, 2025-03-26; the Inspector only its own), on both client
//! profiles (default and Connected Apps), run the same session through the
//! project's drivers in `tests/clients/`: initialize, tools/list, a read, a
//! write on an identifier taken from an earlier result, and two recoverable
//! failures (an identifier outside the user's access, invalid arguments).
//! None of them may reject a result (the TypeScript SDK and the Inspector
//! validate `structuredContent` against the listed `outputSchema`), the
//! successes carry their data and the failures an envelope the model can read.
//! Also: every listed tool schema compiles under AJV's strict mode, and the
//! TypeScript SDK v2 client runs the session on `/mcp/v1` and `/mcp/v2` and
//! lists and reads the MCP Apps views there.

use std::collections::BTreeMap;

use chataigne_gateway::Profile;
use chataigne_tests::{Backend, Driver, Sandbox, SdkClients, demo};
use serde_json::{Value, json};

/// What the SDK drivers offer in `initialize`.
const PROTOCOL_VERSIONS: [&str; 3] = ["2025-11-25", "2025-06-18", "2025-03-26"];

/// What the Inspector offers (it has no option to choose).
const INSPECTOR_PROTOCOL_VERSION: &str = "2025-11-25";

/// The two client profiles, each on its own sandbox.
struct Profiled {
    name: &'static str,
    profile: Profile,
    sandbox: Sandbox,
    token: String,
}

async fn start(name: &'static str, profile: Profile) -> Profiled {
    let sandbox = Sandbox::start_with(Backend::Sqlite, |config| {
        config.gateway.endpoints[0].profile = profile;
    })
    .await
    .expect("sqlite sandbox");
    let token = sandbox.token(demo::USER_MANAGER).await;
    Profiled {
        name,
        profile,
        sandbox,
        token,
    }
}

async fn both_profiles() -> [Profiled; 2] {
    [
        start("default", Profile::Default).await,
        start("google", Profile::Google).await,
    ]
}

/// The Chataigne envelope `{data, meta}` of a `CallToolResult` in either
/// shape: its `structuredContent` (default profile, success), else the first
/// text block that holds a JSON object with `data` (failures, and every result
/// of the Connected Apps profile).
fn envelope_of(result: &Value) -> Option<Value> {
    if let Some(structured) = result.get("structuredContent").filter(|s| s.is_object()) {
        return Some(structured.clone());
    }
    result["content"]
        .as_array()?
        .iter()
        .filter(|block| block["type"] == "text")
        .filter_map(|block| serde_json::from_str::<Value>(block["text"].as_str()?).ok())
        .find(|parsed| parsed.get("data").is_some())
}

/// The session every client runs. `tag` keeps idempotency keys apart
/// between runs. The invalid arguments are a string where an integer is
/// expected, except through the Inspector, which converts every string
/// argument to the type the input schema declares ("many" would reach the
/// server as null, a valid "no limit"): there, a limit below the minimum.
fn session_plan(url: &str, token: &str, driver: Driver, version: Option<&str>, tag: &str) -> Value {
    let invalid = if driver.offers_any_protocol_version() {
        json!({"limit": "many"})
    } else {
        json!({"limit": 0})
    };
    let steps = json!([
        {"id": "orders", "tool": "chataigne_orders_list", "arguments": {"limit": 3}},
        {"id": "conversations", "tool": "chataigne_conversations_list",
         "arguments": {"location_id": demo::LOC_PARIS, "limit": 1}},
        {"id": "message", "tool": "chataigne_conversation_message_send",
         "arguments": {"conversation_id": "${conversations:/data/conversations/0/id}",
                       "text": "Votre commande part dans dix minutes.",
                       "idempotency_key": format!("clients-{tag}")}},
        {"id": "forbidden", "tool": "chataigne_order_get",
         "arguments": {"order_id": "ord_does_not_exist"}},
        {"id": "invalid", "tool": "chataigne_orders_list", "arguments": invalid},
    ]);
    let mut plan = json!({"url": url, "timeout": 60,
                          "sessions": [{"name": "manager", "token": token, "steps": steps}]});
    if let Some(version) = version {
        plan["protocolVersion"] = json!(version);
    }
    plan
}

/// Checks one client's report against the result contract of `profile`;
/// returns what is wrong, each line prefixed with `label`.
fn problems(label: &str, profile: Profile, expected_version: &str, report: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let mut problem = |what: String| found.push(format!("{label}: {what}"));
    if let Some(error) = report.get("error") {
        problem(format!("the session failed: {error}"));
    }
    let Some(session) = report["sessions"].get(0) else {
        problem(format!("no session in the report: {report}"));
        return found;
    };
    if session["protocolVersion"] != expected_version {
        problem(format!(
            "negotiated {} instead of {expected_version}",
            session["protocolVersion"]
        ));
    }
    if session["serverInfo"]["name"] != "chataigne-mcp" {
        problem(format!("serverInfo {}", session["serverInfo"]));
    }

    let tools: BTreeMap<&str, &Value> = session["tools"]
        .as_array()
        .map(|tools| {
            tools
                .iter()
                .filter_map(|t| Some((t["name"].as_str()?, t)))
                .collect()
        })
        .unwrap_or_default();
    if !tools.contains_key("chataigne_orders_list") || !tools.contains_key("chataigne_order_get") {
        problem(format!(
            "tools/list lacks the order tools: {:?}",
            tools.keys()
        ));
    }
    for (name, tool) in &tools {
        match (profile, tool.get("outputSchema")) {
            (Profile::Google, Some(_)) => {
                problem(format!(
                    "{name} lists an outputSchema on the Connected Apps profile"
                ));
            }
            (Profile::Default, None) => problem(format!("{name} lists no outputSchema")),
            _ => {}
        }
    }

    let calls: BTreeMap<&str, &Value> = session["calls"]
        .as_array()
        .map(|calls| {
            calls
                .iter()
                .filter_map(|c| Some((c["id"].as_str()?, c)))
                .collect()
        })
        .unwrap_or_default();
    for id in ["orders", "conversations", "message", "forbidden", "invalid"] {
        let Some(call) = calls.get(id) else {
            problem(format!("{id}: not called"));
            continue;
        };
        if let Some(error) = call.get("error") {
            problem(format!(
                "{id}: the client raised {error} (rpc_error {})",
                call["rpc_error"]
            ));
            continue;
        }
        if let Some(sent) = call.get("sent_arguments")
            && sent != &call["arguments"]
        {
            problem(format!(
                "{id}: sent {sent} instead of {}",
                call["arguments"]
            ));
        }
        let result = &call["result"];
        let failure = matches!(id, "forbidden" | "invalid");
        let outcome = if failure {
            failure_problems(result)
        } else {
            success_problems(
                id,
                profile,
                tools.get(call["tool"].as_str().unwrap_or("")),
                result,
            )
        };
        for what in outcome {
            problem(format!("{id}: {what}\n    {result}"));
        }
    }

    let data = |id: &str| {
        calls
            .get(id)
            .and_then(|c| envelope_of(&c["result"]))
            .map(|e| e["data"].clone())
            .unwrap_or(Value::Null)
    };
    if data("orders")["orders"].as_array().map(Vec::len) != Some(3) {
        problem(format!("orders: not 3 orders: {}", data("orders")));
    }
    let conversation = &data("conversations")["conversations"][0]["id"];
    let message = &data("message")["message"];
    if !conversation.is_string() || &message["conversation_id"] != conversation {
        problem(format!("message: not posted to {conversation}: {message}"));
    }
    if message["kind"] != "staff" {
        problem(format!("message: {message}"));
    }
    let codes = [
        (
            "forbidden",
            &["MCP_RESOURCE_FORBIDDEN", "MCP_RESOURCE_NOT_FOUND"][..],
        ),
        ("invalid", &["MCP_INVALID_ARGUMENTS"][..]),
    ];
    for (id, expected) in codes {
        let error = &data(id)["error"];
        if !error["code"]
            .as_str()
            .is_some_and(|c| expected.contains(&c))
        {
            problem(format!(
                "{id}: error code {} is not one of {expected:?}",
                error["code"]
            ));
        }
    }
    if data("invalid")["error"]["category"] != "validation" {
        problem(format!(
            "invalid: category {}",
            data("invalid")["error"]["category"]
        ));
    }
    found
}

fn is_request_id(value: &Value) -> bool {
    value.as_str().is_some_and(|id| id.starts_with("req_"))
}

/// A success of `profile`: default, `structuredContent` `{data, meta}` valid
/// against the listed `outputSchema` and a short text first; Connected Apps,
/// the JSON text of `{data, meta}` first and no `structuredContent`.
fn success_problems(
    id: &str,
    profile: Profile,
    tool: Option<&&Value>,
    result: &Value,
) -> Vec<String> {
    let mut found = Vec::new();
    if result["isError"] == true {
        found.push("isError".to_owned());
        return found;
    }
    let first = result["content"][0]["text"].as_str();
    let envelope = match profile {
        Profile::Default => {
            if first.is_none_or(|text| text.trim().is_empty()) {
                found.push("no text summary first".to_owned());
            }
            let structured = result["structuredContent"].clone();
            if let Some(schema) = tool.and_then(|t| t.get("outputSchema")) {
                match jsonschema::options().build(schema) {
                    Ok(validator) => found.extend(
                        validator
                            .iter_errors(&structured)
                            .map(|e| format!("structuredContent: {e} at {}", e.instance_path())),
                    ),
                    Err(e) => found.push(format!("outputSchema does not compile: {e}")),
                }
            }
            structured
        }
        Profile::Google => {
            if result.get("structuredContent").is_some() {
                found.push("structuredContent on the Connected Apps profile".to_owned());
            }
            first
                .and_then(|text| serde_json::from_str(text).ok())
                .unwrap_or(Value::Null)
        }
    };
    if !envelope["data"].is_object() {
        found.push(format!("no data in {envelope}"));
    }
    let meta = &envelope["meta"];
    if !is_request_id(&meta["request_id"]) || !meta["truncated"].is_boolean() {
        found.push(format!("meta {meta}"));
    }
    if id == "message" && meta["replayed"] != false {
        found.push(format!("a first write is not a replay: {meta}"));
    }
    found
}

/// A recoverable failure, the same on both profiles: `isError`, no
/// `structuredContent`, the actionable message then the JSON text of
/// `{"data": {"error": {...}}, "meta": {"request_id"}}`.
fn failure_problems(result: &Value) -> Vec<String> {
    let mut found = Vec::new();
    if result["isError"] != true {
        found.push("not isError".to_owned());
    }
    if result.get("structuredContent").is_some() {
        found.push("a failure carries structuredContent".to_owned());
    }
    let blocks = result["content"].as_array().cloned().unwrap_or_default();
    let texts: Vec<&str> = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
    if blocks.len() != 2 || texts.len() != 2 {
        found.push(format!(
            "{} content blocks, {} of text",
            blocks.len(),
            texts.len()
        ));
        return found;
    }
    let envelope: Value = serde_json::from_str(texts[1]).unwrap_or(Value::Null);
    let error = &envelope["data"]["error"];
    if texts[0].trim().is_empty() || serde_json::from_str::<Value>(texts[0]).is_ok() {
        found.push("the first block is not a message".to_owned());
    }
    if error["message"].as_str().is_none_or(|m| m.is_empty()) || !error["code"].is_string() {
        found.push("the second block is not the error envelope".to_owned());
    }
    for field in ["category", "message"] {
        if !error[field].is_string() {
            found.push(format!("error.{field} missing"));
        }
    }
    if !error["retryable"].is_boolean() {
        found.push("error.retryable missing".to_owned());
    }
    if !is_request_id(&error["request_id"]) || envelope["meta"]["request_id"] != error["request_id"]
    {
        found.push(format!("request ids: {envelope}"));
    }
    found
}

/// Every client × protocol version × profile runs the session; each of them
/// reads, writes and fails readably.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_clients_read_write_and_fail_readably_on_both_profiles() {
    let Some(clients) = SdkClients::find() else {
        return;
    };
    let profiles = both_profiles().await;
    let mut found = Vec::new();
    let mut runs = 0;
    for profiled in &profiles {
        for driver in Driver::ALL {
            let versions: Vec<Option<&str>> = if driver.offers_any_protocol_version() {
                PROTOCOL_VERSIONS.iter().copied().map(Some).collect()
            } else {
                vec![None]
            };
            for version in versions {
                let expected = version.unwrap_or(INSPECTOR_PROTOCOL_VERSION);
                let label = format!(
                    "{} offering {expected}, {} profile",
                    driver.label(),
                    profiled.name
                );
                let tag = uuid::Uuid::new_v4().simple().to_string();
                let plan = session_plan(
                    &profiled.sandbox.mcp_url,
                    &profiled.token,
                    driver,
                    version,
                    &tag,
                );
                let (code, report, stderr) =
                    tokio::task::block_in_place(|| clients.run_plan(driver, &plan));
                if code != 0 {
                    found.push(format!("{label}: exit {code}\n    {stderr}"));
                }
                found.extend(problems(&label, profiled.profile, expected, &report));
                runs += 1;
            }
        }
    }
    for profiled in profiles {
        profiled.sandbox.shutdown().await;
    }
    assert_eq!(runs, 2 * (3 * PROTOCOL_VERSIONS.len() + 2));
    assert!(
        found.is_empty(),
        "{} problems:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// The schemas of each profile's `tools/list` compile under AJV's strict
/// mode (JSON Schema 2020-12, standard formats only), with no warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listed_tool_schemas_compile_under_strict_ajv() {
    let Some(clients) = SdkClients::find() else {
        return;
    };
    let profiles = both_profiles().await;
    let mut found = Vec::new();
    for profiled in &profiles {
        let (status, body) = profiled
            .sandbox
            .mcp(
                &profiled.token,
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        let listed = &body["result"];
        let count = listed["tools"].as_array().map_or(0, Vec::len);
        assert!(count > 0, "{}: {body}", profiled.name);
        let (code, report, stderr) = tokio::task::block_in_place(|| clients.schema_check(listed));
        assert_eq!(
            report["tools"], count,
            "{}: {report}\n{stderr}",
            profiled.name
        );
        for kind in ["errors", "warnings"] {
            for entry in report[kind].as_array().into_iter().flatten() {
                found.push(format!("{} profile, {kind}: {entry}", profiled.name));
            }
        }
        if code != 0 && found.is_empty() {
            found.push(format!("{}: exit {code}: {stderr}", profiled.name));
        }
    }
    for profiled in profiles {
        profiled.sandbox.shutdown().await;
    }
    assert!(
        found.is_empty(),
        "{} problems:\n{}",
        found.len(),
        found.join("\n")
    );
}

/// What the views look like to a client: the `resources` capability and the
/// `io.modelcontextprotocol/ui` extension advertised where the revision has
/// an `initialize` or `server/discover` to say it, the three views listed and
/// read (one content each, the MCP Apps MIME type, a CSP listing no origin),
/// and each linked tool's `_meta.ui.resourceUri`.
fn view_problems(label: &str, report: &Value) -> Vec<String> {
    let mut found = Vec::new();
    let session = &report["sessions"][0];
    let capabilities = &session["capabilities"];
    if !capabilities["resources"].is_object() {
        found.push(format!("{label}: no resources capability: {capabilities}"));
    }
    if !capabilities["extensions"]["io.modelcontextprotocol/ui"].is_object() {
        found.push(format!("{label}: no MCP Apps extension: {capabilities}"));
    }
    let views = [
        ("chataigne_orders_list", "ui://chataigne/order-board"),
        ("chataigne_conversation_get", "ui://chataigne/conversation"),
        (
            "chataigne_analytics_query",
            "ui://chataigne/analytics-chart",
        ),
    ];
    let tools = session["tools"].as_array().cloned().unwrap_or_default();
    for (tool, uri) in views {
        let linked = tools
            .iter()
            .find(|t| t["name"] == tool)
            .map(|t| t["_meta"]["ui"]["resourceUri"].clone());
        if linked != Some(json!(uri)) {
            found.push(format!("{label}: {tool} links {linked:?}, not {uri}"));
        }
    }
    let resources = session["resources"].as_array().cloned().unwrap_or_default();
    let listed: Vec<&str> = resources.iter().filter_map(|r| r["uri"].as_str()).collect();
    if listed.len() != views.len() || views.iter().any(|(_, uri)| !listed.contains(uri)) {
        found.push(format!("{label}: resources {listed:?}"));
    }
    for resource in &resources {
        let contents = resource["contents"].as_array().cloned().unwrap_or_default();
        let ok = resource["mimeType"] == "text/html;profile=mcp-app"
            && contents.len() == 1
            && contents[0]["uri"] == resource["uri"]
            && contents[0]["mimeType"] == "text/html;profile=mcp-app"
            && contents[0]["bytes"].as_u64().is_some_and(|b| b > 1000)
            && contents[0]["_meta"]["ui"]["csp"]
                == json!({"connectDomains": [], "resourceDomains": []});
        if !ok {
            found.push(format!("{label}: read {resource}"));
        }
    }
    found
}

/// The TypeScript SDK v2 client (`@modelcontextprotocol/client`, auto mode)
/// runs the session on `/mcp/v1` (its `server/discover` probe is refused, it
/// falls back to the 2025-11-25 handshake) and on `/mcp/v2` (2026-07-28),
/// and lists and reads the views on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_v2_typescript_client_reads_writes_and_reads_the_views_on_both_endpoints() {
    let Some((clients, sandbox)) = SdkClients::with_sqlite_sandbox().await else {
        return;
    };
    let token = sandbox.token(demo::USER_MANAGER).await;
    let (v2_url, v2_token) = sandbox.modern_endpoint(demo::USER_MANAGER).await;
    let mut found = Vec::new();
    for (label, url, token, expected) in [
        (
            "v2 client on /mcp/v1",
            sandbox.mcp_url.clone(),
            token,
            "2025-11-25",
        ),
        ("v2 client on /mcp/v2", v2_url, v2_token, "2026-07-28"),
    ] {
        let tag = uuid::Uuid::new_v4().simple().to_string();
        let mut plan = session_plan(&url, &token, Driver::TypeScriptV2, None, &tag);
        plan["resources"] = json!(true);
        let (code, report, stderr) =
            tokio::task::block_in_place(|| clients.run_plan(Driver::TypeScriptV2, &plan));
        if code != 0 {
            found.push(format!("{label}: exit {code}\n    {stderr}"));
        }
        found.extend(problems(label, Profile::Default, expected, &report));
        found.extend(view_problems(label, &report));
    }
    sandbox.shutdown().await;
    assert!(
        found.is_empty(),
        "{} problems:\n{}",
        found.len(),
        found.join("\n")
    );
}
