//! The operator subcommands of the tool-service binary: `migrate` applies the
//! schema and exits, `seed` loads a generated data set at scale with its
//! analytics rollup, and loading twice changes nothing; on SQLite and
//! PostgreSQL. `config check` refuses a PostgreSQL configuration without the
//! shared secrets and prints a valid one redacted; `migrate` waits for a
//! database that is not up yet, within its start-up bound.

use crate::support;

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
async fn migrating_and_seeding_twice_changes_nothing_sqlite() {
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
async fn migrating_and_seeding_twice_changes_nothing_postgres() {
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

/// `chataigne-tool-service config check`: on PostgreSQL it refuses a
/// configuration without the shared secrets, naming the variable, and
/// prints a valid one with every secret redacted (exit status 0).
mod config_check {
    fn config_check(env: &[(&str, &str)]) -> (bool, String, String) {
        chataigne_common::testing::run_with_env(
            env!("CARGO_BIN_EXE_chataigne-tool-service"),
            &["config", "check"],
            env,
        )
    }

    const DATABASE: (&str, &str) = (
        "CHATAIGNE_DATABASE__URL",
        "postgres://app:hunter2@db:5432/tools",
    );
    const IDEMPOTENCY: (&str, &str) = (
        "CHATAIGNE_IDEMPOTENCY__SECRET",
        "idempotency-secret-q8J1r0Zk2VwYh4uN7b",
    );
    const CURSORS: (&str, &str) = (
        "CHATAIGNE_CURSOR__KEYS",
        "cursor-key-5f0c9a3e7b1d2846c0e9f7a3b5",
    );

    #[test]
    fn on_postgres_a_missing_shared_secret_is_refused_by_name() {
        let (ok, out, err) = config_check(&[DATABASE, CURSORS]);
        assert!(!ok, "{out}");
        assert!(err.contains("CHATAIGNE_IDEMPOTENCY__SECRET"), "{err}");
        let (ok, _, err) = config_check(&[DATABASE, IDEMPOTENCY]);
        assert!(!ok);
        assert!(err.contains("CHATAIGNE_CURSOR__KEYS"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn a_valid_configuration_is_printed_with_secrets_redacted() {
        let (ok, out, err) = config_check(&[DATABASE, IDEMPOTENCY, CURSORS]);
        assert!(ok, "{err}");
        assert!(out.contains("configuration valid"), "{out}");
        assert!(out.contains("[startup]"), "{out}");
        for secret in ["hunter2", "idempotency-secret", "cursor-key"] {
            assert!(!out.contains(secret), "{secret} printed: {out}");
            assert!(!err.contains(secret), "{secret} printed: {err}");
        }
        // The effective file is itself a configuration the service accepts.
        let path = std::env::temp_dir().join(format!(
            "chataigne-config-check-{}.toml",
            uuid::Uuid::new_v4().simple()
        ));
        let without_secrets: String = out
            .lines()
            .filter(|line| !line.contains("<redacted>"))
            .collect::<Vec<_>>()
            .join("\n");
        std::fs::write(&path, without_secrets).unwrap();
        let path_text = path.display().to_string();
        let (ok, _, err) = config_check(&[
            ("CHATAIGNE_CONFIG", path_text.as_str()),
            DATABASE,
            IDEMPOTENCY,
            CURSORS,
        ]);
        let _ = std::fs::remove_file(&path);
        assert!(ok, "{err}");
    }
}

/// `chataigne-tool-service migrate` (the deployment's migration Job) waits
/// for a database that is not up, within `startup.max_wait_secs`, then fails
/// with an error naming the database without its password.
mod migrate_waits {
    use std::process::Command;
    use std::time::{Duration, Instant};

    #[test]
    fn migrate_gives_up_after_the_startup_bound_naming_the_database() {
        // A port nothing listens on: bound, then released.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let started = Instant::now();
        let output = Command::new(env!("CARGO_BIN_EXE_chataigne-tool-service"))
            .arg("migrate")
            .env_clear()
            .env(
                "CHATAIGNE_DATABASE__URL",
                format!("postgres://app:hunter2@127.0.0.1:{port}/tools"),
            )
            .env("CHATAIGNE_DATABASE__CONNECT_TIMEOUT_MS", "200")
            .env("CHATAIGNE_STARTUP__MAX_WAIT_SECS", "2")
            .env("CHATAIGNE_STARTUP__INITIAL_BACKOFF_MS", "100")
            .output()
            .expect("binary runs");
        let waited = started.elapsed();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(!output.status.success(), "{stdout}");
        // Several attempts within the bound (generous margins: no timing claim
        // beyond "it waited, and it stopped").
        assert!(
            waited >= Duration::from_millis(1_000) && waited < Duration::from_secs(20),
            "{waited:?}"
        );
        assert!(
            stderr.contains(&format!("postgres://127.0.0.1:{port}/tools not available")),
            "{stderr}"
        );
        assert!(stderr.contains("startup.max_wait_secs = 2"), "{stderr}");
        // Each attempt is logged, never with the password.
        assert!(
            stdout.contains("retrying") || stderr.contains("retrying"),
            "{stdout}{stderr}"
        );
        assert!(!stderr.contains("hunter2") && !stdout.contains("hunter2"));
    }
}

#[test]
fn dash_dash_version_prints_the_version_and_the_revision() {
    chataigne_common::testing::assert_prints_its_version(env!(
        "CARGO_BIN_EXE_chataigne-tool-service"
    ));
}

#[test]
fn admin_commands_refuse_to_run_without_a_configured_database_or_data_dir() {
    chataigne_common::testing::assert_commands_need_a_database(
        env!("CARGO_BIN_EXE_chataigne-tool-service"),
        &[&["migrate"][..], &["writes", "status"][..]],
    );
}
