//! Requests walked through as a model would, on SQLite and PostgreSQL,
//! asserting what the model needs to read from each answer's text: "what
//! orders are waiting, accept the oldest" (with another operator accepting
//! it first), "item X is sold out until 6 pm" (local time of the location),
//! and "last month's sales against the month before" (each month's figures
//! in the text); and seven staff requests, each with the number of
//! calls and writes it takes and its answer read from the texts alone
//! ("which orders are waiting at Paris 11e?", "make the crème brûlée
//! unavailable tonight", "answer the customer who asked about allergens",
//! "opening hours on Sunday", "find order PAR-… and mark it ready", "is
//! Bordeaux accepting orders?", "sales last week vs the week before").
//! Beside them, what keeps a model from being misled: the
//! order status targets it is offered, absent operations refused as such,
//! one identifier key convention, and French texts in French words.

use chataigne_tests::{Sandbox, demo, envelope};
use serde_json::{Value, json};

/// A model's side of the conversation: one user's token, calling tools in
/// the server's default language or in a `_meta.user_locale`.
struct Model<'a> {
    sandbox: &'a Sandbox,
    token: String,
}

impl<'a> Model<'a> {
    async fn new(sandbox: &'a Sandbox, user_id: &str) -> Model<'a> {
        let token = sandbox.token(user_id).await;
        Model { sandbox, token }
    }

    async fn with_scopes(sandbox: &'a Sandbox, user_id: &str, scopes: &[&str]) -> Model<'a> {
        let token = sandbox.token_with(user_id, scopes).await;
        Model { sandbox, token }
    }

    /// `tools/call` of `name`; the JSON-RPC `result`.
    async fn call(&self, name: &str, arguments: Value) -> Value {
        self.call_in(None, name, arguments).await
    }

    /// `tools/call` of `name` in `locale`, when one is given.
    async fn call_in(&self, locale: Option<&str>, name: &str, arguments: Value) -> Value {
        self.sandbox
            .call_tool_in(&self.token, locale, name, arguments)
            .await
    }
}

/// The first text block: what a model reads.
fn text(result: &Value) -> String {
    result["content"][0]["text"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

fn data(result: &Value) -> Value {
    assert_ne!(result["isError"], true, "unexpected error: {result}");
    envelope(result)["data"].clone()
}

fn error_code(result: &Value) -> String {
    assert_eq!(result["isError"], true, "expected an error: {result}");
    envelope(result)["data"]["error"]["code"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// The identifiers in parentheses that start with `prefix`, in text order:
/// what a model picks from a list summary.
fn ids_in(text: &str, prefix: &str) -> Vec<String> {
    text.split('(')
        .skip(1)
        .filter_map(|rest| {
            let id: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            id.starts_with(prefix).then_some(id)
        })
        .collect()
}

/// The local time a location's answer states, e.g. "2026-03-10T14:02:11+01:00".
fn local_time_in(text: &str) -> String {
    let (_, after) = text
        .split_once("local time ")
        .unwrap_or_else(|| panic!("the text states the local time: {text}"));
    after.chars().take(25).collect()
}

fn days_in_month(year: i32, month: u32) -> u32 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        _ => 28,
    }
}

/// (year, month, day) of an ISO 8601 date-time or date.
fn ymd(value: &str) -> (i32, u32, u32) {
    (
        value[0..4].parse().unwrap(),
        value[5..7].parse().unwrap(),
        value[8..10].parse().unwrap(),
    )
}

fn next_day((year, month, day): (i32, u32, u32)) -> (i32, u32, u32) {
    if day < days_in_month(year, month) {
        (year, month, day + 1)
    } else if month < 12 {
        (year, month + 1, 1)
    } else {
        (year + 1, 1, 1)
    }
}

fn month_before(year: i32, month: u32) -> (i32, u32) {
    if month == 1 {
        (year - 1, 12)
    } else {
        (year, month - 1)
    }
}

async fn accept_the_oldest_waiting_order_while_another_operator_acts(sandbox: &Sandbox) {
    let model = Model::new(sandbox, demo::USER_MANAGER).await;
    let operator = Model::new(sandbox, demo::USER_STAFF).await;
    let waiting = json!({"location_id": demo::LOC_PARIS, "statuses": ["received"],
                         "sort": "oldest_first", "limit": 5});

    // "What orders are waiting?" — oldest first, ids in the text.
    let listed = model.call("chataigne_orders_list", waiting.clone()).await;
    let said = text(&listed);
    assert!(said.contains("order(s), oldest first"), "{said}");
    assert!(said.contains("received"), "{said}");
    let ids = ids_in(&said, "ord_");
    assert!(ids.len() >= 2, "the demo has orders waiting: {said}");
    let orders = data(&listed)["orders"].as_array().unwrap().clone();
    let times: Vec<&str> = orders
        .iter()
        .map(|o| o["created_at"].as_str().unwrap())
        .collect();
    let mut sorted = times.clone();
    sorted.sort();
    assert_eq!(times, sorted, "oldest first");
    assert_eq!(ids[0], orders[0]["id"], "the text names the oldest first");

    // Another operator accepts that order first.
    let first = operator
        .call(
            "chataigne_order_status_update",
            json!({"order_id": ids[0], "status": "accepted", "expected_status": "received"}),
        )
        .await;
    assert_ne!(first["isError"], true, "{first}");

    // "Accept the oldest": the model's accept finds it changed, and the text
    // says what it is now, where to read it again and what it can become.
    let late = model
        .call(
            "chataigne_order_status_update",
            json!({"order_id": ids[0], "status": "accepted", "expected_status": "received"}),
        )
        .await;
    assert_eq!(error_code(&late), "MCP_EXPECTED_STATE_MISMATCH");
    let said = text(&late);
    for needle in [
        "The order changed since it was read",
        "its current state is accepted",
        "chataigne_order_get",
        "expected_status accepted",
        "from accepted it can move to: preparing",
    ] {
        assert!(said.contains(needle), "{needle:?} in {said}");
    }

    // Reading the list again, the oldest waiting order is the next one; the
    // model accepts it and the text confirms the step.
    let again = model.call("chataigne_orders_list", waiting.clone()).await;
    let next = ids_in(&text(&again), "ord_");
    assert_eq!(next.first(), ids.get(1), "{}", text(&again));
    let accepted = model
        .call(
            "chataigne_order_status_update",
            json!({"order_id": next[0], "status": "accepted", "expected_status": "received"}),
        )
        .await;
    let said = text(&accepted);
    assert!(said.contains(&next[0]), "{said}");
    assert!(said.contains("received → accepted"), "{said}");

    // Going back is refused with the statuses allowed from the current one.
    let back = model
        .call(
            "chataigne_order_status_update",
            json!({"order_id": next[0], "status": "received", "expected_status": "accepted"}),
        )
        .await;
    assert_eq!(error_code(&back), "ORDER_STATUS_PRECONDITION_FAILED");
    let said = text(&back);
    assert!(
        said.contains("From accepted it can move to: preparing"),
        "{said}"
    );
    assert!(
        said.contains(
            "chataigne_order_status_update with one of them as status (the steps between are \
             taken too) and expected_status accepted"
        ),
        "{said}"
    );

    // The order of a cursor is part of its filters.
    let page = model
        .call(
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "sort": "oldest_first", "limit": 2}),
        )
        .await;
    let cursor = envelope(&page)["meta"]["next_cursor"]
        .as_str()
        .expect("more orders follow")
        .to_owned();
    let mixed = model
        .call(
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "sort": "newest_first", "limit": 2,
               "cursor": cursor}),
        )
        .await;
    assert_eq!(error_code(&mixed), "MCP_CURSOR_INVALID");
    assert!(
        text(&mixed).contains("Call chataigne_orders_list again without cursor"),
        "{mixed}"
    );
    let following = model
        .call(
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "sort": "oldest_first", "limit": 2,
               "cursor": cursor}),
        )
        .await;
    let first_page = data(&page)["orders"].as_array().unwrap().clone();
    let second_page = data(&following)["orders"].as_array().unwrap().clone();
    assert!(
        first_page[1]["created_at"].as_str() <= second_page[0]["created_at"].as_str(),
        "pages follow each other oldest first"
    );
}

async fn mark_an_item_sold_out_until_six_pm_local_time(sandbox: &Sandbox) {
    let model = Model::new(sandbox, demo::USER_MANAGER).await;

    // "Item X": typed without its accents.
    let found = model
        .call(
            "chataigne_catalog_items_list",
            json!({"location_id": demo::LOC_PARIS, "text": "boeuf bourguignon",
               "availability": "available"}),
        )
        .await;
    let said = text(&found);
    assert!(said.contains("Bœuf bourguignon"), "{said}");
    let item = ids_in(&said, "itm_")
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("the text names the item's id: {said}"));

    // "Until 6 pm": the location's answer gives its local time and offset.
    let location = model
        .call(
            "chataigne_location_get",
            json!({"location_id": demo::LOC_PARIS}),
        )
        .await;
    let said = text(&location);
    assert!(said.contains("Europe/Paris"), "{said}");
    let now = local_time_in(&said);
    assert_eq!(now, data(&location)["local_time"], "{said}");
    let offset = &now[19..];
    let hour: u32 = now[11..13].parse().unwrap();
    let day = if hour < 18 {
        ymd(&now)
    } else {
        next_day(ymd(&now))
    };
    let until = format!("{:04}-{:02}-{:02}T18:00:00{offset}", day.0, day.1, day.2);

    let updated = model
        .call_in(
            Some("fr-FR"),
            "chataigne_catalog_item_availability_update",
            json!({"item_id": item, "availability": "sold_out",
               "expected_availability": "available", "available_again_at": until}),
        )
        .await;
    let said = text(&updated);
    assert!(said.contains("Bœuf bourguignon"), "{said}");
    assert!(said.contains("épuisé"), "{said}");
    assert!(said.contains(&format!("de retour le {until}")), "{said}");
    assert_eq!(data(&updated)["item"]["available_again_at"], until.as_str());

    // Listed as sold out, with the time it comes back.
    let listed = model
        .call(
            "chataigne_catalog_items_list",
            json!({"location_id": demo::LOC_PARIS, "text": "BŒUF", "availability": "sold_out"}),
        )
        .await;
    let said = text(&listed);
    assert!(said.contains("sold out"), "{said}");
    assert!(said.contains(&format!("until {until}")), "{said}");

    // Removing the item instead is not an operation of this server.
    let removed = model
        .call(
            "chataigne_catalog_item_availability_update",
            json!({"item_id": item, "availability": "deleted",
               "expected_availability": "sold_out"}),
        )
        .await;
    assert_eq!(error_code(&removed), "MCP_INVALID_ARGUMENTS");
    assert!(
        text(&removed).contains("not available through this server"),
        "{removed}"
    );
}

async fn compare_last_months_sales_with_the_month_before(sandbox: &Sandbox) {
    let model = Model::new(sandbox, demo::USER_MANAGER).await;
    let location = model
        .call(
            "chataigne_location_get",
            json!({"location_id": demo::LOC_PARIS}),
        )
        .await;
    let (year, month, _) = ymd(&local_time_in(&text(&location)));
    let last = month_before(year, month);
    let before = month_before(last.0, last.1);
    let date_from = format!("{:04}-{:02}-01", before.0, before.1);
    let date_to = format!(
        "{:04}-{:02}-{:02}",
        last.0,
        last.1,
        days_in_month(last.0, last.1)
    );
    let metrics = [
        "orders_count",
        "revenue",
        "average_order_value",
        "delivery_share",
    ];
    let result = model
        .call(
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": metrics, "bucket": "month",
               "date_from": date_from, "date_to": date_to}),
        )
        .await;
    let d = data(&result);
    let buckets = d["buckets"].as_array().unwrap();
    assert_eq!(buckets.len(), 2, "{d}");
    let said = text(&result);
    assert!(said.contains("2 bucket(s) (month)"), "{said}");
    assert!(said.contains("Total: orders "), "{said}");
    for bucket in buckets {
        // The values are keyed by the metric names asked for.
        let mut keys: Vec<&str> = bucket["values"]
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        keys.sort_unstable();
        let mut asked = metrics.to_vec();
        asked.sort_unstable();
        assert_eq!(keys, asked);
        // Each month's own figures are in the text.
        let start = bucket["start"].as_str().unwrap();
        let line = said
            .lines()
            .find(|line| line.starts_with(&format!("- {start}:")))
            .unwrap_or_else(|| panic!("a line for {start}: {said}"));
        let revenue = bucket["values"]["revenue"]["display"].as_str().unwrap();
        let average = bucket["values"]["average_order_value"]["display"]
            .as_str()
            .unwrap();
        assert!(line.contains(&format!("revenue {revenue}")), "{line}");
        assert!(
            line.contains(&format!("average order value {average}")),
            "{line}"
        );
        let orders = bucket["values"]["orders_count"].as_u64().unwrap();
        let grouped = orders
            .to_string()
            .as_bytes()
            .rchunks(3)
            .rev()
            .map(|c| std::str::from_utf8(c).unwrap())
            .collect::<Vec<_>>()
            .join(",");
        assert!(line.contains(&format!("orders {grouped}")), "{line}");
        assert!(line.contains("delivery share "), "{line}");
    }

    // A year of days with every metric: the text stays within 4 KiB and
    // says that the remaining buckets are in the data.
    let wide = model
        .call(
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "bucket": "day",
               "metrics": ["orders_count", "revenue", "average_order_value",
                           "cancelled_count", "completed_count", "items_sold",
                           "new_customers", "pickup_share"],
               "date_from": format!("{:04}-{:02}-01", before.0, before.1),
               "date_to": date_to}),
        )
        .await;
    let said = text(&wide);
    assert!(said.len() <= 4096, "{} bytes", said.len());
    assert!(
        said.contains("more bucket(s) not shown (4 KiB text limit)"),
        "{said}"
    );
}

/// The statuses the order write offers are the ones an order can reach, and
/// a cancellation asked through them is refused as not available here.
async fn order_targets_are_reachable_and_cancellation_is_unavailable(sandbox: &Sandbox) {
    let model = Model::new(sandbox, demo::USER_MANAGER).await;
    let (_, listed) = sandbox
        .mcp(
            &model.token,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    let tool = listed["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "chataigne_order_status_update")
        .unwrap()
        .clone();
    let properties = &tool["inputSchema"]["properties"];
    assert_eq!(
        properties["status"]["enum"],
        json!([
            "accepted",
            "preparing",
            "ready",
            "out_for_delivery",
            "completed"
        ])
    );
    assert_eq!(
        properties["expected_status"]["enum"],
        json!([
            "received",
            "accepted",
            "preparing",
            "ready",
            "out_for_delivery"
        ])
    );
    let orders = model
        .call(
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_LYON, "statuses": ["received"], "limit": 1}),
        )
        .await;
    let order = data(&orders)["orders"][0]["id"].clone();
    for status in ["cancelled", "Canceled", "refunded", "rejected"] {
        let refused = model
            .call(
                "chataigne_order_status_update",
                json!({"order_id": order, "status": status, "expected_status": "received"}),
            )
            .await;
        assert_eq!(error_code(&refused), "MCP_INVALID_ARGUMENTS", "{status}");
        let said = text(&refused);
        assert!(
            said.contains("not available through this server"),
            "{status}: {said}"
        );
        assert!(!said.contains("current status"), "{status}: {said}");
    }
    let unknown = model
        .call(
            "chataigne_order_status_update",
            json!({"order_id": order, "status": "shipped", "expected_status": "received"}),
        )
        .await;
    assert!(
        text(&unknown).contains(
            "status must be one of: accepted, preparing, ready, out_for_delivery, completed"
        ),
        "{unknown}"
    );
}

/// A record's own identifier is `id` everywhere: in lists, gets and the
/// results of creations and writes; `<resource>_id` always names another
/// record.
async fn every_record_carries_its_own_identifier_as_id(sandbox: &Sandbox) {
    let manager = Model::new(sandbox, demo::USER_MANAGER).await;
    let admin = Model::with_scopes(
        sandbox,
        demo::USER_ADMIN,
        &["admin.organizations.create", "admin.locations.create"],
    )
    .await;
    let own = |value: &Value, prefix: &str, what: &str| {
        let id = value["id"]
            .as_str()
            .unwrap_or_else(|| panic!("{what} has an id: {value}"));
        assert!(id.starts_with(prefix), "{what}: {id}");
        let own_key = format!("{}_id", what);
        assert!(
            value.get(&own_key).is_none(),
            "{what} repeats its id as {own_key}: {value}"
        );
    };
    let orgs = data(
        &manager
            .call("chataigne_organizations_list", json!({}))
            .await,
    );
    own(&orgs["organizations"][0], "org_", "organization");
    let locations = data(
        &manager
            .call(
                "chataigne_locations_list",
                json!({"organization_id": demo::ORG_BISTRO}),
            )
            .await,
    );
    own(&locations["locations"][0], "loc_", "location");
    let location = data(
        &manager
            .call(
                "chataigne_location_get",
                json!({"location_id": demo::LOC_PARIS}),
            )
            .await,
    );
    own(&location["location"], "loc_", "location");
    let orders = data(
        &manager
            .call("chataigne_orders_list", json!({"limit": 1}))
            .await,
    );
    own(&orders["orders"][0], "ord_", "order");
    let conversations = data(
        &manager
            .call(
                "chataigne_conversations_list",
                json!({"location_id": demo::LOC_PARIS, "limit": 1}),
            )
            .await,
    );
    own(&conversations["conversations"][0], "conv_", "conversation");
    let sent = data(
        &manager
            .call(
                "chataigne_conversation_instruction_send",
                json!({"conversation_id": conversations["conversations"][0]["id"],
                   "text": "Proposer le dessert du jour.",
                   "idempotency_key": uuid::Uuid::new_v4().to_string()}),
            )
            .await,
    );
    own(&sent["message"], "msg_", "message");
    let created = data(
        &admin
            .call(
                "chataigne_organization_create",
                json!({"name": "Brasserie du Quai",
                   "idempotency_key": uuid::Uuid::new_v4().to_string()}),
            )
            .await,
    );
    own(&created["organization"], "org_", "organization");
    let located = data(
        &admin
            .call(
                "chataigne_location_create",
                json!({"organization_id": created["organization"]["id"], "name": "Quai 1",
                   "line1": "1 quai Perrache", "city": "Lyon", "postal_code": "69002",
                   "country": "FR", "timezone": "Europe/Paris", "currency": "EUR",
                   "idempotency_key": uuid::Uuid::new_v4().to_string()}),
            )
            .await,
    );
    own(&located["location"], "loc_", "location");
    assert_eq!(
        located["location"]["organization_id"],
        created["organization"]["id"]
    );
}

/// A location's currency and timezone are checked against ISO 4217 and the
/// IANA database, and the refusal says what is accepted.
async fn location_currencies_and_timezones_are_checked(sandbox: &Sandbox) {
    let admin = Model::with_scopes(sandbox, demo::USER_ADMIN, &["admin.locations.create"]).await;
    let create = |currency: &str, timezone: &str| {
        json!({"organization_id": demo::ORG_BISTRO, "name": "Essai", "line1": "1 rue Neuve",
               "city": "Lille", "postal_code": "59000", "country": "FR",
               "timezone": timezone, "currency": currency,
               "idempotency_key": uuid::Uuid::new_v4().to_string()})
    };
    for (currency, timezone, needle) in [
        (
            "XYZ",
            "Europe/Paris",
            "currency must be the ISO 4217 code of a currency in use",
        ),
        (
            "XAU",
            "Europe/Paris",
            "currency must be the ISO 4217 code of a currency in use",
        ),
        (
            "EUR",
            "Europe/Lutece",
            "timezone must be an IANA time zone name",
        ),
        (
            "EUR",
            "europe/paris",
            "spelled with its capitals: Europe/Paris",
        ),
    ] {
        let refused = admin
            .call("chataigne_location_create", create(currency, timezone))
            .await;
        assert_eq!(
            error_code(&refused),
            "MCP_INVALID_ARGUMENTS",
            "{currency} {timezone}"
        );
        assert!(text(&refused).contains(needle), "{needle:?}: {refused}");
    }
    let yen = admin
        .call("chataigne_location_create", create("JPY", "Asia/Tokyo"))
        .await;
    assert_ne!(yen["isError"], true, "{yen}");
}

/// French answers say statuses in French words, and labels sit beside the
/// codes in the structured result.
async fn french_texts_use_french_words_for_statuses(sandbox: &Sandbox) {
    let model = Model::new(sandbox, demo::USER_MANAGER).await;
    let orders = model
        .call_in(
            Some("fr"),
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_BORDEAUX, "statuses": ["received"], "limit": 3}),
        )
        .await;
    let said = text(&orders);
    assert!(said.contains("reçue"), "{said}");
    assert!(!said.contains(" received"), "{said}");
    let first = &data(&orders)["orders"][0];
    assert_eq!(first["status"], "received");
    assert_eq!(first["status_label"], "reçue");
    assert!(first["fulfillment_label"].is_string(), "{first}");

    let closed = model
        .call_in(
            Some("fr"),
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_BORDEAUX, "status": "closed", "limit": 2}),
        )
        .await;
    let said = text(&closed);
    assert!(said.contains("clôturée"), "{said}");
    assert!(!said.contains("closed"), "{said}");
    let waiting = model
        .call_in(
            Some("fr"),
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_BORDEAUX, "status": "waiting", "limit": 2}),
        )
        .await;
    assert!(text(&waiting).contains("en attente du client"), "{waiting}");
    let open = model
        .call(
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_BORDEAUX, "status": "open", "limit": 2}),
        )
        .await;
    let conversation = &data(&open)["conversations"][0];
    assert_eq!(
        conversation["status"], "open",
        "every location has open conversations"
    );
    assert_eq!(
        conversation["last_message_sender"], "customer",
        "{conversation}"
    );

    let intake = model
        .call_in(
            Some("fr"),
            "chataigne_location_status_get",
            json!({"location_id": demo::LOC_BORDEAUX}),
        )
        .await;
    assert!(text(&intake).contains("prend les commandes"), "{intake}");
}

/// A model's session that counts its calls and writes: what a staff request
/// costs. The locations' ids come from the session's orientation (one
/// `chataigne_organizations_list` and one `chataigne_locations_list`, whose
/// texts carry every id), counted apart.
struct Session<'a> {
    model: Model<'a>,
    calls: std::cell::Cell<usize>,
    writes: std::cell::Cell<usize>,
}

impl<'a> Session<'a> {
    async fn start(sandbox: &'a Sandbox) -> Session<'a> {
        let model = Model::new(sandbox, demo::USER_MANAGER).await;
        let orgs = text(&model.call("chataigne_organizations_list", json!({})).await);
        let org = ids_in(&orgs, "org_");
        assert_eq!(org, vec![demo::ORG_BISTRO.to_owned()], "{orgs}");
        let locations = text(
            &model
                .call(
                    "chataigne_locations_list",
                    json!({"organization_id": org[0]}),
                )
                .await,
        );
        for id in [demo::LOC_PARIS, demo::LOC_LYON, demo::LOC_BORDEAUX] {
            assert!(locations.contains(id), "{id} in {locations}");
        }
        Session {
            model,
            calls: std::cell::Cell::new(0),
            writes: std::cell::Cell::new(0),
        }
    }

    /// A call of the request; its text, and the result for the checks.
    async fn call_in(&self, locale: Option<&str>, name: &str, arguments: Value) -> (String, Value) {
        self.calls.set(self.calls.get() + 1);
        if !name.ends_with("_list")
            && !name.ends_with("_get")
            && name != "chataigne_analytics_query"
        {
            self.writes.set(self.writes.get() + 1);
        }
        let result = self.model.call_in(locale, name, arguments).await;
        (text(&result), result)
    }

    async fn call(&self, name: &str, arguments: Value) -> (String, Value) {
        self.call_in(None, name, arguments).await
    }

    /// Asserts the request's cost, then starts counting the next one.
    fn cost(&self, request: &str, calls: usize, writes: usize) {
        assert!(
            self.calls.get() <= calls,
            "{request}: {} calls, {calls} at most",
            self.calls.get()
        );
        assert_eq!(self.writes.get(), writes, "{request}: writes");
        self.calls.set(0);
        self.writes.set(0);
    }
}

/// "Which orders are waiting at Paris 11e?": one call, whose text names
/// every waiting order with its number, customer, total and time.
async fn which_orders_are_waiting_at_paris_11e(sandbox: &Sandbox) {
    let session = Session::start(sandbox).await;
    let (said, result) = session
        .call(
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "statuses": ["received"], "limit": 50}),
        )
        .await;
    let orders = data(&result)["orders"].as_array().unwrap().clone();
    assert!(!orders.is_empty(), "the demo has waiting orders");
    assert!(
        said.starts_with(&format!("{} order(s)", orders.len())),
        "{said}"
    );
    for order in &orders {
        let line = said
            .lines()
            .find(|l| l.contains(order["id"].as_str().unwrap()))
            .unwrap_or_else(|| panic!("a line for {}: {said}", order["id"]));
        for value in [
            &order["number"],
            &order["customer_name"],
            &order["total"]["display"],
            &order["created_at"],
            &order["status_label"],
        ] {
            assert!(line.contains(value.as_str().unwrap()), "{value} in {line}");
        }
    }
    session.cost("which orders are waiting", 1, 0);
}

/// "Make the crème brûlée unavailable tonight": found by its name typed
/// without accents, its id read from the text, one write.
async fn make_the_creme_brulee_unavailable_tonight(sandbox: &Sandbox) {
    let session = Session::start(sandbox).await;
    let (said, _) = session
        .call(
            "chataigne_catalog_items_list",
            json!({"location_id": demo::LOC_PARIS, "text": "creme brulee"}),
        )
        .await;
    assert!(said.contains("Crème brûlée"), "{said}");
    assert!(said.contains("available"), "{said}");
    let item = ids_in(&said, "itm_")
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("the text names the item's id: {said}"));
    let (said, result) = session
        .call(
            "chataigne_catalog_item_availability_update",
            json!({"item_id": item, "availability": "sold_out",
                   "expected_availability": "available"}),
        )
        .await;
    assert_eq!(data(&result)["item"]["availability"], "sold_out");
    assert!(
        said.contains("Crème brûlée") && said.contains("sold out"),
        "{said}"
    );
    assert!(said.contains(&item), "{said}");
    session.cost("make the crème brûlée unavailable", 2, 1);
}

/// "Answer the customer who asked about allergens": an English search in
/// French transcripts says so and suggests the stem; the search by stem
/// quotes the customer's question; the answer is one write.
async fn answer_the_customer_who_asked_about_allergens(sandbox: &Sandbox) {
    let session = Session::start(sandbox).await;
    let (said, _) = session
        .call(
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": "allergens", "status": "open"}),
        )
        .await;
    assert!(said.contains("write mostly in French (fr)"), "{said}");
    assert!(said.contains("shorter stem"), "{said}");
    let (said, result) = session
        .call(
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": "allerg", "limit": 5}),
        )
        .await;
    let found = data(&result)["conversations"].as_array().unwrap().clone();
    assert!(!found.is_empty(), "{said}");
    // The question is in the text, on the conversation's line.
    let line = said
        .lines()
        .find(|l| l.contains("matching message"))
        .unwrap_or_else(|| panic!("a quoted match: {said}"));
    assert!(line.contains("allergique"), "{line}");
    let conversation = line
        .trim_start_matches("- ")
        .split(' ')
        .next()
        .unwrap()
        .to_owned();
    assert!(conversation.starts_with("conv_"), "{line}");
    let (said, result) = session
        .call(
            "chataigne_conversation_message_send",
            json!({"conversation_id": conversation,
                   "text": "Bonjour, le velouté contient des noisettes : nous vous conseillons la salade de chèvre.",
                   "idempotency_key": uuid::Uuid::new_v4().to_string()}),
        )
        .await;
    assert!(said.contains("queued for the customer"), "{said}");
    assert!(said.contains(&conversation), "{said}");
    assert_eq!(
        data(&result)["message"]["conversation_id"],
        conversation.as_str()
    );
    session.cost("answer the customer about allergens", 3, 1);
}

/// "Opening hours on Sunday": one call, whose text gives Sunday's periods.
async fn opening_hours_on_sunday(sandbox: &Sandbox) {
    let session = Session::start(sandbox).await;
    let (said, result) = session
        .call(
            "chataigne_location_settings_get",
            json!({"location_id": demo::LOC_PARIS, "sections": ["opening_hours"]}),
        )
        .await;
    let days = data(&result)["settings"]["opening_hours"]["days"]
        .as_array()
        .unwrap()
        .clone();
    let sunday = days
        .iter()
        .find(|d| d["weekday"] == "sunday")
        .expect("sunday");
    let line = said
        .lines()
        .find(|l| l.trim_start().starts_with("- Sunday:"))
        .unwrap_or_else(|| panic!("a line for Sunday: {said}"));
    for period in sunday["periods"].as_array().unwrap() {
        let span = format!(
            "{}–{}",
            period["opens"].as_str().unwrap(),
            period["closes"].as_str().unwrap()
        );
        assert!(line.contains(&span), "{span} in {line}");
    }
    assert!(said.contains("timezone Europe/Paris"), "{said}");
    session.cost("opening hours on Sunday", 1, 0);
}

/// "Find order PAR-… and mark it ready": the number staff say finds the
/// order (its id and status in the text), and one write moves it from
/// received to ready: 2 calls, 1 write.
async fn find_an_order_by_its_number_and_mark_it_ready(sandbox: &Sandbox) {
    // The number staff read from their screen.
    let setup = Model::new(sandbox, demo::USER_MANAGER).await;
    let waiting = setup
        .call(
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "statuses": ["received"], "limit": 1}),
        )
        .await;
    let number = data(&waiting)["orders"][0]["number"]
        .as_str()
        .expect("a waiting order")
        .to_owned();

    let session = Session::start(sandbox).await;
    let (said, _) = session
        .call(
            "chataigne_orders_list",
            json!({"number": number.to_lowercase()}),
        )
        .await;
    assert!(said.starts_with("1 order(s)"), "{said}");
    assert!(
        said.contains(&number) && said.contains("received"),
        "{said}"
    );
    let order = ids_in(&said, "ord_")
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("the text names the order's id: {said}"));
    let (said, result) = session
        .call(
            "chataigne_order_status_update",
            json!({"order_id": order, "status": "ready", "expected_status": "received"}),
        )
        .await;
    assert_eq!(data(&result)["order"]["status"], "ready");
    assert!(said.contains(&number), "{said}");
    assert!(
        said.contains("received → accepted → preparing → ready"),
        "{said}"
    );
    session.cost("find order by number and mark it ready", 2, 1);
}

/// "Is Bordeaux accepting orders?": one call, whose text says both whether
/// order taking is on and whether the opening hours have it open now.
async fn is_bordeaux_accepting_orders(sandbox: &Sandbox) {
    let session = Session::start(sandbox).await;
    let (said, result) = session
        .call(
            "chataigne_location_status_get",
            json!({"location_id": demo::LOC_BORDEAUX}),
        )
        .await;
    let d = data(&result);
    assert!(
        said.contains(d["status"]["status_label"].as_str().unwrap()),
        "{said}"
    );
    // The opening hours' answer sits beside the order-taking switch.
    let opening = d;
    if opening["open_now"] == true {
        assert!(said.contains("open now by its opening hours"), "{said}");
    } else {
        assert!(said.contains("closed now by its opening hours"), "{said}");
        let next = opening["next_opening_at"].as_str().expect("a next opening");
        assert!(said.contains(&format!("next opening {next}")), "{said}");
    }
    session.cost("is Bordeaux accepting orders", 1, 0);
}

/// "Sales last week vs the week before": the location's local date, then
/// one query of last week with the week before, whose text gives both
/// weeks' figures and the change: 2 calls.
async fn sales_last_week_against_the_week_before(sandbox: &Sandbox) {
    let session = Session::start(sandbox).await;
    let (said, _) = session
        .call(
            "chataigne_location_get",
            json!({"location_id": demo::LOC_PARIS}),
        )
        .await;
    let today =
        chrono::NaiveDate::parse_from_str(&local_time_in(&said)[..10], "%Y-%m-%d").expect("a date");
    use chrono::Datelike;
    let this_monday = today - chrono::Days::new(u64::from(today.weekday().num_days_from_monday()));
    let (from, to) = (
        this_monday - chrono::Days::new(7),
        this_monday - chrono::Days::new(1),
    );
    let (said, result) = session
        .call(
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ["orders_count", "revenue"],
                   "bucket": "week", "date_from": from.to_string(), "date_to": to.to_string(),
                   "compare_previous": true}),
        )
        .await;
    let d = data(&result);
    let comparison = &d["comparison"];
    assert_eq!(
        comparison["previous_date_from"],
        (from - chrono::Days::new(7)).to_string()
    );
    let revenue = d["totals"]["revenue"]["display"].as_str().unwrap();
    let before = comparison["previous_totals"]["revenue"]["display"]
        .as_str()
        .unwrap();
    // One change per metric, in the order of `metrics`: the revenue's is second.
    let change = &comparison["changes"][1];
    let percent = change["percent"]
        .as_f64()
        .expect("a previous week with revenue");
    let percent = format!("({}{percent}%)", if percent > 0.0 { "+" } else { "" });
    for needle in [
        format!("revenue {revenue}"),
        "Previous period totals: orders ".to_owned(),
        format!("revenue {before}"),
        format!(
            "Vs {} to {}:",
            comparison["previous_date_from"].as_str().unwrap(),
            comparison["previous_date_to"].as_str().unwrap()
        ),
        percent,
    ] {
        assert!(said.contains(&needle), "{needle:?} in {said}");
    }
    session.cost("sales last week vs the week before", 2, 0);
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
        accept_the_oldest_waiting_order_while_another_operator_acts,
        mark_an_item_sold_out_until_six_pm_local_time,
        compare_last_months_sales_with_the_month_before,
        order_targets_are_reachable_and_cancellation_is_unavailable,
        every_record_carries_its_own_identifier_as_id,
        location_currencies_and_timezones_are_checked,
        french_texts_use_french_words_for_statuses,
        which_orders_are_waiting_at_paris_11e,
        make_the_creme_brulee_unavailable_tonight,
        answer_the_customer_who_asked_about_allergens,
        opening_hours_on_sunday,
        find_an_order_by_its_number_and_mark_it_ready,
        is_bordeaux_accepting_orders,
        sales_last_week_against_the_week_before,
    ],
}
