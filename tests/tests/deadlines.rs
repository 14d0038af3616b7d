//! Deadlines with genuinely slow work on PostgreSQL: another connection holds
//! an `ACCESS EXCLUSIVE` lock on the table a tool needs, so the tool-service's
//! query really waits in the database. The gateway answers at the class
//! deadline configured for the test (`MCP_TOOL_TIMEOUT` for analytics,
//! `MCP_OUTCOME_UNKNOWN` for a write), and the waiting query is cancelled
//! downstream: once the deadline has passed, `pg_stat_activity` shows no query
//! of the tool-service still waiting on that lock.

use chataigne_tests::envelope;
use std::time::{Duration, Instant};

use chataigne_tests::demo::{LOC_PARIS, ORG_BISTRO, USER_MANAGER};
use chataigne_tests::stores::{error_code, replayed, retry_while_in_progress};
use chataigne_tests::{Backend, Sandbox};
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
    let started = Instant::now();
    while waiting_on_a_lock(pool).await == 0 {
        assert!(
            started.elapsed() < limit,
            "the tool-service's query never waited on the lock"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls until no query waits on a lock; the count left after `limit`.
async fn until_nothing_waits(pool: &PgPool, limit: Duration) -> i64 {
    let started = Instant::now();
    loop {
        let waiting = waiting_on_a_lock(pool).await;
        if waiting == 0 || started.elapsed() >= limit {
            return waiting;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
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
    let waiting = until_nothing_waits(&pool, MARGIN).await;
    assert_eq!(
        waiting, 0,
        "the analytics query still waits on the lock after its deadline"
    );
    held.rollback().await.expect("lock released");

    let again = sandbox
        .call_tool(&token, "chataigne_analytics_query", arguments)
        .await;
    assert_eq!(error_code(&again), None, "served again: {again}");
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
    let waiting = until_nothing_waits(&pool, MARGIN).await;
    assert_eq!(
        waiting, 0,
        "the write still waits on the lock after its deadline"
    );
    held.rollback().await.expect("lock released");
    assert_eq!(count().await, before, "the abandoned write left nothing");

    // The outcome was unknown to the caller: it retries with the same key.
    let retried = retry_while_in_progress(|| {
        sandbox.call_tool(
            &token,
            "chataigne_conversation_message_send",
            arguments.clone(),
        )
    })
    .await
    .expect("the retry goes through");
    assert!(!replayed(&retried), "{retried}");
    let again = sandbox
        .call_tool(&token, "chataigne_conversation_message_send", arguments)
        .await;
    assert!(replayed(&again), "{again}");
    assert_eq!(count().await, before + 1, "done once");
    pool.close().await;
    sandbox.shutdown().await;
}
