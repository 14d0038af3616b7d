//! What a model reads, on both client profiles: input schemas within the
//! function-declaration subset of the Connected Apps platform's models (a
//! written-down list of the constructs it accepts), optional arguments
//! expressed by their absence from `required` only, only standard formats
//! anywhere, the whole `tools/list` of a manager small enough for a model's
//! context (under 48 KiB, printed), error texts that name the field, the rule
//! and the next step, and list summaries that carry the ids the next call
//! takes.

use chataigne_gateway::{EndpointConfig, Profile};
use chataigne_tests::{Backend, Sandbox, demo};
use serde_json::{Map, Value, json};

/// The host that selects the Connected Apps profile in these tests.
const PLATFORM_HOST: &str = "gemini.mcp.test";

/// The keywords of the function-declaration `Schema` subset (an OpenAPI 3.0
/// subset) that the platform's models accept in `parameters`: anything else
/// in an input schema is refused or silently dropped by them.
const FUNCTION_DECLARATION_KEYWORDS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// Types of that subset (one per schema, never a list).
const FUNCTION_DECLARATION_TYPES: &[&str] =
    &["string", "number", "integer", "boolean", "array", "object"];

/// JSON Schema 2020-12 formats (§7.3).
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// KiB a manager's `tools/list` stays under, in every profile.
const LISTING_BUDGET: usize = 48 * 1024;

async fn sandbox() -> Sandbox {
    Sandbox::start_with(Backend::Sqlite, |config| {
        config.gateway.endpoints.push(EndpointConfig {
            path: "/mcp/v1".to_owned(),
            profile: Profile::Google,
            hosts: vec![PLATFORM_HOST.to_owned()],
            public_url: None,
            ..EndpointConfig::default()
        });
    })
    .await
    .expect("sqlite sandbox")
}

/// The raw `tools/list` body for `token`, on the profile selected by `host`.
async fn listing(sandbox: &Sandbox, token: &str, host: Option<&str>) -> String {
    sandbox
        .mcp_text(
            token,
            host,
            &json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await
}

fn tools(body: &str) -> Vec<Value> {
    let parsed: Value = serde_json::from_str(body).expect("JSON");
    parsed["result"]["tools"].as_array().expect("tools").clone()
}

/// Every violation of the function-declaration subset in `schema` (at `path`),
/// allowing `additionalProperties: false` where `strict_objects` (the default
/// profile keeps it: SPEC §5 strict inputs; the JSON-Schema declarations of
/// the same models accept it).
fn subset_violations(path: &str, schema: &Map<String, Value>, strict_objects: bool) -> Vec<String> {
    let mut found = Vec::new();
    for (keyword, value) in schema {
        let allowed = FUNCTION_DECLARATION_KEYWORDS.contains(&keyword.as_str())
            || (strict_objects && keyword == "additionalProperties" && value == &json!(false));
        if !allowed {
            found.push(format!("{path}: keyword {keyword}"));
        }
    }
    match schema.get("type") {
        Some(Value::String(t)) if FUNCTION_DECLARATION_TYPES.contains(&t.as_str()) => {}
        other => found.push(format!("{path}: type {other:?} is not one subset type")),
    }
    if let Some(Value::Array(options)) = schema.get("enum")
        && !options.iter().all(Value::is_string)
    {
        found.push(format!("{path}: enum values must be strings: {options:?}"));
    }
    if let Some(format) = schema.get("format").and_then(Value::as_str)
        && !STANDARD_FORMATS.contains(&format)
    {
        found.push(format!("{path}: format {format}"));
    }
    if let Some(Value::Object(properties)) = schema.get("properties") {
        for (name, property) in properties {
            match property {
                Value::Object(property) => found.extend(subset_violations(
                    &format!("{path}.{name}"),
                    property,
                    strict_objects,
                )),
                _ => found.push(format!("{path}.{name}: not a schema")),
            }
        }
    }
    if let Some(items) = schema.get("items") {
        match items {
            Value::Object(items) => found.extend(subset_violations(
                &format!("{path}[]"),
                items,
                strict_objects,
            )),
            _ => found.push(format!("{path}[]: not a schema")),
        }
    }
    found
}

/// Non-standard formats and objects without `type: object` anywhere in an
/// output schema (AJV's strict mode refuses both).
fn output_violations(path: &str, schema: &Value, found: &mut Vec<String>) {
    match schema {
        Value::Object(node) => {
            if let Some(format) = node.get("format").and_then(Value::as_str)
                && !STANDARD_FORMATS.contains(&format)
            {
                found.push(format!("{path}: format {format}"));
            }
            if node.get("properties").is_some_and(Value::is_object)
                && node.get("type") != Some(&json!("object"))
            {
                found.push(format!("{path}: properties without type object"));
            }
            for (key, value) in node {
                output_violations(&format!("{path}/{key}"), value, found);
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                output_violations(&format!("{path}/{i}"), item, found);
            }
        }
        _ => {}
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn input_schemas_stay_within_the_function_declaration_subset_on_both_profiles() {
    let sandbox = sandbox().await;
    let token = sandbox.token(demo::USER_MANAGER).await;
    for (profile, host, strict_objects) in [
        ("default", None, true),
        ("google", Some(PLATFORM_HOST), false),
    ] {
        let listed = tools(&listing(&sandbox, &token, host).await);
        assert_eq!(listed.len(), 20, "{profile}: a manager sees 20 tools");
        let mut violations = Vec::new();
        for tool in &listed {
            let name = tool["name"].as_str().unwrap_or("?");
            let input = tool["inputSchema"].as_object().expect("inputSchema");
            violations.extend(subset_violations(name, input, strict_objects));
            if strict_objects {
                assert_eq!(input["additionalProperties"], false, "{name}: strict input");
            }
            match (profile, tool.get("outputSchema")) {
                ("google", Some(_)) => violations.push(format!("{name}: outputSchema listed")),
                ("google", None) => {}
                (_, Some(output)) => output_violations(name, output, &mut violations),
                (_, None) => violations.push(format!("{name}: no outputSchema")),
            }
        }
        assert!(violations.is_empty(), "{profile}: {violations:#?}");
    }
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_managers_tools_list_stays_under_48_kib_on_both_profiles() {
    let sandbox = sandbox().await;
    let token = sandbox.token(demo::USER_MANAGER).await;
    for (profile, host) in [("default", None), ("google", Some(PLATFORM_HOST))] {
        let body = listing(&sandbox, &token, host).await;
        let count = tools(&body).len();
        println!(
            "tools/list of a manager, {profile} profile: {count} tools, {} bytes ({:.1} KiB)",
            body.len(),
            body.len() as f64 / 1024.0
        );
        assert!(
            body.len() < LISTING_BUDGET,
            "{profile}: {} bytes for {count} tools",
            body.len()
        );
    }
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn optional_arguments_passed_as_null_mean_absent() {
    let sandbox = sandbox().await;
    let token = sandbox.token(demo::USER_MANAGER).await;
    let result = sandbox
        .call_tool(
            &token,
            "chataigne_orders_list",
            json!({"limit": 2, "location_id": null, "cursor": null}),
        )
        .await;
    assert_ne!(result["isError"], true, "{result}");
    let orders = &chataigne_tests::envelope(&result)["data"]["orders"];
    assert_eq!(orders.as_array().map(Vec::len), Some(2), "{result}");
    sandbox.shutdown().await;
}

/// The first text block of a result: what a client that shows only text
/// gives the model.
fn first_text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// `tools/call` on the profile selected by `host`; the JSON-RPC `result`.
async fn call_on(
    sandbox: &Sandbox,
    token: &str,
    host: Option<&str>,
    name: &str,
    arguments: Value,
) -> Value {
    let mut request = reqwest::Client::new()
        .post(&sandbox.mcp_url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25");
    if let Some(host) = host {
        request = request.header("host", host);
    }
    let body: Value = request
        .json(&json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                      "params": {"name": name, "arguments": arguments}}))
        .send()
        .await
        .expect("gateway reachable")
        .json()
        .await
        .expect("JSON");
    body.get("result")
        .cloned()
        .unwrap_or_else(|| panic!("{name}: no result: {body}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_texts_name_the_field_the_rule_and_the_next_step_on_both_profiles() {
    let sandbox = sandbox().await;
    let token = sandbox.token(demo::USER_MANAGER).await;
    for host in [None, Some(PLATFORM_HOST)] {
        let too_many = call_on(
            &sandbox,
            &token,
            host,
            "chataigne_orders_list",
            json!({"limit": 99}),
        )
        .await;
        assert_eq!(too_many["isError"], true, "{too_many}");
        assert!(
            first_text(&too_many)
                .contains("limit must be at most 50; pass meta.next_cursor to read further pages"),
            "{too_many}"
        );
        let wrong_type = call_on(
            &sandbox,
            &token,
            host,
            "chataigne_orders_list",
            json!({"limit": "many"}),
        )
        .await;
        assert!(
            first_text(&wrong_type).contains("limit must be an integer"),
            "{wrong_type}"
        );
        assert!(
            !first_text(&wrong_type).contains("many"),
            "values are not echoed"
        );

        // An unknown id and another tenant's id read the same, and say where
        // valid ones come from.
        let unknown = call_on(
            &sandbox,
            &token,
            host,
            "chataigne_location_get",
            json!({"location_id": "loc_does_not_exist"}),
        )
        .await;
        let foreign = call_on(
            &sandbox,
            &token,
            host,
            "chataigne_location_get",
            json!({"location_id": demo::LOC_BROOKLYN}),
        )
        .await;
        assert_eq!(first_text(&unknown), first_text(&foreign));
        assert_eq!(
            first_text(&unknown),
            "The location_id is unknown or outside the signed-in user's access. Take location_id \
             from chataigne_locations_list instead of guessing it."
        );
        assert_eq!(
            chataigne_tests::envelope(&unknown)["data"]["error"]["code"],
            "MCP_RESOURCE_FORBIDDEN"
        );
    }
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_mismatch_says_the_current_state_and_summaries_carry_ids() {
    let sandbox = sandbox().await;
    let token = sandbox.token(demo::USER_MANAGER).await;
    let listed = sandbox
        .call_tool(
            &token,
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "statuses": ["received"], "limit": 3}),
        )
        .await;
    let orders = chataigne_tests::envelope(&listed)["data"]["orders"].clone();
    let orders = orders.as_array().expect("orders");
    assert!(!orders.is_empty(), "the demo has waiting orders: {listed}");
    for order in orders {
        let id = order["id"].as_str().expect("id");
        assert!(
            first_text(&listed).contains(id),
            "the summary names {id}: {listed}"
        );
    }
    let order_id = orders[0]["id"].as_str().expect("id");
    let stale = sandbox
        .call_tool(
            &token,
            "chataigne_order_status_update",
            json!({"order_id": order_id, "expected_status": "preparing", "status": "ready"}),
        )
        .await;
    assert_eq!(
        chataigne_tests::envelope(&stale)["data"]["error"]["code"],
        "MCP_EXPECTED_STATE_MISMATCH",
        "{stale}"
    );
    assert!(
        first_text(&stale).contains("its current state is received"),
        "{stale}"
    );
    sandbox.shutdown().await;
}
