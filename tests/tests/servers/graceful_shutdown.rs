//! Graceful shutdown: a `tools/call` that is really in flight (its query
//! waits on a table lock another connection holds) when shutdown starts is
//! answered normally, new connections are refused once shutdown has begun,
//! and shutdown returns, through the library (`Stack::shutdown`, on
//! PostgreSQL). The binary's SIGTERM path is tested in the launcher.

use std::time::{Duration, Instant};

use chataigne_tests::process::{
    answered_after_release, eventually, post_tool_call, refuses_connections, spawn_tool_call,
};
use chataigne_tests::{Backend, Sandbox, demo};
use secrecy::ExposeSecret;
use serde_json::{Value, json};
use sqlx::Connection;

/// Margins for a loaded two-core machine.
const GENEROUS: Duration = Duration::from_secs(60);

async fn call(mcp_url: &str, token: &str, name: &str, arguments: Value) -> (u16, Value) {
    post_tool_call(mcp_url, token, name, arguments, GENEROUS).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_in_flight_call_finishes_while_the_stack_shuts_down() {
    let mut tools_url = String::new();
    let Some(sandbox) = Sandbox::start_with(Backend::Postgres, |config| {
        tools_url = config.tools.database.url.expose_secret().to_owned();
    })
    .await
    else {
        return;
    };
    let token = sandbox.token(demo::USER_MANAGER).await;
    let mcp_url = sandbox.mcp_url.clone();
    let gateway_url = sandbox.gateway_url.clone();
    // Warm the catalogue and the connections.
    let (status, warm) = call(
        &mcp_url,
        &token,
        "chataigne_orders_list",
        json!({"location_id": demo::LOC_PARIS, "limit": 1}),
    )
    .await;
    assert_eq!(status, 200, "{warm}");

    // Another connection holds the table the tool reads.
    let mut locker = sqlx::PgConnection::connect(&tools_url)
        .await
        .expect("tools database");
    sqlx::raw_sql("BEGIN; LOCK TABLE locations IN ACCESS EXCLUSIVE MODE")
        .execute(&mut locker)
        .await
        .expect("lock taken");
    let in_flight = spawn_tool_call(
        &mcp_url,
        &token,
        "chataigne_orders_list",
        json!({"location_id": demo::LOC_PARIS, "limit": 2}),
        GENEROUS,
    );
    // The call is in flight for real: its query waits on the lock.
    let watcher = sqlx::PgPool::connect(&tools_url)
        .await
        .expect("tools database");
    eventually("the tool's query waits on the lock", GENEROUS, || async {
        let waiting: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND application_name = 'chataigne-tools' AND wait_event_type = 'Lock'",
        )
        .fetch_one(&watcher)
        .await
        .expect("pg_stat_activity");
        waiting > 0
    })
    .await;
    assert!(!in_flight.is_finished());

    let started = Instant::now();
    let shutdown = tokio::spawn(sandbox.shutdown());
    // Shutdown has begun: the gateway takes no new connection, while the
    // in-flight call still waits.
    eventually("new connections are refused", GENEROUS, || {
        refuses_connections(&gateway_url)
    })
    .await;
    assert!(!in_flight.is_finished(), "the call still waits on the lock");
    // Kept: the call waiting on through the shutdown is the behaviour under test.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let release = async {
        sqlx::raw_sql("ROLLBACK")
            .execute(&mut locker)
            .await
            .expect("lock released");
    };
    let body = answered_after_release(release, in_flight, GENEROUS).await;
    assert_eq!(
        body["result"]["structuredContent"]["data"]["orders"]
            .as_array()
            .map(Vec::len),
        Some(2),
        "{body}"
    );
    tokio::time::timeout(GENEROUS, shutdown)
        .await
        .expect("shutdown returns")
        .expect("shutdown task");
    assert!(started.elapsed() < GENEROUS);
    assert!(refuses_connections(&gateway_url).await);
    watcher.close().await;
}
