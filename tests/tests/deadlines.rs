//! Deadlines with genuinely slow work on PostgreSQL: another connection holds
//! an `ACCESS EXCLUSIVE` lock on the table a tool needs, so the tool-service's
//! query really waits in the database. The gateway answers at the class
//! deadline configured for the test (`MCP_TOOL_TIMEOUT` for analytics,
//! `MCP_OUTCOME_UNKNOWN` for a write), and the waiting query is cancelled
//! downstream: once the deadline has passed, `pg_stat_activity` shows no query
//! of the tool-service still waiting on that lock. Every typed RPC of the
//! contracts, and `CallTool`, is taken through the same test over gRPC.

use chataigne_common::testing::eventually;
use chataigne_tests::envelope;
use std::time::{Duration, Instant};

use chataigne_common::ErrorCode;
use chataigne_common::codes::decode_status;
use chataigne_proto::tools::v1 as pb;
use chataigne_tests::demo::{LOC_PARIS, ORG_BISTRO, USER_ADMIN, USER_MANAGER};
use chataigne_tests::stores::{error_code, replayed, retry_while_in_progress};
use chataigne_tests::typed_rpc::{self, unary};
use chataigne_tests::{Backend, Sandbox};
use chataigne_tools::tools::ToolKind;
use secrecy::ExposeSecret;
use serde_json::json;
use sqlx::PgPool;

/// The deadlines configured for these tests.
const ANALYTICS_DEADLINE: Duration = Duration::from_millis(3_000);
const WRITE_DEADLINE: Duration = Duration::from_millis(3_000);
/// How late an answer or a cancellation may be on a loaded machine.
const MARGIN: Duration = Duration::from_secs(5);

/// Active queries of the database waiting for a lock (the test's own
/// connections are idle in their transaction, not waiting).
const WAITING_ON_A_LOCK: &str = "SELECT COUNT(*) FROM pg_stat_activity \
     WHERE datname = current_database() AND state = 'active' \
     AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()";

/// A Postgres sandbox with short analytics and write deadlines; with a pool
/// on its tool-service database. `None` only outside CI without Postgres.
async fn sandbox() -> Option<(Sandbox, PgPool)> {
    let mut tools_url = String::new();
    let sandbox = Sandbox::start_with(Backend::Postgres, |config| {
        config.gateway.deadlines.analytics_ms = ANALYTICS_DEADLINE.as_millis() as u64;
        config.gateway.deadlines.write_ms = WRITE_DEADLINE.as_millis() as u64;
        // The per-call deadline, not this global bound, must stop the work.
        config.tools.database.statement_timeout_ms = 180_000;
        tools_url = config.tools.database.url.expose_secret().to_owned();
    })
    .await?;
    let pool = PgPool::connect(&tools_url).await.expect("tools database");
    Some((sandbox, pool))
}

async fn waiting_on_a_lock(pool: &PgPool) -> i64 {
    sqlx::query_scalar(WAITING_ON_A_LOCK)
        .fetch_one(pool)
        .await
        .expect("pg_stat_activity")
}

/// Polls until `pool` shows a query waiting on a lock; panics after `limit`.
async fn until_waiting(pool: &PgPool, limit: Duration) {
    eventually(
        "the tool-service's query waits on the lock",
        limit,
        || async { waiting_on_a_lock(pool).await > 0 },
    )
    .await;
}

/// Polls until no query waits on a lock; panics with `what` after `limit`.
async fn until_nothing_waits(pool: &PgPool, limit: Duration, what: &str) {
    eventually(what, limit, || async { waiting_on_a_lock(pool).await == 0 }).await;
}

/// Locks `table` in an open transaction of its own; dropping or rolling back
/// the transaction releases the lock.
async fn lock(pool: &PgPool, table: &str) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let mut tx = pool.begin().await.expect("begin");
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE"
    )))
    .execute(&mut *tx)
    .await
    .expect("table locked");
    tx
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_analytics_times_out_at_its_deadline_and_the_query_is_cancelled() {
    let Some((sandbox, pool)) = sandbox().await else {
        return;
    };
    let token = sandbox.token(USER_MANAGER).await;
    let arguments = json!({"location_id": LOC_PARIS, "metrics": ["orders_count", "revenue"],
                           "date_from": "2026-01-01", "date_to": "2026-01-31", "bucket": "week"});
    let quick = sandbox
        .call_tool(&token, "chataigne_analytics_query", arguments.clone())
        .await;
    assert_eq!(
        error_code(&quick),
        None,
        "answers without the lock: {quick}"
    );

    let held = lock(&pool, "daily_location_metrics").await;
    let started = Instant::now();
    let call = sandbox.call_tool(&token, "chataigne_analytics_query", arguments.clone());
    let observe = until_waiting(&pool, ANALYTICS_DEADLINE);
    let (result, ()) = tokio::join!(call, observe);
    let elapsed = started.elapsed();
    assert_eq!(
        error_code(&result).as_deref(),
        Some("MCP_TOOL_TIMEOUT"),
        "{result}"
    );
    let error = &envelope(&result)["data"]["error"];
    assert_eq!(error["category"], "timeout", "{error}");
    assert!(
        elapsed >= ANALYTICS_DEADLINE - Duration::from_millis(100),
        "not before the deadline: {elapsed:?}"
    );
    assert!(
        elapsed < ANALYTICS_DEADLINE + MARGIN,
        "at the deadline, not when the lock goes: {elapsed:?}"
    );
    // The lock is still held: only a cancellation can have ended the wait.
    until_nothing_waits(
        &pool,
        MARGIN,
        "the analytics query stops waiting on the lock after its deadline",
    )
    .await;
    held.rollback().await.expect("lock released");

    let again = sandbox
        .call_tool(&token, "chataigne_analytics_query", arguments)
        .await;
    assert_eq!(error_code(&again), None, "served again: {again}");
    pool.close().await;
    sandbox.shutdown().await;
}

/// Twenty-four analytics calls stuck on a lock (more than the whole pool of
/// 16) take only the analytics slots: the calls past them are refused at
/// once with the retryable `MCP_OVERLOADED` (never a dependency failure),
/// and reads and writes are answered within their normal time meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_analytics_cannot_starve_reads_and_writes() {
    let mut tools_url = String::new();
    let Some(sandbox) = Sandbox::start_with(Backend::Postgres, |config| {
        // The default pool (16) and split (8 reads, 4 writes, 4 analytics);
        // the analytics deadline (30 s) outlasts the test's lock.
        assert_eq!(config.tools.database.max_connections, 16);
        config.tools.database.statement_timeout_ms = 180_000;
        tools_url = config.tools.database.url.expose_secret().to_owned();
    })
    .await
    else {
        return;
    };
    let pool = PgPool::connect(&tools_url).await.expect("tools database");
    let token = sandbox.token(USER_MANAGER).await;
    let conversation: String = sqlx::query_scalar(
        "SELECT id FROM conversations WHERE organization_id = $1 ORDER BY id LIMIT 1",
    )
    .bind(ORG_BISTRO)
    .fetch_one(&pool)
    .await
    .expect("a seeded conversation");
    let analytics = json!({"location_id": LOC_PARIS, "metrics": ["orders_count", "revenue"],
                           "date_from": "2026-01-01", "date_to": "2026-01-31"});
    // A read and a write, timed; each must succeed.
    let read_and_write = |round: u32| {
        let (sandbox, token, conversation) = (&sandbox, &token, &conversation);
        async move {
            let started = Instant::now();
            let read = sandbox
                .call_tool(
                    token,
                    "chataigne_orders_list",
                    json!({"location_id": LOC_PARIS, "limit": 5}),
                )
                .await;
            assert_eq!(error_code(&read), None, "{read}");
            let write = sandbox
                .call_tool(
                    token,
                    "chataigne_conversation_message_send",
                    json!({"conversation_id": conversation, "text": "Votre table est prête.",
                           "idempotency_key": format!("isolation-key-{round:04}")}),
                )
                .await;
            assert_eq!(error_code(&write), None, "{write}");
            started.elapsed()
        }
    };
    let mut normal = Duration::ZERO;
    for round in 0..3 {
        normal = normal.max(read_and_write(round).await);
    }

    let held = lock(&pool, "daily_location_metrics").await;
    let refused = std::sync::atomic::AtomicUsize::new(0);
    let analytics_calls = futures::future::join_all((0..24).map(|_| {
        let (sandbox, token, analytics, refused) = (&sandbox, &token, analytics.clone(), &refused);
        async move {
            let started = Instant::now();
            let result = sandbox
                .call_tool(token, "chataigne_analytics_query", analytics)
                .await;
            if error_code(&result).as_deref() == Some("MCP_OVERLOADED") {
                refused.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
            (result, started.elapsed())
        }
    }));
    let meanwhile = async {
        // Four analytics calls wait on the lock, holding their four slots;
        // the twenty others are refused.
        eventually(
            "four analytics calls wait on the lock and twenty are refused",
            Duration::from_secs(20),
            || async {
                waiting_on_a_lock(&pool).await >= 4
                    && refused.load(std::sync::atomic::Ordering::SeqCst) >= 20
            },
        )
        .await;
        assert_eq!(
            waiting_on_a_lock(&pool).await,
            4,
            "only the analytics slots"
        );
        // A busy tool-service is no outage: the gateway stays ready.
        let ready = reqwest::get(format!("{}/readyz", sandbox.gateway_internal_url))
            .await
            .expect("internal listener");
        assert_eq!(ready.status().as_u16(), 200);
        let mut busy = Duration::ZERO;
        for round in 3..6 {
            busy = busy.max(read_and_write(round).await);
        }
        // Normal time (a loaded machine's jitter aside), far from the
        // pool's acquire timeout (3 s) that starved calls used to meet.
        assert!(
            busy < normal * 2 + Duration::from_millis(500),
            "reads and writes took {busy:?} beside slow analytics, {normal:?} without"
        );
        held.rollback().await.expect("lock released");
    };
    let (outcomes, ()) = tokio::join!(analytics_calls, meanwhile);
    let mut served = 0;
    for (result, took) in &outcomes {
        match error_code(result).as_deref() {
            None => served += 1,
            Some("MCP_OVERLOADED") => {
                let error = &envelope(result)["data"]["error"];
                assert_eq!(error["retryable"], true, "{error}");
                assert!(
                    error["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0),
                    "{error}"
                );
                // Refused after the admission queue (250 ms), not a timeout.
                assert!(*took < Duration::from_secs(3), "{took:?}");
            }
            Some(other) => panic!("{other}, never a dependency failure: {result}"),
        }
    }
    assert_eq!(served, 4, "the admitted calls finish once the lock goes");
    pool.close().await;
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_write_is_outcome_unknown_at_its_deadline_cancelled_and_done_once_on_retry() {
    let Some((sandbox, pool)) = sandbox().await else {
        return;
    };
    let token = sandbox.token(USER_MANAGER).await;
    let conversation: String = sqlx::query_scalar(
        "SELECT id FROM conversations WHERE organization_id = $1 ORDER BY id LIMIT 1",
    )
    .bind(ORG_BISTRO)
    .fetch_one(&pool)
    .await
    .expect("a seeded conversation");
    let count = || async {
        sqlx::query_scalar::<_, i64>(
            "SELECT COUNT(*) FROM conversation_messages WHERE conversation_id = $1 AND sender = 'staff'",
        )
        .bind(&conversation)
        .fetch_one(&pool)
        .await
        .expect("count")
    };
    let before = count().await;
    let arguments = json!({"conversation_id": conversation, "text": "Votre livreur arrive.",
                           "idempotency_key": "deadline-key-0001"});

    let held = lock(&pool, "conversation_messages").await;
    let started = Instant::now();
    let call = sandbox.call_tool(
        &token,
        "chataigne_conversation_message_send",
        arguments.clone(),
    );
    let observe = until_waiting(&pool, WRITE_DEADLINE);
    let (result, ()) = tokio::join!(call, observe);
    let elapsed = started.elapsed();
    assert_eq!(
        error_code(&result).as_deref(),
        Some("MCP_OUTCOME_UNKNOWN"),
        "{result}"
    );
    assert!(
        elapsed >= WRITE_DEADLINE - Duration::from_millis(100),
        "not before the deadline: {elapsed:?}"
    );
    assert!(
        elapsed < WRITE_DEADLINE + MARGIN,
        "at the deadline, not when the lock goes: {elapsed:?}"
    );
    until_nothing_waits(
        &pool,
        MARGIN,
        "the write stops waiting on the lock after its deadline",
    )
    .await;
    held.rollback().await.expect("lock released");
    assert_eq!(count().await, before, "the abandoned write left nothing");

    // The outcome was unknown to the caller: it retries with the same key.
    let retried = retry_while_in_progress("the retry goes through", || {
        sandbox.call_tool(
            &token,
            "chataigne_conversation_message_send",
            arguments.clone(),
        )
    })
    .await;
    assert!(!replayed(&retried), "{retried}");
    let again = sandbox
        .call_tool(&token, "chataigne_conversation_message_send", arguments)
        .await;
    assert!(replayed(&again), "{again}");
    assert_eq!(count().await, before + 1, "done once");
    pool.close().await;
    sandbox.shutdown().await;
}

/// The gRPC deadline of each typed call in the table below.
const RPC_DEADLINE: Duration = Duration::from_millis(1_500);

/// Identifiers of the demo data the typed requests point at, and the
/// tokens whose assertions (one per call) they present.
struct Targets {
    url: String,
    /// Calls sent over a bare HTTP/2 client whose deadline only the server
    /// keeps (`typed_rpc::unary_timed_by_the_server`), not over a channel.
    server_timed: bool,
    minter: typed_rpc::Minter,
    manager: String,
    admin: String,
    order: String,
    customer: String,
    conversation: String,
    item: String,
}

impl Targets {
    async fn load(sandbox: &Sandbox, pool: &PgPool) -> Targets {
        let first = |sql: &'static str, bind: &'static str| async move {
            sqlx::query_scalar::<_, String>(sql)
                .bind(bind)
                .fetch_one(pool)
                .await
                .unwrap_or_else(|error| panic!("{sql}: {error}"))
        };
        let manager = sandbox.token(USER_MANAGER).await;
        let admin = sandbox
            .token_with(
                USER_ADMIN,
                &["admin.organizations.create", "admin.locations.create"],
            )
            .await;
        Targets {
            url: sandbox.tools_grpc_url.clone(),
            server_timed: false,
            minter: typed_rpc::Minter::new(sandbox),
            manager,
            admin,
            order: first(
                "SELECT id FROM orders WHERE location_id = $1 AND status = 'received' \
                 ORDER BY id LIMIT 1",
                LOC_PARIS,
            )
            .await,
            customer: first(
                "SELECT id FROM customers WHERE organization_id = $1 ORDER BY id LIMIT 1",
                ORG_BISTRO,
            )
            .await,
            conversation: first(
                "SELECT id FROM conversations WHERE location_id = $1 ORDER BY id LIMIT 1",
                LOC_PARIS,
            )
            .await,
            item: first(
                "SELECT id FROM catalog_items WHERE location_id = $1 AND availability = \
                 'available' ORDER BY id LIMIT 1",
                LOC_PARIS,
            )
            .await,
        }
    }

    /// Sends one call of `rpc` presenting `credential`.
    async fn send<M: prost::Message + Send + Sync + 'static>(
        &self,
        rpc: &str,
        request: M,
        credential: &str,
        timeout: Option<Duration>,
    ) -> Result<(), tonic::Status> {
        match timeout.filter(|_| self.server_timed) {
            Some(timeout) => {
                typed_rpc::unary_timed_by_the_server(&self.url, rpc, request, credential, timeout)
                    .await
            }
            None => unary(&self.url, rpc, request, credential, timeout).await,
        }
    }

    /// A valid request of `rpc` (`Service/Method` of the tools package, or
    /// `ToolCatalog/CallTool`), sent with `timeout`. `key` keeps the
    /// idempotency keys of separate calls apart.
    async fn call(&self, rpc: &str, timeout: Duration, key: &str) -> Result<(), tonic::Status> {
        // An assertion is for one call: a new one each time.
        let manager = &self.minter.assertion(&self.manager).await;
        let t = Some(timeout);
        let short = rpc.strip_prefix("chataigne.tools.v1.").unwrap_or(rpc);
        let page = Some(pb::Page {
            limit: 5,
            cursor: String::new(),
        });
        let location_id = LOC_PARIS.to_owned();
        match short {
            "Restaurant/ListOrganizations" => {
                let request = pb::ListOrganizationsRequest::default();
                self.send(rpc, request, manager, t).await
            }
            "Restaurant/ListLocations" => {
                let request = pb::ListLocationsRequest {
                    organization_id: ORG_BISTRO.to_owned(),
                    page,
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Restaurant/ListOrders" => {
                let request = pb::ListOrdersRequest {
                    location_id,
                    page,
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Restaurant/GetOrder" => {
                let request = pb::GetOrderRequest {
                    order_id: self.order.clone(),
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Locations/GetLocation" => {
                let request = pb::GetLocationRequest {
                    location_id,
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Locations/GetLocationSettings" => {
                let request = pb::GetLocationSettingsRequest {
                    location_id,
                    sections: vec![pb::SettingsSection::Delivery as i32],
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Locations/GetLocationStatus" => {
                let request = pb::GetLocationStatusRequest {
                    location_id,
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Locations/UpdateLocationStatus" => {
                let request = pb::UpdateLocationStatusRequest {
                    location_id,
                    status: pb::IntakeStatus::Paused as i32,
                    expected_status: pb::IntakeStatus::Accepting as i32,
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Locations/ListDiscounts" => {
                let request = pb::ListDiscountsRequest {
                    location_id,
                    page,
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Locations/ListIntegrations" => {
                let request = pb::ListIntegrationsRequest {
                    location_id,
                    page,
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Catalog/ListCatalogItems" => {
                let request = pb::ListCatalogItemsRequest {
                    location_id,
                    page,
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Catalog/UpdateCatalogItemAvailability" => {
                let request = pb::UpdateCatalogItemAvailabilityRequest {
                    item_id: self.item.clone(),
                    availability: pb::ItemAvailability::SoldOut as i32,
                    expected_availability: pb::ItemAvailability::Available as i32,
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "OrderUpdates/UpdateOrderStatus" => {
                let request = pb::UpdateOrderStatusRequest {
                    order_id: self.order.clone(),
                    status: pb::OrderStatus::Accepted as i32,
                    expected_status: pb::OrderStatus::Received as i32,
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Customers/ListCustomers" => {
                let request = pb::ListCustomersRequest {
                    organization_id: ORG_BISTRO.to_owned(),
                    page,
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Customers/GetCustomer" => {
                let request = pb::GetCustomerRequest {
                    customer_id: self.customer.clone(),
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Conversations/ListConversations" => {
                let request = pb::ListConversationsRequest {
                    location_id,
                    page,
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Conversations/GetConversation" => {
                let request = pb::GetConversationRequest {
                    conversation_id: self.conversation.clone(),
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Analytics/QueryAnalytics" => {
                let request = pb::QueryAnalyticsRequest {
                    location_id,
                    metrics: vec![pb::AnalyticsMetric::OrdersCount as i32],
                    date_from: "2026-01-01".to_owned(),
                    date_to: "2026-01-31".to_owned(),
                    bucket: pb::AnalyticsBucket::Week as i32,
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "ConversationWrites/SendMessage" => {
                let request = pb::SendMessageRequest {
                    conversation_id: self.conversation.clone(),
                    text: "Votre commande part.".to_owned(),
                    idempotency_key: format!("typed-message-{key}"),
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "ConversationWrites/SendInstruction" => {
                let request = pb::SendInstructionRequest {
                    conversation_id: self.conversation.clone(),
                    text: "Proposer le dessert du jour.".to_owned(),
                    idempotency_key: format!("typed-instruction-{key}"),
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            "Provisioning/CreateOrganization" => {
                let request = pb::CreateOrganizationRequest {
                    name: format!("Crêperie {key}"),
                    idempotency_key: format!("typed-organization-{key}"),
                    ..Default::default()
                };
                let admin = &self.minter.assertion(&self.admin).await;
                self.send(rpc, request, admin, t).await
            }
            "Provisioning/CreateLocation" => {
                let request = pb::CreateLocationRequest {
                    organization_id: ORG_BISTRO.to_owned(),
                    name: format!("Bistro {key}"),
                    line1: "3 rue des Lilas".to_owned(),
                    city: "Paris".to_owned(),
                    postal_code: "75020".to_owned(),
                    country: "FR".to_owned(),
                    timezone: "Europe/Paris".to_owned(),
                    currency: "EUR".to_owned(),
                    idempotency_key: format!("typed-location-{key}"),
                    ..Default::default()
                };
                let admin = &self.minter.assertion(&self.admin).await;
                self.send(rpc, request, admin, t).await
            }
            "ToolCatalog/CallTool" => {
                let request = pb::CallToolRequest {
                    name: "chataigne_orders_list".to_owned(),
                    arguments_json: format!(r#"{{"location_id":"{LOC_PARIS}","limit":3}}"#),
                    ..Default::default()
                };
                self.send(rpc, request, manager, t).await
            }
            other => panic!("{other} has no case here: give it a valid request"),
        }
    }
}

/// Every table a call may read or write, the operator's switch aside (so the
/// writes get past it to their own statements).
async fn lock_every_table(pool: &PgPool) -> sqlx::Transaction<'static, sqlx::Postgres> {
    let tables: Vec<String> = sqlx::query_scalar(
        "SELECT tablename::text FROM pg_tables WHERE schemaname = 'public' \
         AND tablename NOT IN ('operator_flags', '_sqlx_migrations') ORDER BY tablename",
    )
    .fetch_all(pool)
    .await
    .expect("tables");
    assert!(tables.iter().any(|t| t == "orders"), "{tables:?}");
    lock(pool, &tables.join(", ")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_typed_rpc_stops_at_its_deadline_and_its_statement_is_cancelled_in_postgres() {
    let Some((sandbox, pool)) = sandbox().await else {
        return;
    };
    let targets = Targets::load(&sandbox, &pool).await;
    let mut rpcs = typed_rpc::typed_rpcs();
    assert!(rpcs.len() >= 20, "{rpcs:?}");
    rpcs.push("chataigne.tools.v1.ToolCatalog/CallTool".to_owned());

    // Without the lock every read answers well within the deadline: the
    // requests are valid and the refusals below are the lock's doing.
    for rpc in &rpcs {
        if rpc.ends_with("/CallTool") || typed_rpc::kind(rpc) == ToolKind::Read {
            let answer = targets.call(rpc, Duration::from_secs(20), "unlocked").await;
            assert!(answer.is_ok(), "{rpc} answers without the lock: {answer:?}");
        }
    }

    let held = lock_every_table(&pool).await;
    for (index, rpc) in rpcs.iter().enumerate() {
        let kind = if rpc.ends_with("/CallTool") {
            ToolKind::Read
        } else {
            typed_rpc::kind(rpc)
        };
        let started = Instant::now();
        let key = format!("locked-{index:04}");
        let call = targets.call(rpc, RPC_DEADLINE, &key);
        let observe = until_waiting(&pool, RPC_DEADLINE);
        let (result, ()) = tokio::join!(call, observe);
        let elapsed = started.elapsed();
        let status = result.expect_err(rpc);
        assert_eq!(
            status.code(),
            tonic::Code::DeadlineExceeded,
            "{rpc}: {status:?}"
        );
        let expected = match kind {
            ToolKind::Read => ErrorCode::ToolTimeout,
            ToolKind::Write => ErrorCode::OutcomeUnknown,
        };
        assert_eq!(decode_status(&status).code, expected, "{rpc}");
        assert!(
            elapsed < RPC_DEADLINE + MARGIN,
            "{rpc} answers at its deadline, not when the lock goes: {elapsed:?}"
        );
        // The lock is still held: only a cancellation can end the wait.
        until_nothing_waits(
            &pool,
            MARGIN,
            &format!("{rpc} stops waiting on the lock after its deadline"),
        )
        .await;
    }
    held.rollback().await.expect("lock released");

    let again = targets
        .call(
            "chataigne.tools.v1.Restaurant/GetOrder",
            Duration::from_secs(20),
            "again",
        )
        .await;
    assert!(again.is_ok(), "served again: {again:?}");
    pool.close().await;
    sandbox.shutdown().await;
}

/// An expired deadline is always DEADLINE_EXCEEDED with the ErrorInfo of the
/// code table, never CANCELLED without details, however short the deadline
/// and wherever the call is when it passes (its request still arriving, its
/// credential being admitted, its statement waiting on the lock): 40 calls
/// with deadlines of 1 to 34 ms over real gRPC, reads and a write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn very_short_deadlines_are_always_deadline_exceeded_with_details() {
    use tonic_types::StatusExt;
    let Some((sandbox, pool)) = sandbox().await else {
        return;
    };
    let mut targets = Targets::load(&sandbox, &pool).await;
    // The status the server answers, not the client's own expiry.
    targets.server_timed = true;
    let rpcs = [
        "chataigne.tools.v1.Restaurant/ListOrders",
        "chataigne.tools.v1.Restaurant/GetOrder",
        "chataigne.tools.v1.ToolCatalog/CallTool",
        "chataigne.tools.v1.Locations/GetLocation",
        "chataigne.tools.v1.OrderUpdates/UpdateOrderStatus",
    ];
    let deadlines_ms = [1, 2, 3, 5, 8, 13, 21, 34];
    let held = lock_every_table(&pool).await;
    let mut answers = Vec::new();
    for index in 0..rpcs.len() * deadlines_ms.len() {
        let rpc = rpcs[index % rpcs.len()];
        let deadline = Duration::from_millis(deadlines_ms[index / rpcs.len()]);
        let key = format!("short-{index:04}");
        let status = targets
            .call(rpc, deadline, &key)
            .await
            .expect_err("the tables are locked");
        let reason = status.get_details_error_info().map(|info| info.reason);
        answers.push((rpc, deadline, status.code(), reason));
    }
    held.rollback().await.expect("lock released");
    for (rpc, deadline, code, reason) in &answers {
        assert_eq!(
            *code,
            tonic::Code::DeadlineExceeded,
            "{rpc} at {deadline:?}: {answers:?}"
        );
        // A read is a timeout; a write is a timeout when its work never
        // started, else its outcome is unknown.
        let kind = if rpc.ends_with("/CallTool") {
            ToolKind::Read
        } else {
            typed_rpc::kind(rpc)
        };
        let expected: &[&str] = match kind {
            ToolKind::Write => &["MCP_TOOL_TIMEOUT", "MCP_OUTCOME_UNKNOWN"],
            ToolKind::Read => &["MCP_TOOL_TIMEOUT"],
        };
        assert!(
            reason.as_deref().is_some_and(|r| expected.contains(&r)),
            "{rpc} at {deadline:?} answered {reason:?}: {answers:?}"
        );
    }
    pool.close().await;
    sandbox.shutdown().await;
}
