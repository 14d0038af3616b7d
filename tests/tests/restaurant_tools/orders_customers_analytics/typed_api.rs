//! The typed gRPC services `OrderUpdates`, `Customers`, `Conversations` and
//! `Analytics`: the same rules as the MCP tools, with a principal assertion.

use chataigne_common::ErrorCode;
use chataigne_common::codes::decode_status;
use chataigne_proto::tools::v1::{
    AnalyticsBucket, AnalyticsMetric, ConversationThreadStatus, GetConversationRequest,
    GetCustomerRequest, ListConversationsRequest, ListCustomersRequest, OrderStatus, Page,
    QueryAnalyticsRequest, UpdateOrderStatusRequest, analytics_client::AnalyticsClient,
    conversations_client::ConversationsClient, customers_client::CustomersClient,
    order_updates_client::OrderUpdatesClient,
};

use super::*;

fn authed<T>(message: T, assertion: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {assertion}").parse().unwrap(),
    );
    request
}

async fn the_typed_grpc_api_applies_the_rules_of_the_tools(scene: &Scene) {
    let (sandbox, c) = (&scene.sandbox, &scene.client().await);
    let manager = &*scene.manager;
    let minter = chataigne_tests::typed_rpc::Minter::new(sandbox);
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
            request(OrderStatus::Received, OrderStatus::Accepted),
            &minter.assertion(manager).await,
        ))
        .await
        .unwrap_err();
    assert_eq!(illegal.code(), tonic::Code::FailedPrecondition);
    let decoded = chataigne_common::codes::decode_status_with(
        &illegal,
        chataigne_tools::grpc::domain_codes::behaviour,
    );
    assert_eq!(decoded.code_name(), "ORDER_STATUS_PRECONDITION_FAILED");
    let updated = orders
        .update_order_status(authed(
            request(OrderStatus::Accepted, OrderStatus::Received),
            &minter.assertion(manager).await,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(updated.order.unwrap().status, OrderStatus::Accepted as i32);
    assert_eq!(updated.previous_status, OrderStatus::Received as i32);
    assert_eq!(updated.steps, vec![OrderStatus::Accepted as i32]);
    let stale = orders
        .update_order_status(authed(
            request(OrderStatus::Accepted, OrderStatus::Received),
            &minter.assertion(manager).await,
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
    // Several steps in one call, each listed.
    let completed = orders
        .update_order_status(authed(
            request(OrderStatus::Completed, OrderStatus::Accepted),
            &minter.assertion(manager).await,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        completed.steps,
        vec![
            OrderStatus::Preparing as i32,
            OrderStatus::Ready as i32,
            OrderStatus::Completed as i32
        ]
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
            &minter.assertion(manager).await,
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
            &minter.assertion(manager).await,
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
            &minter.assertion(manager).await,
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
            &minter.assertion(manager).await,
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
            &minter.assertion(manager).await,
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
            &minter.assertion(manager).await,
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
                compare_previous: true,
            },
            &minter.assertion(manager).await,
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
    // The comparison with the 365 days before (2024 has 366), per metric in
    // request order.
    let comparison = result.comparison.unwrap();
    assert_eq!(
        (
            comparison.previous_date_from.as_str(),
            comparison.previous_date_to.as_str()
        ),
        ("2024-01-02", "2024-12-31")
    );
    let metrics: Vec<i32> = comparison.changes.iter().map(|c| c.metric).collect();
    assert_eq!(
        metrics,
        vec![
            AnalyticsMetric::Revenue as i32,
            AnalyticsMetric::OrdersCount as i32
        ]
    );
    let orders = &comparison.changes[1];
    let before = comparison.previous_totals.unwrap().orders_count.unwrap();
    assert_eq!(
        orders.absolute,
        totals.orders_count.unwrap() as f64 - before as f64,
        "{orders:?}"
    );
    let too_long = analytics
        .query_analytics(authed(
            QueryAnalyticsRequest {
                location_id: demo::LOC_LYON.to_owned(),
                metrics: vec![AnalyticsMetric::Revenue as i32],
                date_from: "2025-01-01".to_owned(),
                date_to: "2026-01-02".to_owned(),
                ..Default::default()
            },
            &minter.assertion(manager).await,
        ))
        .await
        .unwrap_err();
    assert_eq!(decode_status(&too_long).code, ErrorCode::InvalidArguments);
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Scene::start(Backend::Sqlite).await.expect("SQLite sandbox"),
    postgres: Scene::start(Backend::Postgres).await,
    run: |scene| (&scene),
    finish: scene.shutdown().await,
    tests: [
        the_typed_grpc_api_applies_the_rules_of_the_tools,
    ],
}
