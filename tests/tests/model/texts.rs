//! Text blocks that carry the answer: every tool of the catalogue, called on
//! a seeded stack on both backends, answers with a text that names every id
//! and every value its structured content holds (and the next cursor when
//! there is one), or states its truncation with the `limit` that makes the
//! whole page fit, which is then checked in turn. A host that forwards only
//! `content` to the model loses nothing it needs to answer or to continue.
//!
//! What a text may leave to the structured content, and why, is listed per
//! tool in [`IN_DATA_ONLY`]; a code is said by its label when the record
//! holds one (`status` by `status_label`), money by its display string, and
//! booleans in words.

use chataigne_tests::{Sandbox, demo, envelope};
use serde_json::{Map, Value, json};

/// Fields a tool's text leaves to the structured content, with the reason
/// (docs/design.md, "Text blocks").
const IN_DATA_ONLY: &[(&str, &[&str], &str)] = &[
    (
        "chataigne_analytics_query",
        &[
            "delivery_share",
            "pickup_share",
            "date_to",
            "timezone",
            "currency",
            "location_id",
            "current",
            "previous",
            "absolute",
            "percent",
        ],
        "shares are stated as percentages, a change by its display; the range and its \
         calendar are those of the request",
    ),
    (
        "chataigne_orders_list",
        &["updated_at"],
        "the time of the last status change, in chataigne_order_get's text",
    ),
    (
        "chataigne_customers_list",
        &["email_masked", "phone_masked"],
        "contact details stay out of texts, even masked",
    ),
    (
        "chataigne_customer_get",
        &["updated_at", "email_masked", "phone_masked"],
        "contact details stay out of texts, even masked (the text says which are on file); \
         an order's last status change is in chataigne_order_get's text",
    ),
    (
        "chataigne_conversations_list",
        &["last_message_preview"],
        "in a search the matching message is quoted instead of the newest",
    ),
    (
        "chataigne_order_status_update",
        &[
            "customer_id",
            "customer_name",
            "fulfillment_label",
            "total",
            "created_at",
            "updated_at",
            "location_id",
        ],
        "the write confirms the transition; the order is read with chataigne_order_get",
    ),
    (
        "chataigne_catalog_items_list",
        &["updated_at"],
        "the time of the last availability change",
    ),
    (
        "chataigne_discounts_list",
        &["percent_basis_points"],
        "the percentage is stated as value_display",
    ),
    (
        "chataigne_catalog_item_availability_update",
        &["updated_at", "description"],
        "the write confirms the change; the item is listed with chataigne_catalog_items_list",
    ),
    (
        "chataigne_conversation_message_send",
        &["kind", "delivery"],
        "said by the sentence (queued for the customer)",
    ),
    (
        "chataigne_conversation_instruction_send",
        &["kind", "delivery"],
        "said by the sentence (recorded for the assistant)",
    ),
];

/// The words of a cut summary in one language.
struct Words {
    locale: Option<&'static str>,
    /// The statement of a cut.
    truncated: &'static str,
    /// What precedes the limit that shows a whole page.
    limit: &'static str,
    /// What precedes the cursor that resumes after the last line shown.
    resume: &'static str,
}

const ENGLISH: Words = Words {
    locale: None,
    truncated: "more line(s) not shown here (4 KiB text limit",
    limit: "call again with limit ",
    resume: "To resume after the last one shown: call again with the same arguments and cursor \"",
};

const FRENCH: Words = Words {
    locale: Some("fr-FR"),
    truncated: "ligne(s) de plus non affichée(s) ici (limite de texte de 4 Kio",
    limit: "rappeler avec limit ",
    resume: "Pour reprendre après la dernière affichée : rappeler avec les mêmes arguments et \
             cursor \"",
};

fn in_data_only(tool: &str) -> &'static [&'static str] {
    IN_DATA_ONLY
        .iter()
        .find(|(name, ..)| *name == tool)
        .map(|(_, fields, _)| *fields)
        .unwrap_or(&[])
}

/// Whether `key` is a code whose label `map` holds too.
fn labelled(map: &Map<String, Value>, key: &str) -> bool {
    map.contains_key(&format!("{key}_label"))
        || key
            .strip_suffix('s')
            .is_some_and(|stem| map.contains_key(&format!("{stem}_labels")))
}

/// Every value of `value` a text must name, with its path.
fn values(value: &Value, path: &str, skip: &[&str], out: &mut Vec<(String, String)>) {
    match value {
        Value::Object(map) => {
            if let (Some(display), true) = (map.get("display"), map.contains_key("amount_minor")) {
                out.push((
                    format!("{path}.display"),
                    display.as_str().unwrap_or("").into(),
                ));
                return;
            }
            for (key, inner) in map {
                if skip.contains(&key.as_str()) || labelled(map, key) {
                    continue;
                }
                values(inner, &format!("{path}.{key}"), skip, out);
            }
        }
        Value::Array(items) => {
            for (n, item) in items.iter().enumerate() {
                values(item, &format!("{path}[{n}]"), skip, out);
            }
        }
        Value::String(s) if !s.is_empty() => out.push((path.to_owned(), s.clone())),
        Value::Number(n) => out.push((path.to_owned(), n.to_string())),
        _ => {}
    }
}

/// The call's text, data and next cursor.
fn answer(result: &Value) -> (String, Value, Option<String>) {
    assert_ne!(result["isError"], true, "unexpected error: {result}");
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let envelope = envelope(result);
    let cursor = envelope["meta"]["next_cursor"].as_str().map(str::to_owned);
    (text, envelope["data"].clone(), cursor)
}

/// The `limit` a truncated text asks for.
fn stated_limit(text: &str, words: &Words) -> u32 {
    let (_, after) = text
        .split_once(words.limit)
        .unwrap_or_else(|| panic!("the truncation names a limit: {text}"));
    after
        .chars()
        .take_while(char::is_ascii_digit)
        .collect::<String>()
        .parse()
        .unwrap_or_else(|_| panic!("a number: {text}"))
}

/// Asserts that the text of `result` names every value of its data and its
/// next cursor, or states a truncation whose `limit` then fits.
async fn assert_text_carries_the_answer(
    sandbox: &Sandbox,
    words: &Words,
    token: &str,
    tool: &str,
    arguments: Value,
    result: Value,
) -> Vec<String> {
    let (text, data, cursor) = answer(&result);
    assert!(text.len() <= 4096, "{tool}: {} bytes", text.len());
    if text.contains(words.truncated) {
        let limit = stated_limit(&text, words);
        // The cursor it names resumes right after the last line shown.
        let (_, after) = text
            .split_once(words.resume)
            .unwrap_or_else(|| panic!("{tool}: a cut page names the cursor that resumes: {text}"));
        let resume = after.split('"').next().unwrap_or_default().to_owned();
        let mut resumed = arguments.clone();
        resumed["cursor"] = json!(resume);
        let (_, next, _) = answer(
            &sandbox
                .call_tool_in(token, words.locale, tool, resumed)
                .await,
        );
        let records = |data: &Value| -> Vec<Value> {
            data.as_object()
                .and_then(|d| d.values().find_map(Value::as_array))
                .cloned()
                .unwrap_or_default()
        };
        assert_eq!(
            records(&next).first().map(|r| r["id"].clone()),
            records(&data).get(limit as usize).map(|r| r["id"].clone()),
            "{tool}: the resuming cursor continues after line {limit}"
        );
        let mut narrowed = arguments.clone();
        narrowed["limit"] = json!(limit);
        let again = sandbox
            .call_tool_in(token, words.locale, tool, narrowed.clone())
            .await;
        let (again_text, ..) = answer(&again);
        assert!(
            !again_text.contains(words.truncated),
            "{tool}: the stated limit {limit} fits: {again_text}"
        );
        return Box::pin(assert_text_carries_the_answer(
            sandbox, words, token, tool, narrowed, again,
        ))
        .await;
    }
    let mut expected = Vec::new();
    values(&data, "data", in_data_only(tool), &mut expected);
    assert!(
        !expected.is_empty(),
        "{tool}: the walk reads a record: {data}"
    );
    let missing: Vec<_> = expected
        .iter()
        .filter(|(_, value)| !text.contains(value.as_str()))
        .collect();
    let mut failures = Vec::new();
    if !missing.is_empty() {
        failures.push(format!("{tool}: the text misses {missing:?}:\n{text}"));
    }
    if let Some(cursor) = cursor.filter(|c| !text.contains(c)) {
        failures.push(format!(
            "{tool}: the text misses the next cursor {cursor}:\n{text}"
        ));
    }
    failures
}

async fn every_tools_text_names_every_value_of_its_result(sandbox: &Sandbox) {
    walk_every_tool(sandbox, &ENGLISH).await;
}

/// The same in French (`_meta.user_locale`): labels, cuts and cursors in
/// French words, every value named all the same.
async fn every_tools_french_text_names_every_value_of_its_result(sandbox: &Sandbox) {
    walk_every_tool(sandbox, &FRENCH).await;
}

/// One call of every tool, in an order where each takes its ids from an
/// earlier answer, as a model would.
async fn walk_every_tool(sandbox: &Sandbox, words: &Words) {
    let manager = sandbox.token(demo::USER_MANAGER).await;
    let admin = sandbox
        .token_with(
            demo::USER_ADMIN,
            &["admin.organizations.create", "admin.locations.create"],
        )
        .await;
    let key = || uuid::Uuid::new_v4().to_string();
    let paris = demo::LOC_PARIS;
    let mut walked: Vec<String> = Vec::new();
    let mut failures: Vec<String> = Vec::new();
    let mut measured: Vec<String> = Vec::new();
    let mut call = async |token: &str, tool: &str, arguments: Value| -> Value {
        let result = sandbox
            .call_tool_in(token, words.locale, tool, arguments.clone())
            .await;
        // Tokens as chars / 4: the text against the data serialized as JSON.
        let (said, data, _) = answer(&result);
        let (text_tokens, json_tokens) = (
            said.chars().count() / 4,
            data.to_string().chars().count() / 4,
        );
        measured.push(format!(
            "| {tool} | {arguments} | {text_tokens} | {json_tokens} | {:.2} | {} |",
            text_tokens as f64 / json_tokens.max(1) as f64,
            if said.contains(words.truncated) {
                "cut"
            } else {
                "whole"
            }
        ));
        failures.extend(
            assert_text_carries_the_answer(sandbox, words, token, tool, arguments, result.clone())
                .await,
        );
        walked.push(tool.to_owned());
        envelope(&result)["data"].clone()
    };

    call(&manager, "chataigne_organizations_list", json!({})).await;
    call(
        &manager,
        "chataigne_locations_list",
        json!({"organization_id": demo::ORG_BISTRO}),
    )
    .await;
    let location = call(
        &manager,
        "chataigne_location_get",
        json!({"location_id": paris}),
    )
    .await;
    // The week before last, in the location's calendar.
    let today = chrono::NaiveDate::parse_from_str(
        &location["local_time"].as_str().expect("local time")[..10],
        "%Y-%m-%d",
    )
    .expect("a date");
    let (from, to) = (today - chrono::Days::new(14), today - chrono::Days::new(8));
    call(
        &manager,
        "chataigne_location_status_get",
        json!({"location_id": paris}),
    )
    .await;
    let sections = [
        "store",
        "order",
        "opening_hours",
        "delivery",
        "payment_methods",
        "ai",
        "loyalty",
        "referrals",
        "notifications",
    ];
    call(
        &manager,
        "chataigne_location_settings_get",
        json!({"location_id": paris, "sections": sections}),
    )
    .await;
    let orders = call(
        &manager,
        "chataigne_orders_list",
        json!({"location_id": paris, "statuses": ["received"]}),
    )
    .await;
    call(&manager, "chataigne_orders_list", json!({})).await;
    call(&manager, "chataigne_orders_list", json!({"limit": 50})).await;
    call(
        &manager,
        "chataigne_customers_list",
        json!({"organization_id": demo::ORG_BISTRO, "limit": 50}),
    )
    .await;
    call(
        &manager,
        "chataigne_catalog_items_list",
        json!({"location_id": paris, "limit": 50}),
    )
    .await;
    let order = orders["orders"][0]["id"]
        .as_str()
        .expect("a received order")
        .to_owned();
    call(&manager, "chataigne_order_get", json!({"order_id": order})).await;
    let items = call(
        &manager,
        "chataigne_catalog_items_list",
        json!({"location_id": paris, "availability": "available"}),
    )
    .await;
    let item = items["items"][0]["id"]
        .as_str()
        .expect("an item")
        .to_owned();
    let customers = call(
        &manager,
        "chataigne_customers_list",
        json!({"organization_id": demo::ORG_BISTRO}),
    )
    .await;
    let customer = customers["customers"][0]["id"]
        .as_str()
        .expect("a customer")
        .to_owned();
    call(
        &manager,
        "chataigne_customer_get",
        json!({"customer_id": customer}),
    )
    .await;
    let conversations = call(
        &manager,
        "chataigne_conversations_list",
        json!({"location_id": paris}),
    )
    .await;
    call(
        &manager,
        "chataigne_conversations_list",
        json!({"location_id": paris, "query": "allerg"}),
    )
    .await;
    let conversation = conversations["conversations"][0]["id"]
        .as_str()
        .expect("one")
        .to_owned();
    call(
        &manager,
        "chataigne_conversation_get",
        json!({"conversation_id": conversation}),
    )
    .await;
    // A page of 100 messages does not fit in 4 KiB: the text says so and the
    // limit it names does fit (checked by the walk).
    let long = json!({"conversation_id": format!("conv_{}_01", &paris[4..]), "limit": 100});
    let cut = sandbox
        .call_tool_in(
            &manager,
            words.locale,
            "chataigne_conversation_get",
            long.clone(),
        )
        .await;
    assert!(answer(&cut).0.contains(words.truncated), "{cut}");
    call(&manager, "chataigne_conversation_get", long).await;
    call(
        &manager,
        "chataigne_discounts_list",
        json!({"location_id": paris}),
    )
    .await;
    call(
        &manager,
        "chataigne_integrations_list",
        json!({"location_id": paris}),
    )
    .await;
    call(
        &manager,
        "chataigne_analytics_query",
        json!({"location_id": paris, "metrics": ["orders_count", "revenue",
                "average_order_value", "cancelled_count", "completed_count", "items_sold",
                "new_customers", "delivery_share"],
                "date_from": from.to_string(), "date_to": to.to_string(),
                "compare_previous": true}),
    )
    .await;
    call(
        &manager,
        "chataigne_order_status_update",
        json!({"order_id": order, "status": "accepted", "expected_status": "received"}),
    )
    .await;
    call(
        &manager,
        "chataigne_catalog_item_availability_update",
        json!({"item_id": item, "availability": "sold_out",
                "expected_availability": "available"}),
    )
    .await;
    call(
        &manager,
        "chataigne_location_status_update",
        json!({"location_id": paris, "status": "paused", "expected_status": "accepting",
                "reason": "busy"}),
    )
    .await;
    call(
        &manager,
        "chataigne_conversation_message_send",
        json!({"conversation_id": conversation, "text": "Bonjour, c'est prêt.",
                "idempotency_key": key()}),
    )
    .await;
    call(
        &manager,
        "chataigne_conversation_instruction_send",
        json!({"conversation_id": conversation, "text": "Proposer le dessert du jour.",
                "idempotency_key": key()}),
    )
    .await;
    let created = call(
        &admin,
        "chataigne_organization_create",
        json!({"name": "Brasserie du Quai", "idempotency_key": key()}),
    )
    .await;
    call(
        &admin,
        "chataigne_location_create",
        json!({"organization_id": created["organization"]["id"], "name": "Quai 1",
                "line1": "1 quai Perrache", "city": "Lyon", "postal_code": "69002",
                "country": "FR", "timezone": "Europe/Paris", "currency": "EUR",
                "idempotency_key": key()}),
    )
    .await;

    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    println!(
        "| tool | arguments | text tokens | JSON tokens | text / JSON | page |\n|---|---|---|---|---|---|\n{}",
        measured.join("\n")
    );

    // Every tool the catalogue lists was walked.
    let (_, listed) = sandbox
        .mcp(
            &manager,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    for tool in listed["result"]["tools"].as_array().expect("tools") {
        let name = tool["name"].as_str().unwrap_or_default();
        assert!(walked.iter().any(|w| w == name), "{name} is walked");
    }
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: chataigne_tests::Sandbox::start(chataigne_tests::Backend::Sqlite)
        .await
        .expect("sqlite sandbox"),
    postgres: chataigne_tests::Sandbox::start(chataigne_tests::Backend::Postgres).await,
    run: |sandbox| (&sandbox),
    finish: sandbox.shutdown().await,
    tests: [
        every_tools_text_names_every_value_of_its_result,
        every_tools_french_text_names_every_value_of_its_result,
    ],
}
