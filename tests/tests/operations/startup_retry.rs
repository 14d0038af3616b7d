//! Start-up against a dependency that is not up yet: the tool-service waits
//! for a PostgreSQL that starts listening only later (a forwarder bound after
//! a delay) and then serves; the auth-service, told to wait a short bound
//! for a database nobody listens for, gives up with an error that names the
//! database without its password and the bound.

use std::time::Duration;

use chataigne_common::startup::StartupConfig;
use chataigne_tests::forwarder::Forwarder;
use chataigne_tests::fresh_postgres_database;
use chataigne_tests::stores::postgres_authority;
use secrecy::SecretString;
use tokio::net::TcpListener;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

/// A loopback address nothing listens on now (the port was free a moment ago).
async fn unused_address() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address").to_string();
    drop(listener);
    addr
}

fn patient() -> StartupConfig {
    StartupConfig {
        max_wait_secs: 60,
        initial_backoff_ms: 100,
        max_backoff_ms: 500,
    }
}

#[tokio::test]
async fn the_tool_service_waits_for_a_database_that_comes_up_late_then_serves() {
    let Some(url) = fresh_postgres_database("startup_late").await else {
        return;
    };
    let real = postgres_authority();
    let late = unused_address().await;
    let mut config = chataigne_tools::Config::default();
    config.database.url = SecretString::from(url.replacen(&real, &late, 1));
    config.database.connect_timeout_ms = 1_000;
    config.idempotency.secret = Some(SecretString::from("q8J1r0-Zk2VwYh4uN7bT3sXeLm9PaCdF"));
    config.cursor.keys = vec![SecretString::from("5f0c9a3e7b1d2846c0e9f7a3b5d1e2c4")];
    config.startup = patient();
    let building = tokio::spawn(async move { chataigne_tools::ToolService::build(&config).await });

    // Longer than one connect timeout and several attempts: without retries
    // the build would have failed by now (kept: the time passing is the
    // behaviour under test).
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert!(
        !building.is_finished(),
        "the tool-service still waits for its database"
    );
    let _database = Forwarder::start_at(&late, &real).await;

    let service = tokio::time::timeout(Duration::from_secs(50), building)
        .await
        .expect("the tool-service is built once the database is up")
        .expect("the build task ran")
        .expect("the tool-service starts");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("address");
    let stop = tokio_util::sync::CancellationToken::new();
    let stopped = stop.clone();
    let serving = tokio::spawn(service.serve(
        chataigne_tools::Listeners {
            grpc: listener,
            metrics: None,
        },
        async move { stopped.cancelled().await },
    ));
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .expect("endpoint")
        .connect()
        .await
        .expect("the tool-service accepts connections");
    let health = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .expect("Health/Check answers")
        .into_inner();
    assert_eq!(
        health.status,
        tonic_health::pb::health_check_response::ServingStatus::Serving as i32
    );
    stop.cancel();
    let _ = serving.await;
}

#[tokio::test]
async fn the_auth_service_gives_up_after_its_bound_with_a_clear_error() {
    let nowhere = unused_address().await;
    let mut config = chataigne_auth::Config::default();
    config.database.url = SecretString::from(format!("postgres://app:hunter2@{nowhere}/auth"));
    config.database.connect_timeout_ms = 200;
    config.keys.encryption_key = chataigne_auth::generate_kek().ok();
    config.startup = StartupConfig {
        max_wait_secs: 2,
        initial_backoff_ms: 100,
        max_backoff_ms: 400,
    };
    let started = std::time::Instant::now();
    let error = match chataigne_auth::AuthApp::build(config).await {
        Ok(_) => panic!("nothing listens at {nowhere}"),
        Err(error) => format!("{error:#}"),
    };
    let waited = started.elapsed();
    // The bound is 2 s; the last attempt may take its connect timeout.
    assert!(
        waited >= Duration::from_millis(1_000) && waited < Duration::from_secs(10),
        "gave up after {waited:?}"
    );
    assert!(
        error.contains(&format!("database postgres://{nowhere}/auth not available")),
        "{error}"
    );
    assert!(error.contains("startup.max_wait_secs = 2"), "{error}");
    assert!(!error.contains("hunter2"), "{error}");
}
