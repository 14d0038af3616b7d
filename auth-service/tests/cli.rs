//! The administration commands of the `chataigne-auth-service` binary against
//! a SQLite database: migrate, register a service client, rotate and list keys,
//! disable a client, set a user's status; bad input fails with a message;
//! `config check` refuses a PostgreSQL configuration without its shared
//! secrets and prints a valid one redacted.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::process::Command;

fn run(db: &str, args: &[&str]) -> (bool, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_chataigne-auth-service"))
        .args(args)
        // Only this configuration: other CHATAIGNE_* variables of the test
        // environment (client locations, CI flags) are not auth-service fields.
        .env_clear()
        .env("CHATAIGNE_DATABASE__URL", db)
        .output()
        .expect("binary runs");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).to_string(),
        String::from_utf8_lossy(&output.stderr).to_string(),
    )
}

#[test]
fn the_admin_commands_manage_clients_keys_and_users() {
    let path = std::env::temp_dir().join(format!(
        "chataigne-cli-{}.db",
        uuid::Uuid::new_v4().simple()
    ));
    let db = format!("sqlite://{}?mode=rwc", path.display());
    let (ok, out, err) = run(&db, &["migrate"]);
    assert!(ok, "{err}");
    assert!(out.contains("migrations applied"));

    let (ok, out, err) = run(
        &db,
        &[
            "clients",
            "add",
            "reporting",
            "--name",
            "Reporting",
            "--kind",
            "service",
            "--scope",
            "orders.read location.read",
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("client_id=reporting") && out.contains("service_user_id=svc_reporting"));
    assert!(
        out.lines()
            .any(|l| l.starts_with("client_secret=") && l.len() > 40)
    );
    assert!(
        !err.contains(
            out.lines()
                .find(|l| l.starts_with("client_secret="))
                .unwrap()
        ),
        "secret never logged"
    );

    let (ok, _, err) = run(
        &db,
        &[
            "memberships",
            "add",
            "svc_reporting",
            "--organization",
            "org_x",
            "--role",
            "analyst",
        ],
    );
    assert!(ok, "{err}");
    let (ok, _, err) = run(&db, &["clients", "disable", "reporting"]);
    assert!(ok, "{err}");
    let (ok, out, _) = run(&db, &["clients", "list"]);
    assert!(ok && out.contains("reporting\tservice\tdisabled"), "{out}");

    let (ok, out, err) = run(&db, &["keys", "rotate"]);
    assert!(ok && out.starts_with("kid="), "{err}");
    let (ok, out, _) = run(&db, &["keys", "list"]);
    assert!(ok);
    assert_eq!(
        out.lines().count(),
        2,
        "first key plus the rotated one: {out}"
    );

    let (ok, _, err) = run(&db, &["users", "set-status", "svc_reporting", "banned"]);
    assert!(ok, "{err}");
    let (ok, _, err) = run(&db, &["users", "set-status", "svc_reporting", "sleeping"]);
    assert!(!ok && !err.is_empty());
    let (ok, _, _) = run(&db, &["clients", "add", "bad id!", "--name", "x"]);
    assert!(!ok);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
    }
}

/// `chataigne-auth-service config check`: on PostgreSQL it refuses a
/// configuration without the key-encryption key, naming the variable, and
/// prints a valid one with every secret redacted (exit status 0).
mod config_check {
    fn config_check(env: &[(&str, &str)]) -> (bool, String, String) {
        chataigne_common::testing::run_with_env(
            env!("CARGO_BIN_EXE_chataigne-auth-service"),
            &["config", "check"],
            env,
        )
    }

    const DATABASE: (&str, &str) = (
        "CHATAIGNE_DATABASE__URL",
        "postgres://app:hunter2@db:5432/auth",
    );

    #[test]
    fn on_postgres_the_key_encryption_key_is_required_by_name() {
        let (ok, out, err) = config_check(&[DATABASE]);
        assert!(!ok, "{out}");
        assert!(err.contains("CHATAIGNE_KEYS__ENCRYPTION_KEY"), "{err}");
        assert!(!err.contains("hunter2"), "{err}");
    }

    #[test]
    fn a_valid_configuration_is_printed_with_secrets_redacted() {
        let kek = chataigne_auth::generate_kek().unwrap();
        let kek = secrecy::ExposeSecret::expose_secret(&kek).to_owned();
        let (ok, out, err) = config_check(&[
            DATABASE,
            ("CHATAIGNE_KEYS__ENCRYPTION_KEY", kek.as_str()),
            ("CHATAIGNE_STARTUP__MAX_WAIT_SECS", "5"),
        ]);
        assert!(ok, "{err}");
        assert!(out.contains("max_wait_secs = 5"), "{out}");
        assert!(out.contains("encryption_key = \"<redacted>\""), "{out}");
        assert!(!out.contains("hunter2"), "{out}");
        assert!(!out.contains(&kek), "{out}");
    }

    #[test]
    fn on_postgres_the_demo_data_is_refused_by_name_unless_insecure_development_is_allowed() {
        let kek = chataigne_auth::generate_kek().unwrap();
        let kek = secrecy::ExposeSecret::expose_secret(&kek).to_owned();
        let production = [
            DATABASE,
            ("CHATAIGNE_KEYS__ENCRYPTION_KEY", kek.as_str()),
            ("CHATAIGNE_SEED_DEMO", "true"),
        ];
        let (ok, out, err) = config_check(&production);
        assert!(!ok, "{out}");
        assert!(
            err.contains("CHATAIGNE_SEED_DEMO")
                && err.contains("CHATAIGNE_ALLOW_INSECURE_DEVELOPMENT"),
            "{err}"
        );
        let mut development = production.to_vec();
        development.push(("CHATAIGNE_ALLOW_INSECURE_DEVELOPMENT", "true"));
        let (ok, _, err) = config_check(&development);
        assert!(ok, "{err}");
    }
}

#[test]
fn dash_dash_version_prints_the_version_and_the_revision() {
    chataigne_common::testing::assert_prints_its_version(env!(
        "CARGO_BIN_EXE_chataigne-auth-service"
    ));
}

#[test]
fn admin_commands_refuse_to_run_without_a_configured_database_or_data_dir() {
    chataigne_common::testing::assert_commands_need_a_database(
        env!("CARGO_BIN_EXE_chataigne-auth-service"),
        &[
            &["migrate"][..],
            &[
                "clients",
                "add",
                "svc",
                "--name",
                "x",
                "--kind",
                "confidential",
                "--redirect-uri",
                "http://127.0.0.1/cb",
            ][..],
        ],
    );
}
