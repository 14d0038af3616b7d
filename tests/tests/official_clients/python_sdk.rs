//! The official Python MCP SDK (both client lines) drives the running stack:
//! initialize with protocol negotiation, tools/list, and tools/call reading
//! orders through gateway → auth-service → tool-service → storage; then
//! every tool of the catalogue, reads and writes, called through the SDK
//! with arguments from the demo data and from earlier results.

use std::collections::{BTreeMap, BTreeSet};

use chataigne_tests::{Driver, SdkClients, demo};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_lists_tools_and_reads_orders() {
    let Some((clients, sandbox)) = SdkClients::with_sqlite_sandbox().await else {
        return;
    };
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
    let Some((clients, sandbox)) = SdkClients::with_sqlite_sandbox().await else {
        return;
    };
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
    let Some((clients, sandbox)) = SdkClients::with_sqlite_sandbox().await else {
        return;
    };
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

/// `YYYY-MM-DD` of `days` days since 1970-01-01 (proleptic Gregorian).
fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

fn today_days() -> i64 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs();
    i64::try_from(secs / 86_400).expect("days fit")
}

fn step(id: &str, tool: &str, arguments: Value) -> Value {
    json!({"id": id, "tool": tool, "arguments": arguments})
}

/// Every tool of the catalogue with valid arguments: a manager of the Bistro
/// organization (token with every scope, so the listing is the whole
/// catalogue) calls the business tools on `location`; the platform
/// administrator calls the creation tools. `run` keeps keys and names apart
/// between SDK lines. Identifiers come from the demo data or, as
/// `${step:/pointer}`, from earlier results.
fn every_tool_plan(url: &str, manager: &str, admin: &str, location: &str, run: &str) -> Value {
    let today = today_days();
    let conversation = "${conversations:/data/conversations/0/id}";
    let message = json!({"conversation_id": conversation,
        "text": "Votre commande est en préparation.",
        "idempotency_key": format!("sdk-{run}-message-0001")});
    let manager_steps = vec![
        step("organizations", "chataigne_organizations_list", json!({})),
        step(
            "locations",
            "chataigne_locations_list",
            json!({"organization_id": demo::ORG_BISTRO, "limit": 5}),
        ),
        step(
            "location",
            "chataigne_location_get",
            json!({"location_id": "${locations:/data/locations/0/id}"}),
        ),
        step(
            "settings",
            "chataigne_location_settings_get",
            json!({"location_id": location, "sections": ["store", "order", "opening_hours",
                "delivery", "payment_methods", "ai", "loyalty", "referrals", "notifications"]}),
        ),
        step(
            "status",
            "chataigne_location_status_get",
            json!({"location_id": location}),
        ),
        step(
            "status_update",
            "chataigne_location_status_update",
            json!({"location_id": location, "status": "paused",
                   "expected_status": "${status:/data/status/status}", "reason": "busy"}),
        ),
        step(
            "items",
            "chataigne_catalog_items_list",
            json!({"location_id": location, "availability": "available", "limit": 1}),
        ),
        step(
            "item_update",
            "chataigne_catalog_item_availability_update",
            json!({"item_id": "${items:/data/items/0/id}", "availability": "sold_out",
                   "expected_availability": "available"}),
        ),
        step(
            "orders",
            "chataigne_orders_list",
            json!({"location_id": location, "statuses": ["received"], "limit": 1}),
        ),
        step(
            "order",
            "chataigne_order_get",
            json!({"order_id": "${orders:/data/orders/0/id}"}),
        ),
        step(
            "order_update",
            "chataigne_order_status_update",
            json!({"order_id": "${orders:/data/orders/0/id}", "status": "accepted",
                   "expected_status": "received"}),
        ),
        step(
            "customers",
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO, "location_id": location, "limit": 1}),
        ),
        step(
            "customer",
            "chataigne_customer_get",
            json!({"customer_id": "${customers:/data/customers/0/id}"}),
        ),
        step(
            "conversations",
            "chataigne_conversations_list",
            json!({"location_id": location, "limit": 1}),
        ),
        step(
            "conversation",
            "chataigne_conversation_get",
            json!({"conversation_id": conversation, "limit": 10}),
        ),
        step(
            "message",
            "chataigne_conversation_message_send",
            message.clone(),
        ),
        step(
            "message_replay",
            "chataigne_conversation_message_send",
            message,
        ),
        step(
            "instruction",
            "chataigne_conversation_instruction_send",
            json!({"conversation_id": conversation, "text": "Proposer un dessert offert.",
                   "idempotency_key": format!("sdk-{run}-instruction-0001")}),
        ),
        step(
            "analytics",
            "chataigne_analytics_query",
            json!({"location_id": location, "metrics": ["orders_count", "revenue"],
                   "date_from": civil_date(today - 28), "date_to": civil_date(today - 1),
                   "bucket": "week"}),
        ),
        step(
            "discounts",
            "chataigne_discounts_list",
            json!({"location_id": location}),
        ),
        step(
            "integrations",
            "chataigne_integrations_list",
            json!({"location_id": location}),
        ),
    ];
    let organization = json!({"name": format!("Crêperie SDK {run}"),
                              "idempotency_key": format!("sdk-{run}-organization-0001")});
    let admin_steps = vec![
        step(
            "organization",
            "chataigne_organization_create",
            organization.clone(),
        ),
        step(
            "organization_replay",
            "chataigne_organization_create",
            organization,
        ),
        step(
            "new_location",
            "chataigne_location_create",
            json!({"organization_id": "${organization:/data/organization/id}",
                   "name": format!("Crêperie SDK {run} — Quai"), "line1": "1 quai Est",
                   "city": "Nantes", "postal_code": "44000", "country": "FR",
                   "timezone": "Europe/Paris", "currency": "EUR",
                   "idempotency_key": format!("sdk-{run}-location-0001")}),
        ),
    ];
    json!({"url": url, "timeout": 60, "sessions": [
        {"name": "manager", "token": manager, "steps": manager_steps},
        {"name": "admin", "token": admin, "steps": admin_steps},
    ]})
}

/// The `structuredContent` of call `id` in `session`, after checking that it
/// succeeded and validates against the tool's listed `outputSchema`.
fn checked_calls(
    session: &Value,
    schemas: &BTreeMap<String, jsonschema::Validator>,
) -> BTreeMap<String, Value> {
    let mut checked = BTreeMap::new();
    for call in session["calls"].as_array().expect("calls") {
        let id = call["id"].as_str().expect("step id");
        let tool = call["tool"].as_str().expect("tool");
        assert!(call.get("error").is_none(), "{tool} ({id}) failed: {call}");
        let result = &call["result"];
        assert_ne!(result["isError"], true, "{tool} ({id}) isError: {result}");
        let structured = &result["structuredContent"];
        let validator = schemas
            .get(tool)
            .unwrap_or_else(|| panic!("{tool} is listed with an outputSchema"));
        let errors: Vec<String> = validator
            .iter_errors(structured)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect();
        assert!(
            errors.is_empty(),
            "{tool} ({id}) structuredContent does not validate: {errors:?}\n{structured}"
        );
        assert!(
            structured["meta"]["request_id"]
                .as_str()
                .is_some_and(|r| r.starts_with("req_")),
            "{tool} ({id}): {structured}"
        );
        assert!(
            result["content"].as_array().is_some_and(|c| !c.is_empty()),
            "{tool} ({id}) has a text block: {result}"
        );
        checked.insert(id.to_owned(), structured.clone());
    }
    checked
}

fn listed_names(session: &Value) -> BTreeSet<String> {
    session["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["name"].as_str().expect("tool name").to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_lists_and_calls_every_tool() {
    let Some((clients, sandbox)) = SdkClients::with_sqlite_sandbox().await else {
        return;
    };
    let every_scope: Vec<&str> = chataigne_common::scopes::all().collect();
    let manager = sandbox.token_with(demo::USER_MANAGER, &every_scope).await;
    let admin = sandbox
        .token_with(demo::USER_ADMIN, chataigne_common::scopes::ADMIN_SCOPES)
        .await;

    let lines = [
        ("v2", Driver::Python, demo::LOC_PARIS),
        ("v1", Driver::PythonV1, demo::LOC_LYON),
    ];
    for (run, driver, location) in lines {
        let plan = every_tool_plan(&sandbox.mcp_url, &manager, &admin, location, run);
        let (code, report, stderr) =
            tokio::task::block_in_place(|| clients.run_plan(driver, &plan));
        assert_eq!(code, 0, "{run}: driver failed: {stderr}\n{report}");
        let sessions = report["sessions"].as_array().expect("sessions");
        assert_eq!(sessions.len(), 2, "{report}");
        let (everything, administration) = (&sessions[0], &sessions[1]);
        for session in sessions {
            assert_eq!(session["protocolVersion"], "2025-11-25", "{run}");
            assert_eq!(session["serverInfo"]["name"], "chataigne-mcp", "{run}");
        }

        // The token with every scope lists the whole catalogue, each tool
        // with an output schema.
        let listed = listed_names(everything);
        assert!(listed.len() >= 22, "{run}: {listed:?}");
        let schemas: BTreeMap<String, jsonschema::Validator> = everything["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .map(|tool| {
                let name = tool["name"].as_str().expect("name").to_owned();
                let validator = jsonschema::options()
                    .build(&tool["outputSchema"])
                    .unwrap_or_else(|e| panic!("{name}: output schema compiles: {e}"));
                (name, validator)
            })
            .collect();
        assert!(
            listed_names(administration).is_subset(&listed),
            "{run}: the admin listing is part of the catalogue"
        );

        let manager_calls = checked_calls(everything, &schemas);
        let admin_calls = checked_calls(administration, &schemas);
        let called: BTreeSet<String> = [everything, administration]
            .iter()
            .flat_map(|s| s["calls"].as_array().expect("calls").iter())
            .map(|c| c["tool"].as_str().expect("tool").to_owned())
            .collect();
        assert_eq!(
            called, listed,
            "{run}: every listed tool is called (a new tool needs a call here)"
        );

        // The writes took effect, once.
        let data = |calls: &BTreeMap<String, Value>, id: &str| calls[id]["data"].clone();
        assert_eq!(
            data(&manager_calls, "status_update")["status"]["status"],
            "paused"
        );
        assert_eq!(
            data(&manager_calls, "item_update")["item"]["availability"],
            "sold_out"
        );
        assert_eq!(
            data(&manager_calls, "order_update")["order"]["status"],
            "accepted"
        );
        assert_eq!(
            data(&manager_calls, "order_update")["previous_status"],
            "received"
        );
        assert_eq!(
            data(&manager_calls, "order")["order"]["id"],
            data(&manager_calls, "orders")["orders"][0]["id"]
        );
        for (calls, first, replay) in [
            (&manager_calls, "message", "message_replay"),
            (&admin_calls, "organization", "organization_replay"),
        ] {
            assert_eq!(calls[first]["meta"]["replayed"], false, "{run} {first}");
            assert_eq!(calls[replay]["meta"]["replayed"], true, "{run} {replay}");
            assert_eq!(
                calls[first]["data"], calls[replay]["data"],
                "{run} {replay}"
            );
        }
        assert_eq!(
            data(&manager_calls, "instruction")["message"]["kind"],
            "instruction"
        );
        assert_eq!(
            data(&admin_calls, "new_location")["location"]["organization_id"],
            data(&admin_calls, "organization")["organization"]["id"]
        );
    }
    sandbox.shutdown().await;
}

/// On `/mcp/v2` the 2.x SDK's high-level client in its auto mode finds a
/// modern server: its `server/discover` probe at 2026-07-28 is answered, it
/// adopts that version (no `initialize` is ever sent), lists the tools and
/// calls one with a tenant argument, which it mirrors in its
/// `Mcp-Param-OrganizationId` header as the listing's `x-mcp-header` asks
/// (the gateway refuses the call otherwise).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_auto_mode_negotiates_2026_07_28_on_v2() {
    let Some((clients, sandbox)) = SdkClients::with_sqlite_sandbox().await else {
        return;
    };
    let (url, token) = sandbox.modern_endpoint(demo::USER_MANAGER).await;
    let arguments = json!({"organization_id": demo::ORG_BISTRO}).to_string();
    let (code, out, stderr) = tokio::task::block_in_place(|| {
        clients.pyclient(
            &clients.python,
            &[
                &url,
                &token,
                "chataigne_locations_list",
                &arguments,
                "--mode",
                "auto",
                "--trace",
                "--expect-protocol",
                "2026-07-28",
            ],
        )
    });
    assert_eq!(code, 0, "pyclient failed: {stderr}\n{out}");
    assert_eq!(out["protocolVersion"], "2026-07-28");
    let http = out["http"].as_array().expect("trace");
    let first = http.first().expect("a request");
    assert_eq!(first["headers"]["mcp-protocol-version"], "2026-07-28");
    assert!(
        http.iter().all(|e| e["dir"] != "<" || e["status"] == 200),
        "no refusal, no fallback: {http:?}"
    );
    assert!(
        !serde_json::to_string(http)
            .unwrap()
            .contains("\"initialize\""),
        "no initialize handshake: {http:?}"
    );
    let call = &out["call"];
    assert_ne!(call["isError"], Value::Bool(true), "{call}");
    let locations = call["structuredContent"]["data"]["locations"]
        .as_array()
        .expect("locations");
    assert!(!locations.is_empty(), "{call}");
    sandbox.shutdown().await;
}
