//! Dependency outages and deadlines through the whole stack: Redis,
//! PostgreSQL, the auth-service and the tool-service each cut (or stalled)
//! behind a forwarder the test controls, then restored; and the tool-service
//! really stopped and started again on its address. Every failure is fast
//! and typed, no write happens twice, and service resumes without restarting
//! anything else.

use chataigne_tests::envelope;
use std::time::{Duration, Instant};

use chataigne_tests::demo::{LOC_PARIS, ORG_BISTRO, USER_MANAGER};
use chataigne_tests::forwarder::{Forwarder, Mode};
use chataigne_tests::stores::{
    call_at, error_code, extra_gateway, first_conversation, postgres_authority, prefix,
    redis_authority, replayed, sandbox_on_redis, staff_messages,
};
use chataigne_tests::{Backend, Sandbox};
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
    let mut counted = 0;
    for _ in 0..20 {
        let result = sandbox.call_tool(&token, SEND, args.clone()).await;
        assert_eq!(error_code(&result), None, "{result}");
        // The rate limits count in Redis again (the gateway keeps no
        // idempotency entries: the tool-service's record answers retries).
        counted = chataigne_tests::stores::delete_keys(&prefix, "rl").await;
        if counted > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert!(counted > 0, "Redis is used again without a restart");
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
    assert_eq!(status, 200, "answered, not a 5xx: {body}");
    assert_eq!(body["id"], 1, "{body}");
    assert_eq!(
        body["error"]["data"]["code"], "MCP_DEPENDENCY_UNAVAILABLE",
        "{body}"
    );
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

/// Path of the Connected Apps (google profile) endpoint added for the test.
const GOOGLE_PATH: &str = "/mcp/google";

/// Messages of `conversation` whose text is `body`, read through the tools.
async fn messages_with(sandbox: &Sandbox, token: &str, conversation: &str, body: &str) -> usize {
    let result = sandbox
        .call_tool(
            token,
            "chataigne_conversation_get",
            json!({"conversation_id": conversation, "limit": 100}),
        )
        .await;
    assert_eq!(error_code(&result), None, "{result}");
    result["structuredContent"]["data"]["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter(|m| m["body"] == body)
        .count()
}

/// Calls `name` until it succeeds (bounded); the successful result.
async fn until_ok(
    url: &str,
    token: &str,
    name: &str,
    arguments: serde_json::Value,
) -> serde_json::Value {
    let mut last = serde_json::Value::Null;
    for _ in 0..60 {
        let (status, body) = call_at(url, token, name, arguments.clone()).await;
        if status == 200 && body["result"].is_object() && error_code(&body["result"]).is_none() {
            return body["result"].clone();
        }
        last = body;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("{name} never succeeded again: {last}");
}

/// The tool-service really stopped (its `serve` shut down, its port closed)
/// then started again on the same address: while it is down, calls are
/// answered at once with the dependency error of each profile; once it is
/// back the same gateway serves again without a restart; writes attempted
/// before, during and across the outage each happen exactly once.
async fn tool_service_stopped_then_restarted(backend: Backend) {
    let Some(sandbox) = Sandbox::start_with(backend, |config| {
        config
            .gateway
            .endpoints
            .push(chataigne_gateway::EndpointConfig {
                path: GOOGLE_PATH.to_owned(),
                profile: chataigne_gateway::Profile::Google,
                hosts: Vec::new(),
                public_url: None,
            });
    })
    .await
    else {
        assert!(!chataigne_tests::in_ci(), "PostgreSQL is required in CI");
        return;
    };
    let url = sandbox.mcp_url.clone();
    let google_url = format!("{}{GOOGLE_PATH}", sandbox.gateway_url);
    let token = sandbox.token(USER_MANAGER).await;
    let google_token = sandbox
        .auth
        .issue_access_token(chataigne_auth::IssueTokenRequest {
            user_id: USER_MANAGER.to_owned(),
            client_id: chataigne_tests::demo::DEMO_CLIENT_ID.to_owned(),
            scopes: chataigne_tests::demo::demo_token_scopes()
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            resource: google_url.clone(),
            ttl: None,
        })
        .await
        .expect("token for the google endpoint")
        .access_token;
    let read = json!({});
    // A read on the google endpoint.
    let google_read = || {
        call_at(
            &google_url,
            &google_token,
            "chataigne_organizations_list",
            read.clone(),
        )
    };
    let (status, body) = google_read().await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["result"].is_object(),
        "the google endpoint serves: {body}"
    );
    let conversations = sandbox
        .call_tool(
            &token,
            "chataigne_conversations_list",
            json!({"location_id": LOC_PARIS, "limit": 1}),
        )
        .await;
    let conversation = conversations["structuredContent"]["data"]["conversations"][0]["id"]
        .as_str()
        .expect("a conversation")
        .to_owned();
    let send = |text: &str, key: &str| json!({"conversation_id": conversation, "text": text, "idempotency_key": key});
    let before_text = "Votre commande est partie.";
    let before = send(before_text, "outage-before-0001");
    // Done through another gateway: this gateway's cache knows nothing of it.
    let (other_gateway, stop_other) = extra_gateway(&sandbox.stack, |_| {}).await;
    let (status, done) = call_at(&other_gateway, &token, SEND, before.clone()).await;
    assert_eq!((status, error_code(&done["result"])), (200, None), "{done}");
    stop_other.cancel();

    // A write racing with the stop: served before the service goes, or refused.
    let racing_text = "Nous fermons la commande.";
    let racing = send(racing_text, "outage-racing-0003");
    let (raced, stopped) = tokio::join!(
        call_at(&url, &token, SEND, racing.clone()),
        sandbox.stop_tool_service()
    );
    stopped.expect("the tool-service stops");
    assert_eq!(raced.0, 200, "{raced:?}");
    let raced_code = error_code(&raced.1["result"]);
    assert!(
        matches!(
            raced_code.as_deref(),
            None | Some("MCP_DEPENDENCY_UNAVAILABLE" | "MCP_OUTCOME_UNKNOWN")
        ),
        "{raced:?}"
    );

    // Down: fast, typed failures on both profiles, for reads and writes.
    let during_text = "Votre table est prête.";
    let during = send(during_text, "outage-during-0002");
    for _ in 0..2 {
        let started = Instant::now();
        let (status, body) =
            call_at(&url, &token, "chataigne_organizations_list", read.clone()).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            error_code(&body["result"]).as_deref(),
            Some("MCP_DEPENDENCY_UNAVAILABLE"),
            "{body}"
        );
        let error = &envelope(&body["result"])["data"]["error"];
        assert_eq!(error["category"], "dependency", "{error}");
        assert_eq!(error["retryable"], true, "{error}");
        let (status, body) = call_at(&url, &token, SEND, during.clone()).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            error_code(&body["result"]).as_deref(),
            Some("MCP_DEPENDENCY_UNAVAILABLE"),
            "a write that never reached the tool-service is known not done: {body}"
        );
        let (status, body) = google_read().await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["error"]["code"], -32502, "google profile: {body}");
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "no hang while the tool-service is down: {:?}",
            started.elapsed()
        );
    }

    sandbox
        .restart_tool_service()
        .await
        .expect("the tool-service starts again on its address");
    // The same gateway recovers by itself, on both endpoints.
    until_ok(&url, &token, "chataigne_organizations_list", read.clone()).await;
    let (status, body) = google_read().await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["result"].is_object(),
        "the google endpoint serves again: {body}"
    );

    // The write refused during the outage happens now, once.
    let first = until_ok(&url, &token, SEND, during.clone()).await;
    assert!(!replayed(&first), "{first}");
    let (_, again) = call_at(&url, &token, SEND, during).await;
    assert!(replayed(&again["result"]), "{again}");
    // The write done before the outage is answered by the restarted
    // tool-service from its record (this gateway never cached it).
    let (_, retried) = call_at(&url, &token, SEND, before).await;
    assert!(replayed(&retried["result"]), "{retried}");
    assert_eq!(
        retried["result"]["structuredContent"]["data"],
        done["result"]["structuredContent"]["data"]
    );
    // The racing write is retried until it is known done.
    until_ok(&url, &token, SEND, racing).await;
    for text in [before_text, during_text, racing_text] {
        assert_eq!(
            messages_with(&sandbox, &token, &conversation, text).await,
            1,
            "{text:?} sent exactly once"
        );
    }

    // Stopping twice and restarting twice are harmless.
    sandbox.stop_tool_service().await.expect("stops");
    sandbox.stop_tool_service().await.expect("already stopped");
    sandbox.restart_tool_service().await.expect("starts");
    sandbox
        .restart_tool_service()
        .await
        .expect("restarts while running");
    until_ok(&url, &token, "chataigne_orders_list", json!({"limit": 1})).await;
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_tool_service_stopped_then_restarted_on_its_address() {
    tool_service_stopped_then_restarted(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_service_stopped_then_restarted_on_its_address() {
    tool_service_stopped_then_restarted(Backend::Postgres).await;
}
