//! The operator subcommands of the tool-service binary: `migrate` applies the
//! schema and exits, `seed` loads a generated data set at scale with its
//! analytics rollup, and loading twice changes nothing; on SQLite and
//! PostgreSQL.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use chataigne_tools::store::{PgStore, SqliteStore, StoreOptions};

fn run(url: &str, args: &[&str]) {
    support::run_binary(url, args);
}

/// (locations, orders not cancelled, rollup rows, orders counted by the rollup)
const COUNTS: [&str; 4] = [
    "SELECT COUNT(*) FROM locations",
    "SELECT COUNT(*) FROM orders WHERE status <> 'cancelled'",
    "SELECT COUNT(*) FROM daily_location_metrics",
    "SELECT CAST(COALESCE(SUM(orders_count), 0) AS BIGINT) FROM daily_location_metrics",
];

async fn sqlite_counts(url: &str) -> Vec<i64> {
    let store = SqliteStore::connect(url, &StoreOptions::default())
        .await
        .unwrap();
    let mut counts = Vec::new();
    for sql in COUNTS {
        counts.push(
            sqlx::query_scalar(sql)
                .fetch_one(store.pool())
                .await
                .unwrap(),
        );
    }
    counts
}

async fn postgres_counts(url: &str) -> Vec<i64> {
    let store = PgStore::connect(url, &StoreOptions::default())
        .await
        .unwrap();
    let mut counts = Vec::new();
    for sql in COUNTS {
        counts.push(
            sqlx::query_scalar(sql)
                .fetch_one(store.pool())
                .await
                .unwrap(),
        );
    }
    counts
}

const SEED: [&str; 9] = [
    "seed",
    "--locations",
    "2",
    "--days",
    "3",
    "--orders-per-day",
    "4",
    "--seed",
    "9",
];

fn check(after_migrate: &[i64], seeded: &[i64], again: &[i64]) {
    assert_eq!(
        after_migrate,
        [0, 0, 0, 0],
        "migrate only creates the schema"
    );
    assert_eq!(seeded[0], 7, "five demo locations and two generated ones");
    assert!(seeded[1] > 0 && seeded[2] > 0);
    assert_eq!(seeded[3], seeded[1], "the rollup counts every order");
    assert_eq!(again, seeded, "seeding twice changes nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_and_seed_on_sqlite() {
    let dir = std::env::temp_dir().join(format!("chataigne-ops-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.join("tools.db").display());
    run(&url, &["migrate"]);
    run(&url, &["migrate"]);
    let after_migrate = sqlite_counts(&url).await;
    run(&url, &SEED);
    let seeded = sqlite_counts(&url).await;
    run(&url, &SEED);
    let again = sqlite_counts(&url).await;
    let _ = std::fs::remove_dir_all(&dir);
    check(&after_migrate, &seeded, &again);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migrate_and_seed_on_postgres() {
    let Some(url) = chataigne_common::testing::fresh_postgres_database("ops").await else {
        return;
    };
    run(&url, &["migrate"]);
    run(&url, &["migrate"]);
    let after_migrate = postgres_counts(&url).await;
    run(&url, &SEED);
    let seeded = postgres_counts(&url).await;
    run(&url, &SEED);
    let again = postgres_counts(&url).await;
    check(&after_migrate, &seeded, &again);
}
