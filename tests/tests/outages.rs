//! Dependency outages and deadlines through the whole stack: Redis,
//! PostgreSQL, the auth-service and the tool-service each cut (or stalled)
//! behind a forwarder the test controls, then restored. Every failure is
//! fast and typed, no write happens twice, and service resumes without any
//! restart.

use std::time::{Duration, Instant};

use chataigne_tests::demo::{ORG_BISTRO, USER_MANAGER};
use chataigne_tests::forwarder::{Forwarder, Mode};
use chataigne_tests::stores::{
    call_at, error_code, extra_gateway, first_conversation, postgres_authority, prefix,
    redis_authority, replayed, sandbox_on_redis, staff_messages,
};
use secrecy::{ExposeSecret, SecretString};
use serde_json::json;

const SEND: &str = "chataigne_conversation_message_send";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_down_fails_open_without_double_effects_and_recovers() {
    let prefix = prefix();
    let proxy = Forwarder::start(&redis_authority()).await;
    let proxied = format!("redis://{}", proxy.authority());
    let Some((sandbox, db)) = sandbox_on_redis(&prefix, |config| {
        config.gateway.redis.url = Some(SecretString::from(proxied.clone()));
    })
    .await
    else {
        return;
    };
    let conversation = first_conversation(&db, ORG_BISTRO).await;
    let token = sandbox.token(USER_MANAGER).await;
    let before = staff_messages(&db, &conversation).await;
    proxy.set(Mode::Cut);
    let started = Instant::now();
    let read = sandbox
        .call_tool(&token, "chataigne_organizations_list", json!({}))
        .await;
    assert_eq!(error_code(&read), None, "reads fail open: {read}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "fast: {:?}",
        started.elapsed()
    );
    let args = json!({"conversation_id": conversation, "text": "Votre table est prête.",
                      "idempotency_key": "redis-down-0001"});
    let first = sandbox.call_tool(&token, SEND, args.clone()).await;
    assert_eq!(error_code(&first), None, "{first}");
    let retry = sandbox.call_tool(&token, SEND, args.clone()).await;
    assert!(replayed(&retry), "the database record answers: {retry}");
    assert_eq!(staff_messages(&db, &conversation).await, before + 1);
    let metrics = reqwest::get(format!("{}/metrics", sandbox.gateway_internal_url))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(
        !metrics.contains("store_fail_open_total{store=\"rate_limit\"} 0"),
        "{metrics}"
    );

    proxy.set(Mode::Forward);
    let args = json!({"conversation_id": conversation, "text": "Bonne soirée.",
                      "idempotency_key": "redis-back-0002"});
    let mut cached = 0;
    for _ in 0..20 {
        let result = sandbox.call_tool(&token, SEND, args.clone()).await;
        assert_eq!(error_code(&result), None, "{result}");
        cached = chataigne_tests::stores::delete_keys(&prefix, "idem").await;
        if cached > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(cached > 0, "the cache is used again without a restart");
    assert_eq!(staff_messages(&db, &conversation).await, before + 2);
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stalled_or_down_gives_deadlines_and_dependency_errors_then_recovers() {
    let prefix = prefix();
    let authority = postgres_authority();
    let proxy = Forwarder::start(&authority).await;
    let proxied = proxy.authority();
    let Some((sandbox, db)) = sandbox_on_redis(&prefix, |config| {
        let url = config
            .tools
            .database
            .url
            .expose_secret()
            .replacen(&authority, &proxied, 1);
        config.tools.database.url = SecretString::from(url);
        // Longer than the deadlines: a hung database is a deadline, not a pool timeout.
        config.tools.database.connect_timeout_ms = 5_000;
        config.gateway.deadlines.read_ms = 1_500;
        config.gateway.deadlines.write_ms = 1_500;
    })
    .await
    else {
        return;
    };
    let db = db.replacen(&proxied, &authority, 1);
    let conversation = first_conversation(&db, ORG_BISTRO).await;
    let token = sandbox.token(USER_MANAGER).await;
    let before = staff_messages(&db, &conversation).await;
    // Warm the catalogue while the database answers.
    let warm = sandbox
        .call_tool(&token, "chataigne_organizations_list", json!({}))
        .await;
    assert_eq!(error_code(&warm), None, "{warm}");

    proxy.set(Mode::Stall);
    let started = Instant::now();
    let read = sandbox
        .call_tool(&token, "chataigne_organizations_list", json!({}))
        .await;
    assert_eq!(
        error_code(&read).as_deref(),
        Some("MCP_TOOL_TIMEOUT"),
        "{read}"
    );
    let args = json!({"conversation_id": conversation, "text": "Votre commande est prête.",
                      "idempotency_key": "pg-stall-0001"});
    let write = sandbox.call_tool(&token, SEND, args.clone()).await;
    assert_eq!(
        error_code(&write).as_deref(),
        Some("MCP_OUTCOME_UNKNOWN"),
        "{write}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );

    proxy.set(Mode::Cut);
    let started = Instant::now();
    let down = sandbox
        .call_tool(&token, "chataigne_organizations_list", json!({}))
        .await;
    let code = error_code(&down);
    assert!(
        matches!(
            code.as_deref(),
            Some("MCP_DEPENDENCY_UNAVAILABLE" | "MCP_TOOL_TIMEOUT")
        ),
        "{down}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    proxy.set(Mode::Forward);
    let mut recovered = None;
    for _ in 0..40 {
        let result = sandbox.call_tool(&token, SEND, args.clone()).await;
        if error_code(&result).is_none() {
            recovered = Some(result);
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let recovered = recovered.expect("the database is used again without a restart");
    // The stalled write was stopped downstream: the retry did the effect once.
    assert_eq!(
        staff_messages(&db, &conversation).await,
        before + 1,
        "{recovered}"
    );
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_and_tool_service_outages_are_dependency_errors_and_recover() {
    let prefix = prefix();
    let Some((sandbox, _db)) = sandbox_on_redis(&prefix, |_| {}).await else {
        return;
    };
    let auth = Forwarder::start(sandbox.auth_grpc_url.trim_start_matches("http://")).await;
    let tools = Forwarder::start(sandbox.tools_grpc_url.trim_start_matches("http://")).await;
    let (url, stop) = extra_gateway(&sandbox.stack, |config| {
        config.auth_service_url = format!("http://{}", auth.authority());
        config.tool_service_url = format!("http://{}", tools.authority());
        config.tool_catalog_ttl_secs = 1;
    })
    .await;
    let token = sandbox.token(USER_MANAGER).await;
    let list = |url: String, token: String| async move {
        call_at(&url, &token, "chataigne_organizations_list", json!({})).await
    };
    let (status, body) = list(url.clone(), token.clone()).await;
    assert_eq!((status, error_code(&body["result"])), (200, None), "{body}");

    auth.set(Mode::Cut);
    let started = Instant::now();
    let (status, body) = list(url.clone(), token.clone()).await;
    assert_eq!(status, 503, "{body}");
    assert!(started.elapsed() < Duration::from_secs(3));
    auth.set(Mode::Forward);
    let (status, _) = list(url.clone(), token.clone()).await;
    assert_eq!(status, 200, "the auth-service is used again");

    tools.set(Mode::Cut);
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let started = Instant::now();
    let (status, body) = list(url.clone(), token.clone()).await;
    assert_eq!(status, 200);
    assert_eq!(
        error_code(&body["result"]).as_deref(),
        Some("MCP_DEPENDENCY_UNAVAILABLE"),
        "{body}"
    );
    assert!(started.elapsed() < Duration::from_secs(3));
    tools.set(Mode::Forward);
    let mut ok = false;
    for _ in 0..20 {
        let (_, body) = list(url.clone(), token.clone()).await;
        if error_code(&body["result"]).is_none() {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(ok, "the tool-service is used again without a restart");
    stop.cancel();
    sandbox.shutdown().await;
}
