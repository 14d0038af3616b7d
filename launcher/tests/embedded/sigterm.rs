//! SIGTERM on the embedded binary: a `tools/call` in flight (a write waiting
//! on SQLite's write lock, held by another connection) when the signal
//! arrives is answered normally, new connections are refused meanwhile, and
//! the process exits 0 once the call is done.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use chataigne_tests::process::{
    answered_after_release, eventually, refuses_connections, spawn_tool_call, start_embedded,
};
use chataigne_tests::{TempDir, demo};
use serde_json::json;
use sqlx::Connection;

/// Margins for a loaded two-core machine.
const GENEROUS: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_the_embedded_binary_finish_an_in_flight_call_and_exit_zero() {
    let data = TempDir::new("graceful");
    let dir = data.0.clone();
    let (mut child, start) = tokio::task::spawn_blocking(move || {
        start_embedded(Path::new(env!("CARGO_BIN_EXE_chataigne")), &dir)
    })
    .await
    .expect("reading the binary's output");
    let (url, token) = (start.url, start.token);

    let tools_db = format!("sqlite://{}", data.0.join("tools.db").display());
    let reader = sqlx::SqlitePool::connect(&tools_db)
        .await
        .expect("tools database");
    let conversation: String = sqlx::query_scalar(
        "SELECT id FROM conversations WHERE organization_id = $1 ORDER BY id LIMIT 1",
    )
    .bind(demo::ORG_BISTRO)
    .fetch_one(&reader)
    .await
    .expect("a seeded conversation");
    reader.close().await;

    // Another connection holds SQLite's write lock: the write waits on it.
    let mut locker = sqlx::SqliteConnection::connect(&tools_db)
        .await
        .expect("tools database");
    sqlx::raw_sql("BEGIN IMMEDIATE")
        .execute(&mut locker)
        .await
        .expect("write lock taken");
    let arguments = json!({"conversation_id": conversation, "text": "Votre table est prête.",
                           "idempotency_key": "graceful-shutdown-0001"});
    let in_flight = spawn_tool_call(
        &url,
        &token,
        "chataigne_conversation_message_send",
        arguments,
        GENEROUS,
    );
    // Kept: SQLite shows no lock waiter to poll for; the write must be
    // waiting on the lock when the signal comes.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(!in_flight.is_finished(), "the write waits on the lock");

    let pid = child.0.id().to_string();
    let killed = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill runs");
    assert!(killed.success());
    eventually("new connections are refused", GENEROUS, || {
        refuses_connections(&url)
    })
    .await;
    assert!(
        !in_flight.is_finished(),
        "the write still waits on the lock"
    );
    let release = async {
        sqlx::raw_sql("ROLLBACK")
            .execute(&mut locker)
            .await
            .expect("write lock released");
    };
    answered_after_release(release, in_flight, GENEROUS).await;

    let status =
        chataigne_common::testing::eventually_some("an exit after SIGTERM", GENEROUS, || {
            std::future::ready(child.0.try_wait().expect("process status"))
        })
        .await;
    assert!(status.success(), "clean exit on SIGTERM: {status:?}");
}
