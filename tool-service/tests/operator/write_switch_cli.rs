//! The operator's `writes disable|status|enable` subcommands of the real
//! tool-service binary against a database file: each prints the switch's
//! state, and the store the service reads before every write sees the change
//! (the tools refuse writes while it is off, and reads keep working). Also on
//! PostgreSQL.

use crate::support;

use chataigne_common::demo;
use chataigne_tools::domain::DomainError;
use chataigne_tools::store::seed::{DataSet, SeedSpec};
use chataigne_tools::store::{PgStore, SqliteStore, Store, StoreOptions, WritesSwitch};
use serde_json::json;
use support::{context, invoke, run_binary, tools};

/// Runs the binary on `url`; returns its `writes:` line (logs go to the same
/// stream as JSON lines).
fn run(url: &str, args: &[&str]) -> String {
    let output = run_binary(url, args);
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find(|line| line.starts_with("writes: "))
        .unwrap_or_default()
        .to_owned()
}

/// A write (pausing Paris) and a read through the catalogue, as the service
/// runs them against `store`: (write refused by the switch, read succeeded).
async fn write_and_read<S: Store>(store: S) -> (bool, bool) {
    let tools = tools(store, demo::USER_MANAGER);
    let ctx = context(chrono::Utc::now().timestamp_millis());
    let current = tools
        .call(
            "chataigne_location_status_get",
            json!({"location_id": demo::LOC_PARIS}),
            &ctx,
        )
        .await;
    let read_ok = current.is_ok();
    let status = current
        .ok()
        .and_then(|result| {
            let data: serde_json::Value = serde_json::from_str(&result.data_json).ok()?;
            data["status"]["status"].as_str().map(str::to_owned)
        })
        .unwrap_or_else(|| "accepting".to_owned());
    let next = if status == "accepting" {
        "paused"
    } else {
        "accepting"
    };
    let write = tools
        .call(
            "chataigne_location_status_update",
            json!({"location_id": demo::LOC_PARIS, "status": next, "expected_status": status}),
            &ctx,
        )
        .await;
    (matches!(write, Err(DomainError::WritesDisabled)), read_ok)
}

fn demo_data() -> DataSet {
    DataSet::generate(&SeedSpec {
        days: 2,
        ..SeedSpec::demo(chrono::Utc::now().timestamp_millis())
    })
}

/// The command sequence and its checks, on the database at `url` (already
/// migrated by the binary) which `store` also opens.
async fn scenario<S: Store>(url: &str, store: S) {
    store.load(&demo_data()).await.unwrap();

    let line = run(url, &["writes", "status"]);
    assert_eq!(line, "writes: enabled (never changed)");
    assert_eq!(
        store.writes_switch().await.unwrap(),
        WritesSwitch::default()
    );
    assert_eq!(
        write_and_read(store.clone()).await,
        (false, true),
        "writes work"
    );

    let line = run(
        url,
        &["writes", "disable", "--reason", "  menu import running  "],
    );
    assert!(
        line.starts_with("writes: disabled (since ")
            && line.ends_with("; reason: menu import running)"),
        "{line}"
    );
    let stored = store.writes_switch().await.unwrap();
    assert!(!stored.enabled);
    assert_eq!(stored.reason.as_deref(), Some("menu import running"));
    let changed = stored.changed_at_ms.expect("a change time");
    assert!((chrono::Utc::now().timestamp_millis() - changed).abs() < 120_000);
    assert_eq!(
        run(url, &["writes", "status"]),
        line,
        "status shows the same state"
    );
    assert_eq!(
        write_and_read(store.clone()).await,
        (true, true),
        "writes refused, reads served"
    );

    let line = run(url, &["writes", "enable"]);
    assert!(
        line.starts_with("writes: enabled (since ")
            && line.ends_with(')')
            && !line.contains("reason"),
        "{line}"
    );
    assert!(store.writes_switch().await.unwrap().enabled);
    assert_eq!(run(url, &["writes", "status"]), line);

    // An over-long reason is refused and changes nothing.
    let output = invoke(url, &["writes", "disable", "--reason", &"x".repeat(501)]);
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("at most 500 characters"),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(store.writes_switch().await.unwrap().enabled);
    assert_eq!(
        write_and_read(store).await,
        (false, true),
        "writes work again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writes_subcommands_switch_what_the_store_reads_sqlite() {
    let dir = std::env::temp_dir().join(format!(
        "chataigne-writes-{}",
        uuid::Uuid::new_v4().simple()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.join("tools.db").display());
    run(&url, &["migrate"]);
    let store = SqliteStore::connect(&url, &StoreOptions::default())
        .await
        .unwrap();
    scenario(&url, store).await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_writes_subcommands_switch_what_the_store_reads_postgres() {
    let Some(url) = chataigne_common::testing::fresh_postgres_database("writes").await else {
        return;
    };
    run(&url, &["migrate"]);
    let store = PgStore::connect(&url, &StoreOptions::default())
        .await
        .unwrap();
    scenario(&url, store).await;
}

#[test]
fn a_bad_subcommand_is_refused() {
    let output = invoke("sqlite::memory:", &["writes", "pause"]);
    assert!(!output.status.success());
}
