//! The order status write, customer, conversation and analytics tools end to
//! end over MCP HTTP and over the typed gRPC API (`OrderUpdates`, `Customers`,
//! `Conversations`, `Analytics`), on SQLite and PostgreSQL: output conforming
//! to each tool's output schema, forward-only transitions with the observed
//! status enforced atomically, masked contacts, transcript search, message
//! paging, analytics limits and a rollup agreeing with the orders, and
//! cross-tenant identifiers answered like unknown ones.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chataigne_tests::envelope;
use std::collections::{HashMap, HashSet};

use chataigne_common::ErrorCode;
use chataigne_common::codes::decode_status;
use chataigne_proto::auth::v1::{AuthenticateRequest, auth_service_client::AuthServiceClient};
use chataigne_proto::tools::v1::{
    AnalyticsBucket, AnalyticsMetric, ConversationThreadStatus, GetConversationRequest,
    GetCustomerRequest, ListConversationsRequest, ListCustomersRequest, OrderStatus, Page,
    QueryAnalyticsRequest, UpdateOrderStatusRequest, analytics_client::AnalyticsClient,
    conversations_client::ConversationsClient, customers_client::CustomersClient,
    order_updates_client::OrderUpdatesClient,
};
use chataigne_tests::{Backend, Sandbox, demo};
use serde_json::{Value, json};

const MINE: [&str; 6] = [
    "chataigne_order_status_update",
    "chataigne_customers_list",
    "chataigne_customer_get",
    "chataigne_conversations_list",
    "chataigne_conversation_get",
    "chataigne_analytics_query",
];

const ALL_METRICS: [&str; 9] = [
    "orders_count",
    "revenue",
    "average_order_value",
    "cancelled_count",
    "completed_count",
    "items_sold",
    "new_customers",
    "delivery_share",
    "pickup_share",
];

/// Calls tools (optionally with a `_meta.user_locale`) and checks every
/// successful result against the tool's output schema from `tools/list`.
struct Client<'a> {
    sandbox: &'a Sandbox,
    schemas: HashMap<String, jsonschema::Validator>,
}

impl Client<'_> {
    async fn call(&self, token: &str, name: &str, arguments: Value) -> Value {
        self.call_in(token, name, arguments, None).await
    }

    async fn call_in(
        &self,
        token: &str,
        name: &str,
        arguments: Value,
        locale: Option<&str>,
    ) -> Value {
        let mut params = json!({"name": name, "arguments": arguments});
        if let Some(locale) = locale {
            params["_meta"] = json!({"user_locale": locale});
        }
        let (status, body) = self
            .sandbox
            .mcp(
                token,
                json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": params}),
            )
            .await;
        assert_eq!(status, 200, "{name}: {body}");
        let result = body["result"].clone();
        assert!(result.is_object(), "{name}: {body}");
        if result["isError"] != true {
            let errors: Vec<String> = self.schemas[name]
                .iter_errors(&result["structuredContent"])
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "{name} output off its schema: {errors:?}"
            );
        }
        result
    }
}

fn error_code(result: &Value) -> String {
    assert_eq!(result["isError"], true, "expected an error: {result}");
    envelope(result)["data"]["error"]["code"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

fn error_message(result: &Value) -> Value {
    envelope(result)["data"]["error"]["message"].clone()
}

fn data(result: &Value) -> &Value {
    assert_ne!(result["isError"], true, "unexpected error: {result}");
    &result["structuredContent"]["data"]
}

fn next_cursor(result: &Value) -> Option<String> {
    result["structuredContent"]["meta"]["next_cursor"]
        .as_str()
        .map(str::to_owned)
}

async fn client<'a>(sandbox: &'a Sandbox, token: &str) -> Client<'a> {
    let (_, list) = sandbox
        .mcp(token, json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}))
        .await;
    let tools: HashMap<String, Value> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_owned(), t.clone()))
        .collect();
    for name in MINE {
        let tool = tools.get(name).unwrap_or_else(|| panic!("{name} listed"));
        assert_eq!(tool["inputSchema"]["additionalProperties"], false, "{name}");
        let write = name.ends_with("_update");
        assert_eq!(tool["annotations"]["readOnlyHint"], !write, "{name}");
        assert_eq!(tool["annotations"]["destructiveHint"], write, "{name}");
        assert_eq!(tool["annotations"]["openWorldHint"], false, "{name}");
    }
    Client {
        sandbox,
        schemas: tools
            .iter()
            .map(|(name, tool)| {
                let validator = jsonschema::options()
                    .build(&tool["outputSchema"])
                    .expect("output schema compiles");
                (name.clone(), validator)
            })
            .collect(),
    }
}

/// Orders of `location` currently in `status`, newest first.
async fn orders_in(c: &Client<'_>, token: &str, location: &str, status: &str) -> Vec<String> {
    let listed = c
        .call(
            token,
            "chataigne_orders_list",
            json!({"location_id": location, "statuses": [status], "limit": 50}),
        )
        .await;
    data(&listed)["orders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn order_status(c: &Client<'_>, token: &str, order_id: &str) -> String {
    let order = c
        .call(token, "chataigne_order_get", json!({"order_id": order_id}))
        .await;
    data(&order)["order"]["status"].as_str().unwrap().to_owned()
}

async fn status_updates(c: &Client<'_>, manager: &str, staff: &str, analyst: &str) {
    let received = orders_in(c, manager, demo::LOC_PARIS, "received").await;
    assert!(
        received.len() >= 2,
        "the demo data has orders just received"
    );
    let order = received[0].as_str();
    let update = |status: &str, expected: &str| json!({"order_id": order, "status": status, "expected_status": expected});

    // An illegal transition is refused before anything is written.
    for (status, expected) in [("ready", "received"), ("received", "accepted")] {
        let illegal = c
            .call(
                manager,
                "chataigne_order_status_update",
                update(status, expected),
            )
            .await;
        assert_eq!(
            error_code(&illegal),
            "ORDER_STATUS_PRECONDITION_FAILED",
            "{expected}→{status}"
        );
    }
    // A cancellation is an operation this server leaves out: refused as
    // such, never as a transition that another status would allow.
    let cancel = c
        .call(
            manager,
            "chataigne_order_status_update",
            update("cancelled", "received"),
        )
        .await;
    assert_eq!(error_code(&cancel), "MCP_INVALID_ARGUMENTS");
    assert!(
        error_message(&cancel)
            .as_str()
            .unwrap()
            .contains("not available through this server"),
        "{cancel}"
    );
    assert_eq!(order_status(c, manager, order).await, "received");

    // A stale observation is refused with the current status.
    let stale = c
        .call(
            manager,
            "chataigne_order_status_update",
            update("preparing", "accepted"),
        )
        .await;
    assert_eq!(error_code(&stale), "MCP_EXPECTED_STATE_MISMATCH");
    assert_eq!(
        envelope(&stale)["data"]["error"]["details"]["current_state"],
        "received"
    );
    assert_eq!(order_status(c, manager, order).await, "received");

    // The legal step succeeds, in French when asked.
    let accepted = c
        .call_in(
            manager,
            "chataigne_order_status_update",
            update("accepted", "received"),
            Some("fr-FR"),
        )
        .await;
    let d = data(&accepted);
    assert_eq!(d["order"]["status"], "accepted");
    assert_eq!(d["previous_status"], "received");
    assert!(
        d["order"]["total"]["display"]
            .as_str()
            .unwrap()
            .ends_with(" €")
    );
    assert!(
        accepted["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Commande")
    );

    // Two concurrent writers from the same observed status: exactly one wins.
    let (a, b) = tokio::join!(
        c.call(
            manager,
            "chataigne_order_status_update",
            update("preparing", "accepted")
        ),
        c.call(
            staff,
            "chataigne_order_status_update",
            update("preparing", "accepted")
        ),
    );
    let outcomes = [&a, &b];
    assert_eq!(
        outcomes.iter().filter(|r| r["isError"] != true).count(),
        1,
        "{a}\n{b}"
    );
    let loser = outcomes.iter().find(|r| r["isError"] == true).unwrap();
    assert_eq!(error_code(loser), "MCP_EXPECTED_STATE_MISMATCH");
    assert_eq!(
        envelope(loser)["data"]["error"]["details"]["current_state"],
        "preparing"
    );

    // Another tenant's order is refused exactly like an unknown one.
    let foreign = c
        .call(
            analyst,
            "chataigne_order_status_update",
            update("accepted", "received"),
        )
        .await;
    let unknown = c
        .call(
            analyst,
            "chataigne_order_status_update",
            json!({"order_id": "ord_nope", "status": "accepted", "expected_status": "received"}),
        )
        .await;
    assert_eq!(error_code(&foreign), "MCP_RESOURCE_FORBIDDEN");
    assert_eq!(error_code(&unknown), "MCP_RESOURCE_FORBIDDEN");
    assert_eq!(error_message(&foreign), error_message(&unknown));

    // Location staff may move orders of their location only.
    let lyon = orders_in(c, manager, demo::LOC_LYON, "received").await;
    let sibling = c
        .call(
            staff,
            "chataigne_order_status_update",
            json!({"order_id": lyon[0], "status": "accepted", "expected_status": "received"}),
        )
        .await;
    assert_eq!(error_code(&sibling), "MCP_RESOURCE_FORBIDDEN");
    assert_eq!(order_status(c, manager, &lyon[0]).await, "received");

    // Unknown fields and statuses are schema errors.
    let invalid = c
        .call(
            manager,
            "chataigne_order_status_update",
            json!({"order_id": order, "status": "eaten", "expected_status": "ready"}),
        )
        .await;
    assert_eq!(error_code(&invalid), "MCP_INVALID_ARGUMENTS");
}

async fn customers(c: &Client<'_>, manager: &str, analyst: &str) {
    let first = c
        .call(
            manager,
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO, "limit": 5}),
        )
        .await;
    let page = data(&first)["customers"].as_array().unwrap().clone();
    assert_eq!(page.len(), 5);
    let names: Vec<&str> = page.iter().map(|c| c["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "by name");
    let mut masked_email = false;
    for customer in &page {
        if let Some(email) = customer["email_masked"].as_str() {
            let (local, domain) = email.split_once('@').unwrap();
            assert_eq!(local.chars().count(), 6, "{email}");
            assert!(local.ends_with("•••••"), "{email}");
            assert!(domain.starts_with("example"), "{email}");
            masked_email = true;
        }
        if let Some(phone) = customer["phone_masked"].as_str() {
            assert_eq!(phone.matches('•').count(), 6, "{phone}");
        }
    }
    assert!(masked_email);
    assert!(!first["content"][0]["text"].as_str().unwrap().contains('@'));

    // The next page continues after the first; the cursor is bound to its filters.
    let cursor = next_cursor(&first).expect("more customers");
    let second = c
        .call(
            manager,
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO, "limit": 5, "cursor": cursor}),
        )
        .await;
    let second_ids: HashSet<&str> = data(&second)["customers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(second_ids.len(), 5);
    assert!(
        page.iter()
            .all(|c| !second_ids.contains(c["id"].as_str().unwrap()))
    );
    let misused = c
        .call(
            manager,
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO, "name_query": "ma", "cursor": cursor}),
        )
        .await;
    assert_eq!(error_code(&misused), "MCP_CURSOR_INVALID");

    // 20 by default, 50 at most.
    let default = c
        .call(
            manager,
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO}),
        )
        .await;
    assert_eq!(data(&default)["customers"].as_array().unwrap().len(), 20);
    let too_many = c
        .call(
            manager,
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO, "limit": 51}),
        )
        .await;
    assert_eq!(error_code(&too_many), "MCP_INVALID_ARGUMENTS");

    // Name filter and location narrowing.
    let family = names[0]
        .split(' ')
        .next_back()
        .unwrap()
        .to_ascii_lowercase();
    let named = c
        .call(
            manager,
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO, "name_query": family, "limit": 50}),
        )
        .await;
    for customer in data(&named)["customers"].as_array().unwrap() {
        assert!(
            customer["name"]
                .as_str()
                .unwrap()
                .to_ascii_lowercase()
                .contains(&family)
        );
    }
    let paris = c
        .call(
            manager,
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO, "location_id": demo::LOC_PARIS, "limit": 50}),
        )
        .await;
    let regular = data(&paris)["customers"][0].clone();
    assert!(regular["order_count"].as_u64().unwrap() > 0);
    assert!(regular["last_order_at"].as_str().unwrap().ends_with(":00"));

    // Detail with recent orders.
    let id = regular["id"].as_str().unwrap();
    let detail = c
        .call(
            manager,
            "chataigne_customer_get",
            json!({"customer_id": id}),
        )
        .await;
    let d = data(&detail);
    assert_eq!(d["customer"]["id"], id);
    let recent = d["recent_orders"].as_array().unwrap();
    assert!(!recent.is_empty() && recent.len() <= 5);
    assert!(recent.iter().all(|o| o["customer_id"] == id));

    // Cross-tenant: another organization, or a location of another
    // organization, is refused like an unknown identifier.
    for (who, arguments) in [
        (analyst, json!({"organization_id": demo::ORG_BISTRO})),
        (analyst, json!({"organization_id": "org_nope"})),
        (
            manager,
            json!({"organization_id": demo::ORG_BISTRO, "location_id": demo::LOC_BROOKLYN}),
        ),
    ] {
        let refused = c.call(who, "chataigne_customers_list", arguments).await;
        assert_eq!(error_code(&refused), "MCP_RESOURCE_FORBIDDEN");
    }
    let foreign = c
        .call(
            analyst,
            "chataigne_customer_get",
            json!({"customer_id": id}),
        )
        .await;
    let unknown = c
        .call(
            analyst,
            "chataigne_customer_get",
            json!({"customer_id": "cus_nope"}),
        )
        .await;
    assert_eq!(error_code(&foreign), "MCP_RESOURCE_FORBIDDEN");
    assert_eq!(error_message(&foreign), error_message(&unknown));
}

async fn conversations(c: &Client<'_>, manager: &str, staff: &str) {
    let listed = c
        .call(
            manager,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "limit": 5}),
        )
        .await;
    let list = data(&listed)["conversations"].as_array().unwrap().clone();
    assert_eq!(list.len(), 5);
    for conversation in &list {
        assert!(
            conversation["last_message_preview"]
                .as_str()
                .unwrap()
                .chars()
                .count()
                <= 120
        );
        assert_eq!(conversation["location_id"], demo::LOC_PARIS);
    }
    assert!(next_cursor(&listed).is_some());

    // The long thread: 100 messages, then the older ones through the cursor.
    let thread = "conv_01paris11_01";
    let newest = c
        .call(
            manager,
            "chataigne_conversation_get",
            json!({"conversation_id": thread, "limit": 100}),
        )
        .await;
    let total = data(&newest)["conversation"]["message_count"]
        .as_u64()
        .unwrap() as usize;
    assert!(total > 100);
    let mut ids: Vec<String> = data(&newest)["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 100);
    let cursor = next_cursor(&newest).expect("older messages");
    let older = c
        .call(
            manager,
            "chataigne_conversation_get",
            json!({"conversation_id": thread, "limit": 100, "cursor": cursor}),
        )
        .await;
    assert!(next_cursor(&older).is_none());
    ids.extend(
        data(&older)["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap().to_owned()),
    );
    assert_eq!(ids.len(), total);
    let mut sorted = ids.clone();
    sorted.sort();
    sorted.reverse();
    assert_eq!(ids, sorted, "newest first (ids are numbered in time order)");
    for message in data(&newest)["messages"].as_array().unwrap() {
        let at = message["created_at"].as_str().unwrap();
        assert!(
            at.ends_with("+01:00") || at.ends_with("+02:00"),
            "Paris time: {at}"
        );
    }
    // The cursor is bound to the conversation and to the caller.
    let stolen = c
        .call(
            staff,
            "chataigne_conversation_get",
            json!({"conversation_id": thread, "limit": 100, "cursor": cursor}),
        )
        .await;
    assert_eq!(error_code(&stolen), "MCP_CURSOR_INVALID");
    let other = c
        .call(
            manager,
            "chataigne_conversation_get",
            json!({"conversation_id": "conv_01paris11_02", "cursor": cursor, "limit": 100}),
        )
        .await;
    assert_eq!(error_code(&other), "MCP_CURSOR_INVALID");
    let default = c
        .call(
            manager,
            "chataigne_conversation_get",
            json!({"conversation_id": thread}),
        )
        .await;
    assert_eq!(data(&default)["messages"].as_array().unwrap().len(), 50);
    let too_many = c
        .call(
            manager,
            "chataigne_conversation_get",
            json!({"conversation_id": thread, "limit": 101}),
        )
        .await;
    assert_eq!(error_code(&too_many), "MCP_INVALID_ARGUMENTS");

    // Transcript search finds the conversation a message belongs to.
    let body = data(&newest)["messages"][0]["body"].as_str().unwrap();
    let chars: Vec<char> = body.chars().collect();
    let word: String = chars
        .windows(6)
        .find(|w| w.iter().all(|c| c.is_ascii_alphanumeric() || *c == ' '))
        .expect("six plain characters in a row")
        .iter()
        .collect();
    let found = c
        .call(
            manager,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": word.to_uppercase(), "limit": 50}),
        )
        .await;
    assert!(
        data(&found)["conversations"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["id"] == thread),
        "searching {word:?}"
    );
    let nothing = c
        .call(
            manager,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": "zqxjw-no-such-text"}),
        )
        .await;
    assert!(
        data(&nothing)["conversations"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    let short = c
        .call(
            manager,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": "a"}),
        )
        .await;
    assert_eq!(error_code(&short), "MCP_INVALID_ARGUMENTS");
    let closed = c
        .call(
            manager,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "status": "closed", "limit": 50}),
        )
        .await;
    for conversation in data(&closed)["conversations"].as_array().unwrap() {
        assert_eq!(conversation["status"], "closed");
    }

    // Location staff read their location, not a sibling's.
    let own = c
        .call(
            staff,
            "chataigne_conversation_get",
            json!({"conversation_id": thread, "limit": 1}),
        )
        .await;
    assert_eq!(data(&own)["messages"].as_array().unwrap().len(), 1);
    let sibling = c
        .call(
            staff,
            "chataigne_conversation_get",
            json!({"conversation_id": "conv_01lyoncroixrousse_01"}),
        )
        .await;
    let unknown = c
        .call(
            staff,
            "chataigne_conversation_get",
            json!({"conversation_id": "conv_nope"}),
        )
        .await;
    assert_eq!(error_code(&sibling), "MCP_RESOURCE_FORBIDDEN");
    assert_eq!(error_message(&sibling), error_message(&unknown));
    let sibling_list = c
        .call(
            staff,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_LYON}),
        )
        .await;
    assert_eq!(error_code(&sibling_list), "MCP_RESOURCE_FORBIDDEN");
}

/// The day before the newest Paris order, with that order's UTC offset.
async fn a_past_day(c: &Client<'_>, manager: &str) -> (String, String) {
    let listed = c
        .call(
            manager,
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "limit": 50}),
        )
        .await;
    let orders = data(&listed)["orders"].as_array().unwrap();
    let newest = orders[0]["created_at"].as_str().unwrap();
    let past = orders
        .iter()
        .map(|o| o["created_at"].as_str().unwrap())
        .find(|t| t[..10] != newest[..10])
        .expect("two days of orders");
    (past[..10].to_owned(), past[19..].to_owned())
}

async fn analytics(c: &Client<'_>, manager: &str, analyst: &str) {
    // One day of the rollup agrees with the orders listed for that day.
    let (day, offset) = a_past_day(c, manager).await;
    let mut arguments = json!({
        "location_id": demo::LOC_PARIS,
        "created_from": format!("{day}T00:00:00{offset}"),
        "created_to": format!("{day}T23:59:59.999{offset}"),
        "limit": 50,
    });
    let (mut placed, mut cancelled) = (0, 0);
    loop {
        let page = c
            .call(manager, "chataigne_orders_list", arguments.clone())
            .await;
        for order in data(&page)["orders"].as_array().unwrap() {
            if order["status"] == "cancelled" {
                cancelled += 1;
            } else {
                placed += 1;
            }
        }
        let Some(cursor) = next_cursor(&page) else {
            break;
        };
        arguments["cursor"] = json!(cursor);
    }
    assert!(placed > 0);
    let one_day = c
        .call(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ["orders_count", "cancelled_count"],
                   "date_from": day, "date_to": day}),
        )
        .await;
    let d = data(&one_day);
    assert_eq!(d["buckets"].as_array().unwrap().len(), 1);
    assert_eq!(d["buckets"][0]["start"], day);
    assert_eq!(d["buckets"][0]["values"]["orders_count"], placed);
    assert_eq!(d["buckets"][0]["values"]["cancelled_count"], cancelled);
    assert!(
        d["buckets"][0]["values"].get("revenue").is_none(),
        "only what was asked"
    );

    // Eight metrics by week over a month, in French; totals sum the buckets.
    let year = &day[..4];
    let weekly = c
        .call_in(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": &ALL_METRICS[..8],
                   "date_from": format!("{year}-01-05"), "date_to": format!("{year}-02-03"),
                   "bucket": "week"}),
            Some("fr"),
        )
        .await;
    let d = data(&weekly);
    assert_eq!(d["timezone"], "Europe/Paris");
    assert_eq!(d["bucket"], "week");
    let buckets = d["buckets"].as_array().unwrap();
    assert!((5..=6).contains(&buckets.len()), "{}", buckets.len());
    let orders: u64 = buckets
        .iter()
        .map(|b| b["values"]["orders_count"].as_u64().unwrap())
        .sum();
    let revenue: i64 = buckets
        .iter()
        .map(|b| b["values"]["revenue"]["amount_minor"].as_i64().unwrap())
        .sum();
    assert_eq!(d["totals"]["orders_count"], orders);
    assert_eq!(d["totals"]["revenue"]["amount_minor"], revenue);
    assert!(
        d["totals"]["revenue"]["display"]
            .as_str()
            .unwrap()
            .ends_with(" €")
    );
    let share = d["totals"]["delivery_share"].as_f64().unwrap();
    assert!((0.0..=100.0).contains(&share));

    // Limits: at most eight distinct metrics, at most 366 days.
    let nine = c
        .call(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ALL_METRICS,
                   "date_from": day, "date_to": day}),
        )
        .await;
    assert_eq!(error_code(&nine), "MCP_INVALID_ARGUMENTS");
    let twice = c
        .call(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ["revenue", "revenue"],
                   "date_from": day, "date_to": day}),
        )
        .await;
    assert_eq!(error_code(&twice), "MCP_INVALID_ARGUMENTS");
    let year_and_a_day = c
        .call(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ["revenue"],
                   "date_from": "2024-01-01", "date_to": "2025-01-01", "bucket": "month"}),
        )
        .await;
    assert_eq!(error_code(&year_and_a_day), "MCP_INVALID_ARGUMENTS");
    let leap_year = c
        .call(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ["revenue"],
                   "date_from": "2024-01-01", "date_to": "2024-12-31", "bucket": "month"}),
        )
        .await;
    assert_eq!(data(&leap_year)["buckets"].as_array().unwrap().len(), 12);
    let not_a_date = c
        .call(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ["revenue"],
                   "date_from": "01/02/2025", "date_to": day}),
        )
        .await;
    assert_eq!(error_code(&not_a_date), "MCP_INVALID_ARGUMENTS");

    // A completed order moves the rollup of its day at once.
    let ready = orders_in(c, manager, demo::LOC_PARIS, "ready").await;
    let order = c
        .call(
            manager,
            "chataigne_order_get",
            json!({"order_id": ready[0]}),
        )
        .await;
    let its_day = data(&order)["order"]["created_at"].as_str().unwrap()[..10].to_owned();
    let before = completed_on(c, manager, &its_day).await;
    let done = c
        .call(
            manager,
            "chataigne_order_status_update",
            json!({"order_id": ready[0], "status": "completed", "expected_status": "ready"}),
        )
        .await;
    assert_eq!(data(&done)["order"]["status"], "completed");
    assert_eq!(completed_on(c, manager, &its_day).await, before + 1);

    // Another tenant's location is refused like an unknown one.
    let foreign = c
        .call(
            analyst,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ["revenue"], "date_from": day, "date_to": day}),
        )
        .await;
    let unknown = c
        .call(
            analyst,
            "chataigne_analytics_query",
            json!({"location_id": "loc_nope", "metrics": ["revenue"], "date_from": day, "date_to": day}),
        )
        .await;
    assert_eq!(error_code(&foreign), "MCP_RESOURCE_FORBIDDEN");
    assert_eq!(error_message(&foreign), error_message(&unknown));
    let own = c
        .call(
            analyst,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_BROOKLYN, "metrics": ["revenue"], "date_from": day, "date_to": day}),
        )
        .await;
    assert_eq!(data(&own)["currency"], "USD");
}

async fn completed_on(c: &Client<'_>, manager: &str, day: &str) -> u64 {
    let result = c
        .call(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ["completed_count"],
                   "date_from": day, "date_to": day}),
        )
        .await;
    data(&result)["totals"]["completed_count"].as_u64().unwrap()
}

fn authed<T>(message: T, assertion: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {assertion}").parse().unwrap(),
    );
    request
}

async fn typed_api(sandbox: &Sandbox, c: &Client<'_>, manager: &str) {
    let mut auth = AuthServiceClient::connect(sandbox.auth_grpc_url.clone())
        .await
        .unwrap();
    let assertion = auth
        .authenticate(AuthenticateRequest {
            access_token: manager.to_owned(),
            resource: sandbox.mcp_url.clone(),
        })
        .await
        .unwrap()
        .into_inner()
        .assertion;
    let url = sandbox.tools_grpc_url.clone();

    // Order updates: the same rules as the MCP tool.
    let mut orders = OrderUpdatesClient::connect(url.clone()).await.unwrap();
    let received = orders_in(c, manager, demo::LOC_BORDEAUX, "received").await;
    let request = |status: OrderStatus, expected: OrderStatus| UpdateOrderStatusRequest {
        order_id: received[0].clone(),
        status: status as i32,
        expected_status: expected as i32,
        locale: "en".to_owned(),
    };
    let illegal = orders
        .update_order_status(authed(
            request(OrderStatus::Completed, OrderStatus::Received),
            &assertion,
        ))
        .await
        .unwrap_err();
    assert_eq!(illegal.code(), tonic::Code::FailedPrecondition);
    assert_eq!(
        decode_status(&illegal).code,
        ErrorCode::OrderStatusPreconditionFailed
    );
    let updated = orders
        .update_order_status(authed(
            request(OrderStatus::Accepted, OrderStatus::Received),
            &assertion,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(updated.order.unwrap().status, OrderStatus::Accepted as i32);
    assert_eq!(updated.previous_status, OrderStatus::Received as i32);
    let stale = orders
        .update_order_status(authed(
            request(OrderStatus::Accepted, OrderStatus::Received),
            &assertion,
        ))
        .await
        .unwrap_err();
    let decoded = decode_status(&stale);
    assert_eq!(decoded.code, ErrorCode::ExpectedStateMismatch);
    assert!(
        decoded
            .metadata
            .contains(&("current_state".to_owned(), "accepted".to_owned()))
    );
    let anonymous = orders
        .update_order_status(request(OrderStatus::Preparing, OrderStatus::Accepted))
        .await
        .unwrap_err();
    assert_eq!(anonymous.code(), tonic::Code::Unauthenticated);

    // Customers.
    let mut customers = CustomersClient::connect(url.clone()).await.unwrap();
    let listed = customers
        .list_customers(authed(
            ListCustomersRequest {
                organization_id: demo::ORG_HARBOR.to_owned(),
                page: Some(Page {
                    limit: 3,
                    cursor: String::new(),
                }),
                ..Default::default()
            },
            &assertion,
        ))
        .await
        .unwrap_err();
    assert_eq!(decode_status(&listed).code, ErrorCode::ResourceForbidden);
    let listed = customers
        .list_customers(authed(
            ListCustomersRequest {
                organization_id: demo::ORG_BISTRO.to_owned(),
                location_id: demo::LOC_LYON.to_owned(),
                page: Some(Page {
                    limit: 3,
                    cursor: String::new(),
                }),
                ..Default::default()
            },
            &assertion,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(listed.customers.len(), 3);
    assert!(!listed.next_cursor.is_empty());
    for customer in &listed.customers {
        assert!(customer.email_masked.is_empty() || customer.email_masked.contains("•••••@"));
        assert!(customer.phone_masked.is_empty() || customer.phone_masked.contains('•'));
    }
    let detail = customers
        .get_customer(authed(
            GetCustomerRequest {
                customer_id: listed.customers[0].id.clone(),
                locale: "fr".to_owned(),
            },
            &assertion,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(detail.customer.unwrap().id, listed.customers[0].id);
    assert!(detail.recent_orders.len() <= 5);

    // Conversations.
    let mut conversations = ConversationsClient::connect(url.clone()).await.unwrap();
    let listed = conversations
        .list_conversations(authed(
            ListConversationsRequest {
                location_id: demo::LOC_LYON.to_owned(),
                status: ConversationThreadStatus::Closed as i32,
                page: Some(Page {
                    limit: 50,
                    cursor: String::new(),
                }),
                ..Default::default()
            },
            &assertion,
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(
        listed
            .conversations
            .iter()
            .all(|c| c.status == ConversationThreadStatus::Closed as i32)
    );
    let thread = conversations
        .get_conversation(authed(
            GetConversationRequest {
                conversation_id: "conv_01lyoncroixrousse_01".to_owned(),
                limit: 100,
                ..Default::default()
            },
            &assertion,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(thread.messages.len(), 100);
    assert!(!thread.next_cursor.is_empty());
    let too_many = conversations
        .get_conversation(authed(
            GetConversationRequest {
                conversation_id: "conv_01lyoncroixrousse_01".to_owned(),
                limit: 101,
                ..Default::default()
            },
            &assertion,
        ))
        .await
        .unwrap_err();
    assert_eq!(decode_status(&too_many).code, ErrorCode::InvalidArguments);

    // Analytics.
    let mut analytics = AnalyticsClient::connect(url).await.unwrap();
    let result = analytics
        .query_analytics(authed(
            QueryAnalyticsRequest {
                location_id: demo::LOC_LYON.to_owned(),
                metrics: vec![
                    AnalyticsMetric::Revenue as i32,
                    AnalyticsMetric::OrdersCount as i32,
                ],
                date_from: "2025-01-01".to_owned(),
                date_to: "2025-12-31".to_owned(),
                bucket: AnalyticsBucket::Month as i32,
                locale: "en".to_owned(),
            },
            &assertion,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(result.buckets.len(), 12);
    assert_eq!(result.timezone, "Europe/Paris");
    let totals = result.totals.unwrap();
    assert_eq!(
        totals.orders_count.unwrap(),
        result
            .buckets
            .iter()
            .map(|b| b.values.as_ref().unwrap().orders_count.unwrap())
            .sum::<u64>()
    );
    assert!(totals.items_sold.is_none());
    let too_long = analytics
        .query_analytics(authed(
            QueryAnalyticsRequest {
                location_id: demo::LOC_LYON.to_owned(),
                metrics: vec![AnalyticsMetric::Revenue as i32],
                date_from: "2025-01-01".to_owned(),
                date_to: "2026-01-02".to_owned(),
                ..Default::default()
            },
            &assertion,
        ))
        .await
        .unwrap_err();
    assert_eq!(decode_status(&too_long).code, ErrorCode::InvalidArguments);
}

async fn scenario(backend: Backend) {
    let Some(sandbox) = Sandbox::start(backend).await else {
        assert!(!chataigne_tests::in_ci(), "PostgreSQL is required in CI");
        return;
    };
    let manager = sandbox.token(demo::USER_MANAGER).await;
    let staff = sandbox.token(demo::USER_STAFF).await;
    let analyst = sandbox.token(demo::USER_ANALYST).await;
    let c = client(&sandbox, &manager).await;
    status_updates(&c, &manager, &staff, &analyst).await;
    customers(&c, &manager, &analyst).await;
    conversations(&c, &manager, &staff).await;
    analytics(&c, &manager, &analyst).await;
    typed_api(&sandbox, &c, &manager).await;
    drop(c);
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orders_customers_conversations_analytics_on_sqlite() {
    scenario(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orders_customers_conversations_analytics_on_postgres() {
    scenario(Backend::Postgres).await;
}
