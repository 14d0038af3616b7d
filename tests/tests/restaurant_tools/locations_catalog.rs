//! The location, settings, order-intake, catalog, discount and integration
//! tools end to end over MCP HTTP and over the typed gRPC API (`Locations`,
//! `Catalog`), on SQLite and PostgreSQL: output conforming to each tool's
//! output schema, per-section scopes refusing the whole settings call,
//! writes guarded by the observed state, cross-tenant refusals, cursors, and
//! the deliberately absent operations answered as unknown tools.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chataigne_tests::envelope;
use std::collections::HashMap;

use chataigne_common::ErrorCode;
use chataigne_common::codes::decode_status;
use chataigne_proto::tools::v1::{
    GetLocationSettingsRequest, IntakeStatus, ItemAvailability, ListCatalogItemsRequest,
    ListDiscountsRequest, Page, SettingsSection, UpdateLocationStatusRequest,
    catalog_client::CatalogClient, locations_client::LocationsClient,
};
use chataigne_tests::{Backend, Sandbox, demo};
use serde_json::{Value, json};

const MINE: [&str; 8] = [
    "chataigne_location_get",
    "chataigne_location_settings_get",
    "chataigne_location_status_get",
    "chataigne_location_status_update",
    "chataigne_catalog_items_list",
    "chataigne_catalog_item_availability_update",
    "chataigne_discounts_list",
    "chataigne_integrations_list",
];

const ABSENT: [&str; 11] = [
    "chataigne_payment_capture",
    "chataigne_order_refund",
    "chataigne_order_cancel",
    "chataigne_order_reject",
    "chataigne_location_delete",
    "chataigne_orders_export",
    "chataigne_campaign_send",
    "chataigne_integration_credentials_get",
    "chataigne_provider_sync",
    "chataigne_onboarding_complete",
    "chataigne_platform_admin",
];

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// `ms` as ISO 8601 with the Paris offset.
fn paris_time(ms: i64) -> String {
    chataigne_tools::present::timestamp(ms, "Europe/Paris")
}

/// Calls tools and checks every successful result against the tool's output schema.
struct Client<'a> {
    sandbox: &'a Sandbox,
    schemas: HashMap<String, jsonschema::Validator>,
}

impl Client<'_> {
    async fn call(&self, token: &str, name: &str, arguments: Value) -> Value {
        let result = self.sandbox.call_tool(token, name, arguments).await;
        if result["isError"] != true {
            let validator = &self.schemas[name];
            let errors: Vec<String> = validator
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

/// `tools/call` returning the HTTP status and the whole JSON-RPC body.
async fn raw_call(sandbox: &Sandbox, token: &str, name: &str, arguments: Value) -> (u16, Value) {
    sandbox
        .mcp(
            token,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": name, "arguments": arguments}}),
        )
        .await
}

fn error_code(result: &Value) -> String {
    assert_eq!(result["isError"], true, "expected an error: {result}");
    envelope(result)["data"]["error"]["code"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

fn data(result: &Value) -> &Value {
    assert_ne!(result["isError"], true, "unexpected error: {result}");
    &result["structuredContent"]["data"]
}

async fn catalogue_and_absent_tools(sandbox: &Sandbox, token: &str) -> HashMap<String, Value> {
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
        if write {
            assert_eq!(tool["annotations"]["destructiveHint"], true, "{name}");
        }
        assert_eq!(tool["annotations"]["openWorldHint"], false, "{name}");
    }
    for name in ABSENT {
        assert!(!tools.contains_key(name), "{name} listed");
        let (status, body) = sandbox
            .mcp(
                token,
                json!({"jsonrpc":"2.0","id":7,"method":"tools/call",
                       "params":{"name": name, "arguments": {}}}),
            )
            .await;
        assert_eq!(status, 200, "{name}: {body}");
        assert_eq!(body["error"]["code"], -32602, "{name}: {body}");
        assert!(body.get("result").is_none(), "{name}");
    }
    tools
}

async fn locations_and_catalog(backend: Backend) {
    let Some(sandbox) = Sandbox::start(backend).await else {
        assert!(!chataigne_tests::in_ci(), "PostgreSQL is required in CI");
        return;
    };
    let manager = sandbox.token(demo::USER_MANAGER).await;
    let staff = sandbox.token(demo::USER_STAFF).await;
    let analyst = sandbox.token(demo::USER_ANALYST).await;
    let tools = catalogue_and_absent_tools(&sandbox, &manager).await;
    let client = Client {
        sandbox: &sandbox,
        schemas: tools
            .iter()
            .map(|(name, tool)| {
                let validator = jsonschema::options()
                    .build(&tool["outputSchema"])
                    .expect("output schema compiles");
                (name.clone(), validator)
            })
            .collect(),
    };

    // Location detail with its intake, in French.
    let location = client
        .call(
            &manager,
            "chataigne_location_get",
            json!({"location_id": demo::LOC_PARIS}),
        )
        .await;
    let d = data(&location);
    assert_eq!(d["location"]["timezone"], "Europe/Paris");
    assert_eq!(d["location"]["currency"], "EUR");
    assert_eq!(d["status"]["status"], "accepting");

    // Cross-tenant and unknown locations look the same.
    let foreign = client
        .call(
            &analyst,
            "chataigne_location_get",
            json!({"location_id": demo::LOC_PARIS}),
        )
        .await;
    let missing = client
        .call(
            &analyst,
            "chataigne_location_get",
            json!({"location_id": "loc_nope"}),
        )
        .await;
    assert_eq!(error_code(&foreign), "MCP_RESOURCE_FORBIDDEN");
    assert_eq!(error_code(&missing), "MCP_RESOURCE_FORBIDDEN");
    assert_eq!(
        envelope(&foreign)["data"]["error"]["message"],
        envelope(&missing)["data"]["error"]["message"]
    );

    // Settings: every section for the manager.
    let all_sections = json!([
        "store",
        "order",
        "opening_hours",
        "delivery",
        "payment_methods",
        "ai",
        "loyalty",
        "referrals",
        "notifications"
    ]);
    let settings = client
        .call(
            &manager,
            "chataigne_location_settings_get",
            json!({"location_id": demo::LOC_PARIS, "sections": all_sections}),
        )
        .await;
    let s = &data(&settings)["settings"];
    assert_eq!(s["opening_hours"]["days"].as_array().unwrap().len(), 7);
    assert!(s["delivery"]["radius_km"].as_f64().unwrap() > 0.0);
    assert_eq!(s["delivery"]["fee"]["currency"], "EUR");
    assert!(s["loyalty"]["points_per_currency_unit"].as_u64().unwrap() > 0);
    let only_store = client
        .call(
            &manager,
            "chataigne_location_settings_get",
            json!({"location_id": demo::LOC_PARIS, "sections": ["store"]}),
        )
        .await;
    assert!(data(&only_store)["settings"]["loyalty"].is_null());
    assert!(data(&only_store)["settings"]["store"]["public_name"].is_string());
    // A token lacking loyalty.read asking for store and loyalty is refused whole.
    let scopes: Vec<&str> = demo::demo_token_scopes()
        .into_iter()
        .filter(|s| *s != "loyalty.read")
        .collect();
    let no_loyalty = sandbox
        .token_for(demo::USER_MANAGER, &scopes, None)
        .await
        .unwrap();
    let (status, refused) = raw_call(
        &sandbox,
        &no_loyalty,
        "chataigne_location_settings_get",
        json!({"location_id": demo::LOC_PARIS, "sections": ["store", "loyalty"]}),
    )
    .await;
    assert_eq!(status, 403, "{refused}");
    let refused = &refused["result"];
    assert_eq!(error_code(refused), "MCP_SCOPE_REQUIRED");
    assert_eq!(
        envelope(refused)["data"]["error"]["details"]["scope"],
        "loyalty.read"
    );
    assert!(
        refused["structuredContent"]["data"]
            .get("settings")
            .is_none()
    );
    assert!(!refused.to_string().contains("public_name"));
    let store_only = client
        .call(
            &no_loyalty,
            "chataigne_location_settings_get",
            json!({"location_id": demo::LOC_PARIS, "sections": ["store"]}),
        )
        .await;
    assert!(data(&store_only)["settings"]["store"].is_object());
    // Staff hold settings.read in no role: refused by live role permissions.
    let (_, staff_settings) = raw_call(
        &sandbox,
        &staff,
        "chataigne_location_settings_get",
        json!({"location_id": demo::LOC_PARIS, "sections": ["store"]}),
    )
    .await;
    assert_eq!(
        error_code(&staff_settings["result"]),
        "MCP_RESOURCE_FORBIDDEN"
    );
    let duplicate = client
        .call(
            &manager,
            "chataigne_location_settings_get",
            json!({"location_id": demo::LOC_PARIS, "sections": ["store", "store"]}),
        )
        .await;
    assert_eq!(error_code(&duplicate), "MCP_INVALID_ARGUMENTS");

    // Order intake: pause with the observed status, then a stale observation.
    let until = paris_time(now_ms() + 2 * 3_600_000);
    let paused = client
        .call(
            &manager,
            "chataigne_location_status_update",
            json!({"location_id": demo::LOC_PARIS, "status": "paused",
                   "expected_status": "accepting", "paused_until": until, "reason": "busy"}),
        )
        .await;
    assert_eq!(data(&paused)["status"]["status"], "paused");
    assert_eq!(data(&paused)["status"]["reason"], "busy");
    assert_eq!(data(&paused)["status"]["paused_until"], until.as_str());
    let stale = client
        .call(
            &manager,
            "chataigne_location_status_update",
            json!({"location_id": demo::LOC_PARIS, "status": "paused",
                   "expected_status": "accepting"}),
        )
        .await;
    assert_eq!(error_code(&stale), "MCP_EXPECTED_STATE_MISMATCH");
    assert_eq!(
        envelope(&stale)["data"]["error"]["details"]["current_state"],
        "paused"
    );
    let status = client
        .call(
            &manager,
            "chataigne_location_status_get",
            json!({"location_id": demo::LOC_PARIS}),
        )
        .await;
    assert_eq!(data(&status)["status"]["status"], "paused");
    assert_eq!(data(&status)["status"]["paused_until"], until.as_str());
    for bad in [
        json!({"location_id": demo::LOC_PARIS, "status": "paused", "expected_status": "paused",
               "paused_until": paris_time(now_ms() - 60_000)}),
        json!({"location_id": demo::LOC_PARIS, "status": "paused", "expected_status": "paused",
               "paused_until": paris_time(now_ms() + 8 * 86_400_000)}),
        json!({"location_id": demo::LOC_PARIS, "status": "accepting", "expected_status": "paused",
               "paused_until": paris_time(now_ms() + 3_600_000)}),
        json!({"location_id": demo::LOC_PARIS, "status": "accepting", "expected_status": "paused",
               "reason": "busy"}),
        json!({"location_id": demo::LOC_PARIS, "status": "paused"}),
    ] {
        let refused = client
            .call(&manager, "chataigne_location_status_update", bad.clone())
            .await;
        assert_eq!(error_code(&refused), "MCP_INVALID_ARGUMENTS", "{bad}");
    }
    let sibling = client
        .call(
            &staff,
            "chataigne_location_status_update",
            json!({"location_id": demo::LOC_LYON, "status": "paused",
                   "expected_status": "accepting"}),
        )
        .await;
    assert_eq!(error_code(&sibling), "MCP_RESOURCE_FORBIDDEN");

    // Catalog: every Paris item exactly once across pages.
    let mut seen = Vec::new();
    let mut arguments = json!({"location_id": demo::LOC_PARIS, "limit": 7});
    let mut first_cursor = None;
    loop {
        let page = client
            .call(&manager, "chataigne_catalog_items_list", arguments.clone())
            .await;
        for item in data(&page)["items"].as_array().unwrap() {
            assert!(item["price"]["display"].as_str().unwrap().contains('€'));
            assert!(item["category_name"].is_string());
            seen.push(item.clone());
        }
        let Some(cursor) = page["structuredContent"]["meta"]["next_cursor"].as_str() else {
            break;
        };
        first_cursor.get_or_insert(cursor.to_owned());
        arguments["cursor"] = json!(cursor);
    }
    let mut ids: Vec<&str> = seen.iter().map(|i| i["id"].as_str().unwrap()).collect();
    let total = ids.len();
    assert!(total > 7, "several pages");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), total, "no item twice");
    let reused = client
        .call(
            &manager,
            "chataigne_catalog_items_list",
            json!({"location_id": demo::LOC_PARIS, "limit": 7, "availability": "available",
                   "cursor": first_cursor.unwrap()}),
        )
        .await;
    assert_eq!(error_code(&reused), "MCP_CURSOR_INVALID");
    // Text filter, trimmed and case-insensitive.
    let name = seen[0]["name"].as_str().unwrap();
    let word: String = name
        .chars()
        .filter(char::is_ascii_alphabetic)
        .take(3)
        .collect();
    let found = client
        .call(
            &manager,
            "chataigne_catalog_items_list",
            json!({"location_id": demo::LOC_PARIS, "text": format!(" {} ", word.to_uppercase()),
                   "limit": 50}),
        )
        .await;
    assert!(!data(&found)["items"].as_array().unwrap().is_empty());
    let too_long = client
        .call(
            &manager,
            "chataigne_catalog_items_list",
            json!({"location_id": demo::LOC_PARIS, "text": "x".repeat(101)}),
        )
        .await;
    assert_eq!(error_code(&too_long), "MCP_INVALID_ARGUMENTS");

    // Availability: sold out with the observed availability, then stale.
    let item = seen
        .iter()
        .find(|i| i["availability"] == "available")
        .unwrap();
    let item_id = item["id"].as_str().unwrap();
    let back = paris_time(now_ms() + 3 * 3_600_000);
    let sold_out = client
        .call(
            &staff,
            "chataigne_catalog_item_availability_update",
            json!({"item_id": item_id, "availability": "sold_out",
                   "expected_availability": "available", "available_again_at": back}),
        )
        .await;
    assert_eq!(data(&sold_out)["item"]["availability"], "sold_out");
    assert_eq!(data(&sold_out)["item"]["available_again_at"], back.as_str());
    let stale = client
        .call(
            &staff,
            "chataigne_catalog_item_availability_update",
            json!({"item_id": item_id, "availability": "sold_out",
                   "expected_availability": "available"}),
        )
        .await;
    assert_eq!(error_code(&stale), "MCP_EXPECTED_STATE_MISMATCH");
    assert_eq!(
        envelope(&stale)["data"]["error"]["details"]["current_state"],
        "sold_out"
    );
    let past = client
        .call(
            &staff,
            "chataigne_catalog_item_availability_update",
            json!({"item_id": item_id, "availability": "sold_out",
                   "expected_availability": "sold_out",
                   "available_again_at": paris_time(now_ms() - 60_000)}),
        )
        .await;
    assert_eq!(error_code(&past), "MCP_INVALID_ARGUMENTS");
    let foreign_item = client
        .call(
            &analyst,
            "chataigne_catalog_item_availability_update",
            json!({"item_id": item_id, "availability": "available",
                   "expected_availability": "sold_out"}),
        )
        .await;
    assert_eq!(error_code(&foreign_item), "MCP_RESOURCE_FORBIDDEN");
    let sold = client
        .call(
            &manager,
            "chataigne_catalog_items_list",
            json!({"location_id": demo::LOC_PARIS, "availability": "sold_out", "limit": 50}),
        )
        .await;
    assert!(
        data(&sold)["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["id"] == item_id)
    );

    // Discounts and integrations.
    let discounts = client
        .call(
            &manager,
            "chataigne_discounts_list",
            json!({"location_id": demo::LOC_PARIS, "active": true}),
        )
        .await;
    let listed = data(&discounts)["discounts"].as_array().unwrap();
    assert!(!listed.is_empty());
    assert!(listed.iter().all(|d| d["in_force"] == true));
    assert!(listed.iter().any(|d| d["organization_wide"] == true));
    let integrations = client
        .call(
            &manager,
            "chataigne_integrations_list",
            json!({"location_id": demo::LOC_PARIS}),
        )
        .await;
    let listed = data(&integrations)["integrations"].as_array().unwrap();
    assert!(listed.iter().any(|i| i["kind"] == "pos"));
    let text = integrations.to_string().to_lowercase();
    for secret in ["password", "secret", "token", "api_key", "credential"] {
        assert!(!text.contains(secret), "{secret}");
    }
    // The analyst role holds no integrations.read: refused by live permissions.
    let (_, analyst_integrations) = raw_call(
        &sandbox,
        &analyst,
        "chataigne_integrations_list",
        json!({"location_id": demo::LOC_BROOKLYN}),
    )
    .await;
    assert_eq!(
        error_code(&analyst_integrations["result"]),
        "MCP_RESOURCE_FORBIDDEN"
    );

    typed_api(&sandbox, &manager).await;
    sandbox.shutdown().await;
}

fn authorized<T>(message: T, assertion: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {assertion}").parse().unwrap(),
    );
    request
}

async fn typed_api(sandbox: &Sandbox, token: &str) {
    let minter = chataigne_tests::typed_rpc::Minter::new(sandbox);
    let mut locations = LocationsClient::connect(sandbox.tools_grpc_url.clone())
        .await
        .unwrap();
    let settings = locations
        .get_location_settings(authorized(
            GetLocationSettingsRequest {
                location_id: demo::LOC_BROOKLYN.to_owned(),
                sections: vec![
                    SettingsSection::Delivery as i32,
                    SettingsSection::Loyalty as i32,
                ],
                locale: "en-US".to_owned(),
            },
            &minter.assertion(token).await,
        ))
        .await;
    // The Bistro manager has no membership at Harbor: refused like a missing location.
    let refused = settings.unwrap_err();
    assert_eq!(decode_status(&refused).code, ErrorCode::ResourceForbidden);
    let settings = locations
        .get_location_settings(authorized(
            GetLocationSettingsRequest {
                location_id: demo::LOC_LYON.to_owned(),
                sections: vec![
                    SettingsSection::Delivery as i32,
                    SettingsSection::Loyalty as i32,
                ],
                locale: "fr-FR".to_owned(),
            },
            &minter.assertion(token).await,
        ))
        .await
        .unwrap()
        .into_inner()
        .settings
        .unwrap();
    assert!(
        settings
            .delivery
            .unwrap()
            .fee
            .unwrap()
            .display
            .contains('€')
    );
    assert!(settings.loyalty.is_some());
    assert!(settings.store.is_none());

    let paused = locations
        .update_location_status(authorized(
            UpdateLocationStatusRequest {
                location_id: demo::LOC_LYON.to_owned(),
                status: IntakeStatus::Paused as i32,
                expected_status: IntakeStatus::Accepting as i32,
                ..Default::default()
            },
            &minter.assertion(token).await,
        ))
        .await
        .unwrap()
        .into_inner()
        .status
        .unwrap();
    assert_eq!(paused.status, IntakeStatus::Paused as i32);
    let stale = locations
        .update_location_status(authorized(
            UpdateLocationStatusRequest {
                location_id: demo::LOC_LYON.to_owned(),
                status: IntakeStatus::Paused as i32,
                expected_status: IntakeStatus::Accepting as i32,
                ..Default::default()
            },
            &minter.assertion(token).await,
        ))
        .await
        .unwrap_err();
    let decoded = decode_status(&stale);
    assert_eq!(decoded.code, ErrorCode::ExpectedStateMismatch);
    assert!(
        decoded
            .metadata
            .iter()
            .any(|(k, v)| k == "current_state" && v == "paused")
    );
    let discounts = locations
        .list_discounts(authorized(
            ListDiscountsRequest {
                location_id: demo::LOC_LYON.to_owned(),
                active: Some(false),
                page: Some(Page {
                    limit: 50,
                    cursor: String::new(),
                }),
                locale: "en".to_owned(),
            },
            &minter.assertion(token).await,
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(!discounts.discounts.is_empty());
    assert!(discounts.discounts.iter().all(|d| !d.in_force));

    let mut catalog = CatalogClient::connect(sandbox.tools_grpc_url.clone())
        .await
        .unwrap();
    let items = catalog
        .list_catalog_items(authorized(
            ListCatalogItemsRequest {
                location_id: demo::LOC_LYON.to_owned(),
                availability: ItemAvailability::Available as i32,
                page: Some(Page {
                    limit: 5,
                    cursor: String::new(),
                }),
                ..Default::default()
            },
            &minter.assertion(token).await,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(items.items.len(), 5);
    assert!(!items.next_cursor.is_empty());
    assert!(
        items
            .items
            .iter()
            .all(|i| i.availability == ItemAvailability::Available as i32)
    );
    let too_long = catalog
        .list_catalog_items(authorized(
            ListCatalogItemsRequest {
                location_id: demo::LOC_LYON.to_owned(),
                text: "x".repeat(101),
                ..Default::default()
            },
            &minter.assertion(token).await,
        ))
        .await
        .unwrap_err();
    assert_eq!(decode_status(&too_long).code, ErrorCode::InvalidArguments);
    let anonymous = catalog
        .list_catalog_items(ListCatalogItemsRequest {
            location_id: demo::LOC_LYON.to_owned(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(anonymous.code(), tonic::Code::Unauthenticated);
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Backend::Sqlite,
    postgres: Some(Backend::Postgres),
    run: |backend| (backend),
    tests: [
        location_and_catalog_tools_keep_their_schemas_scopes_guards_and_tenants = locations_and_catalog,
    ],
}
