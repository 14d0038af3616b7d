//! The walking skeleton end to end, on SQLite and on PostgreSQL: MCP over HTTP
//! → gateway → auth-service (live checks) → tool-service → storage, and the
//! typed gRPC API on the same data.

use chataigne_proto::tools::v1::{
    GetOrderRequest, ListOrdersRequest, OrderStatus, Page, restaurant_client::RestaurantClient,
};
use chataigne_tests::envelope;
use chataigne_tests::{Backend, Sandbox, demo};
use serde_json::{Value, json};

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

async fn skeleton_end_to_end(backend: Backend) {
    let Some(sandbox) = Sandbox::start(backend).await else {
        return;
    };
    let manager = sandbox.token(demo::USER_MANAGER).await;

    // initialize + tools/list
    let (status, init) = sandbox
        .mcp(
            &manager,
            json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{
                "protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":"e2e","version":"1"}}}),
        )
        .await;
    assert_eq!(status, 200, "{init}");
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    let (_, list) = sandbox
        .mcp(
            &manager,
            json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
        )
        .await;
    let tools = list["result"]["tools"].as_array().expect("tools");
    let orders_tool = tools
        .iter()
        .find(|t| t["name"] == "chataigne_orders_list")
        .expect("orders tool listed");
    assert_eq!(orders_tool["inputSchema"]["additionalProperties"], false);
    assert_eq!(orders_tool["annotations"]["readOnlyHint"], true);

    // Organizations: the Bistro manager sees Bistro only; the admin sees both.
    let orgs = sandbox
        .call_tool(&manager, "chataigne_organizations_list", json!({}))
        .await;
    let names: Vec<&str> = data(&orgs)["organizations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec![demo::ORG_BISTRO]);
    let admin = sandbox.token(demo::USER_ADMIN).await;
    let all = sandbox
        .call_tool(&admin, "chataigne_organizations_list", json!({}))
        .await;
    assert_eq!(data(&all)["organizations"].as_array().unwrap().len(), 2);

    // Locations of Bistro.
    let locations = sandbox
        .call_tool(
            &manager,
            "chataigne_locations_list",
            json!({"organization_id": demo::ORG_BISTRO}),
        )
        .await;
    assert_eq!(data(&locations)["locations"].as_array().unwrap().len(), 3);

    // Orders of one location on one day, paginated: every order exactly once, newest first.
    let filters = json!({
        "location_id": demo::LOC_PARIS,
        "created_from": "2020-01-01T00:00:00+00:00",
        "created_to": "2100-01-01T00:00:00+00:00",
        "limit": 50,
    });
    let mut seen = Vec::new();
    let mut arguments = filters.clone();
    for _ in 0..4 {
        let page = sandbox
            .call_tool(&manager, "chataigne_orders_list", arguments.clone())
            .await;
        let orders = data(&page)["orders"].as_array().unwrap().clone();
        assert!(orders.len() <= 50);
        for order in &orders {
            assert_eq!(order["location_id"], demo::LOC_PARIS);
            assert!(order["total"]["display"].is_string());
            seen.push((
                order["created_at"].as_str().unwrap().to_owned(),
                order["id"].as_str().unwrap().to_owned(),
            ));
        }
        let next = page["structuredContent"]["meta"]["next_cursor"].clone();
        let Some(cursor) = next.as_str() else { break };
        arguments = filters.clone();
        arguments["cursor"] = json!(cursor);
    }
    assert_eq!(seen.len(), 200, "four full pages");
    let mut ids: Vec<_> = seen.iter().map(|(_, id)| id.clone()).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), seen.len(), "no order twice across pages");

    // A cursor reused with other filters, or by another user, is refused.
    let first = sandbox
        .call_tool(&manager, "chataigne_orders_list", json!({"limit": 1}))
        .await;
    let cursor = first["structuredContent"]["meta"]["next_cursor"]
        .as_str()
        .expect("more than one order")
        .to_owned();
    let misused = sandbox
        .call_tool(
            &manager,
            "chataigne_orders_list",
            json!({"limit": 1, "statuses": ["ready"], "cursor": cursor}),
        )
        .await;
    assert_eq!(error_code(&misused), "MCP_CURSOR_INVALID");
    let other_user = sandbox.token(demo::USER_STAFF).await;
    let stolen = sandbox
        .call_tool(
            &other_user,
            "chataigne_orders_list",
            json!({"limit": 1, "cursor": cursor}),
        )
        .await;
    assert_eq!(error_code(&stolen), "MCP_CURSOR_INVALID");

    // Order detail with lines.
    let order_id = data(&first)["orders"][0]["id"].as_str().unwrap().to_owned();
    let detail = sandbox
        .call_tool(
            &manager,
            "chataigne_order_get",
            json!({"order_id": order_id}),
        )
        .await;
    assert!(
        !data(&detail)["order"]["lines"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    // Cross-tenant: the Harbor analyst gets exactly what a non-existent id gets.
    let analyst = sandbox.token(demo::USER_ANALYST).await;
    let foreign = sandbox
        .call_tool(
            &analyst,
            "chataigne_order_get",
            json!({"order_id": order_id}),
        )
        .await;
    let missing = sandbox
        .call_tool(
            &analyst,
            "chataigne_order_get",
            json!({"order_id": "ord_doesnotexist"}),
        )
        .await;
    assert_eq!(error_code(&foreign), "MCP_RESOURCE_FORBIDDEN");
    assert_eq!(
        envelope(&foreign)["data"]["error"]["message"],
        envelope(&missing)["data"]["error"]["message"]
    );
    assert_eq!(error_code(&missing), "MCP_RESOURCE_FORBIDDEN");

    // Location-level staff: only their location, refused on a sibling.
    let staff_orders = sandbox
        .call_tool(&other_user, "chataigne_orders_list", json!({"limit": 50}))
        .await;
    for order in data(&staff_orders)["orders"].as_array().unwrap() {
        assert_eq!(order["location_id"], demo::LOC_PARIS);
    }
    let sibling = sandbox
        .call_tool(
            &other_user,
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_LYON}),
        )
        .await;
    assert_eq!(error_code(&sibling), "MCP_RESOURCE_FORBIDDEN");

    // Invalid arguments are refused by the schema.
    let invalid = sandbox
        .call_tool(
            &manager,
            "chataigne_orders_list",
            json!({"limit": 500, "colour": "red"}),
        )
        .await;
    assert_eq!(error_code(&invalid), "MCP_INVALID_ARGUMENTS");

    // The typed gRPC API serves the same data to an internal caller holding
    // a principal assertion issued by the auth-service.
    let minter = chataigne_tests::typed_rpc::Minter::new(&sandbox);
    let assertion = minter.assertion(&manager).await;
    let mut restaurant = RestaurantClient::connect(sandbox.tools_grpc_url.clone())
        .await
        .unwrap();
    let mut request = tonic::Request::new(ListOrdersRequest {
        location_id: demo::LOC_PARIS.to_owned(),
        statuses: vec![OrderStatus::Completed as i32],
        page: Some(Page {
            limit: 3,
            cursor: String::new(),
        }),
        ..Default::default()
    });
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {assertion}").parse().unwrap(),
    );
    let replay = request_again(&request);
    let listed = restaurant.list_orders(request).await.unwrap().into_inner();
    assert_eq!(listed.orders.len(), 3);
    // An assertion is for one call: presented again, it is refused.
    let replayed = restaurant.list_orders(replay).await.unwrap_err();
    assert_eq!(replayed.code(), tonic::Code::Unauthenticated);
    let assertion = minter.assertion(&manager).await;
    assert!(
        listed
            .orders
            .iter()
            .all(|o| o.status == OrderStatus::Completed as i32)
    );
    let mut get = tonic::Request::new(GetOrderRequest {
        order_id: listed.orders[0].id.clone(),
        locale: "fr-FR".to_owned(),
    });
    get.metadata_mut().insert(
        "authorization",
        format!("Bearer {assertion}").parse().unwrap(),
    );
    let order = restaurant
        .get_order(get)
        .await
        .unwrap()
        .into_inner()
        .order
        .unwrap();
    assert!(order.total.unwrap().display.contains('€'));
    // Without a credential the typed API refuses.
    let anonymous = restaurant
        .get_order(GetOrderRequest {
            order_id: order.id,
            locale: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(anonymous.code(), tonic::Code::Unauthenticated);

    // A revoked session is refused at the very next request with a 401.
    sandbox
        .auth
        .set_user_status(demo::USER_MANAGER, "banned")
        .await
        .unwrap();
    let (status, _) = sandbox
        .mcp(
            &manager,
            json!({"jsonrpc":"2.0","id":9,"method":"tools/list"}),
        )
        .await;
    assert_eq!(status, 401);

    sandbox.shutdown().await;
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Backend::Sqlite,
    postgres: Some(Backend::Postgres),
    run: |backend| (backend),
    tests: [
        a_manager_reads_and_writes_through_every_service_until_banned = skeleton_end_to_end,
    ],
}

/// A copy of `request`, metadata included.
fn request_again<T: Clone>(request: &tonic::Request<T>) -> tonic::Request<T> {
    let mut again = tonic::Request::new(request.get_ref().clone());
    *again.metadata_mut() = request.metadata().clone();
    again
}
