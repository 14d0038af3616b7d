//! Dependency outages and deadlines through the whole stack: Redis,
//! PostgreSQL (under either backend), the auth-service and the tool-service
//! each cut (or stalled) behind a forwarder the test controls, then
//! restored; and the tool-service really stopped and started again on its
//! address. Once a dependency is known down or hung every call is refused
//! at once (without waiting out its deadline) with the typed error to the
//! request's id, health and readiness say so, no write happens twice, and
//! service resumes as soon as the dependency answers, without restarting
//! anything else. How fast is measured by the benchmarks, not here: the
//! time bounds below only tell a call that waited from one that did not.

use chataigne_common::testing::{eventually, eventually_every, eventually_some_every};

/// How often a probe that calls a tool asks again (each call counts
/// against the caller's rate limits).
const CALLS_EVERY: Duration = Duration::from_millis(250);
use chataigne_tests::envelope;
use std::time::{Duration, Instant};

use chataigne_common::ErrorCode;
use chataigne_common::codes::decode_status;
use chataigne_proto::tools::v1::CallToolRequest;
use chataigne_proto::tools::v1::tool_catalog_client::ToolCatalogClient;
use chataigne_tests::demo::{LOC_PARIS, ORG_BISTRO, USER_MANAGER};
use chataigne_tests::forwarder::{Forwarder, Mode};
use chataigne_tests::stores::{
    Database, ExtraToolService, call_at, error_code, extra_gateway, first_conversation, prefix,
    redis_authority, replayed, sandbox_behind_proxy, sandbox_on_redis, staff_messages,
};
use chataigne_tests::{Backend, Sandbox, typed_rpc};
use secrecy::SecretString;
use serde_json::{Value, json};
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus;
use tonic_health::pb::health_client::HealthClient;

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
    // Failing open does not wait on Redis: far inside the 15 s read deadline
    // (a generous bound on a call that takes milliseconds).
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
    // Failing open, the replica still serves every call: ready, degraded
    // (never taken out of its Service), and the degraded gauge says so.
    let metrics_url = format!("{}/metrics", sandbox.gateway_internal_url);
    eventually("the degraded gauge turns 1", RECOVERY, || async {
        scrape(&metrics_url)
            .await
            .contains("chataigne_gateway_degraded{reason=\"rate_limit_store\"} 1")
    })
    .await;
    let (status, body) = readiness(&sandbox).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["status"], "degraded", "{body}");
    assert_eq!(body["redis"], false, "{body}");

    proxy.set(Mode::Forward);
    let args = json!({"conversation_id": conversation, "text": "Bonne soirée.",
                      "idempotency_key": "redis-back-0002"});
    eventually_every(
        "Redis is used again without a restart",
        Duration::from_secs(5),
        CALLS_EVERY,
        || async {
            let result = sandbox.call_tool(&token, SEND, args.clone()).await;
            assert_eq!(error_code(&result), None, "{result}");
            // The rate limits count in Redis again (the gateway keeps no
            // idempotency entries: the tool-service's record answers retries).
            chataigne_tests::stores::delete_keys(&prefix, "rl").await > 0
        },
    )
    .await;
    assert_eq!(staff_messages(&db, &conversation).await, before + 2);
    eventually("ready again, not degraded", RECOVERY, || async {
        let (status, body) = readiness(&sandbox).await;
        status == 200 && body["status"] == "ready"
    })
    .await;
    assert!(
        scrape(&metrics_url)
            .await
            .contains("chataigne_gateway_degraded{reason=\"rate_limit_store\"} 0")
    );
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_limits_failing_closed_redis_down_makes_the_gateway_unready_and_refuses_calls() {
    let prefix = prefix();
    let proxy = Forwarder::start(&redis_authority()).await;
    let proxied = format!("redis://{}", proxy.authority());
    let Some((sandbox, _db)) = sandbox_on_redis(&prefix, |config| {
        config.gateway.redis.url = Some(SecretString::from(proxied.clone()));
        config.gateway.rate_limits.on_store_failure =
            chataigne_gateway::config::OnStoreFailure::FailClosed;
    })
    .await
    else {
        return;
    };
    let token = sandbox.token(USER_MANAGER).await;
    let list = || sandbox.call_tool(&token, "chataigne_organizations_list", json!({}));
    assert_eq!(
        error_code(&list().await),
        None,
        "served while Redis answers"
    );
    assert_eq!(readiness(&sandbox).await.0, 200);

    proxy.set(Mode::Cut);
    eventually("not ready once Redis is known down", RECOVERY, || async {
        let (status, body) = readiness(&sandbox).await;
        status == 503 && body["status"] == "not_ready" && body["redis"] == false
    })
    .await;
    // Refused with the typed, retryable dependency error, at once.
    let started = Instant::now();
    let (status, body) = call_at(
        &sandbox.mcp_url,
        &token,
        "chataigne_organizations_list",
        json!({}),
    )
    .await;
    assert!(started.elapsed() < FAST, "{:?}", started.elapsed());
    assert_eq!(status, 200, "answered to the call's id: {body}");
    let error = &body["error"]["data"];
    assert_eq!(error["code"], "MCP_DEPENDENCY_UNAVAILABLE", "{body}");
    assert_eq!(error["category"], "dependency", "{body}");
    assert_eq!(error["retryable"], true, "{body}");
    assert!(
        error["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0),
        "{body}"
    );
    let metrics = scrape(&format!("{}/metrics", sandbox.gateway_internal_url)).await;
    assert!(
        metrics.contains("chataigne_gateway_degraded{reason=\"rate_limit_store\"} 0"),
        "failing closed is unready, not degraded: {metrics}"
    );

    proxy.set(Mode::Forward);
    eventually("ready again once Redis answers", RECOVERY, || async {
        readiness(&sandbox).await.0 == 200
    })
    .await;
    assert_eq!(error_code(&list().await), None, "served again");
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stalled_or_down_gives_deadlines_and_dependency_errors_then_recovers() {
    let prefix = prefix();
    let Some((sandbox, proxy, db)) = sandbox_behind_proxy(&prefix, Database::Tools, |config| {
        // Longer than the deadlines: a hung database is a deadline, not a pool timeout.
        config.tools.database.connect_timeout_ms = 5_000;
        config.gateway.deadlines.read_ms = 1_500;
        config.gateway.deadlines.write_ms = 1_500;
    })
    .await
    else {
        return;
    };
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
    // Ended at its deadline, or before it, released with the dependency
    // error, once the tool-service found the database hung: never at the
    // pool timeout.
    assert!(
        matches!(
            error_code(&read).as_deref(),
            Some("MCP_TOOL_TIMEOUT" | "MCP_DEPENDENCY_UNAVAILABLE")
        ),
        "{read}"
    );
    assert!(
        started.elapsed() < Duration::from_millis(2_500),
        "{:?}",
        started.elapsed()
    );
    let args = json!({"conversation_id": conversation, "text": "Votre commande est prête.",
                      "idempotency_key": "pg-stall-0001"});
    let write = sandbox.call_tool(&token, SEND, args.clone()).await;
    // Sent while the database hangs: unknown outcome; refused unsent once the
    // tool-service's health has reported it (the breaker opened).
    assert!(
        matches!(
            error_code(&write).as_deref(),
            Some("MCP_OUTCOME_UNKNOWN" | "MCP_DEPENDENCY_UNAVAILABLE")
        ),
        "{write}"
    );
    // Each call ends at its 1.5 s deadline, not at the 5 s pool timeout
    // (two of which would be 10 s).
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
    // No hang past the 1.5 s deadline.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );

    proxy.set(Mode::Forward);
    let recovered = eventually_some_every(
        "the database is used again without a restart",
        Duration::from_secs(10),
        CALLS_EVERY,
        || async {
            let result = sandbox.call_tool(&token, SEND, args.clone()).await;
            error_code(&result).is_none().then_some(result)
        },
    )
    .await;
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
        // Until a hang is known, calls wait this long.
        config.deadlines.auth_ms = DEADLINE.as_millis() as u64;
        config.deadlines.read_ms = DEADLINE.as_millis() as u64;
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
    // A cut connection is refused, not waited on until the deadline.
    assert!(started.elapsed() < DEADLINE);
    auth.set(Mode::Forward);
    let (status, _) = list(url.clone(), token.clone()).await;
    assert_eq!(status, 200, "the auth-service is used again");

    tools.set(Mode::Cut);
    // The behaviour under test: the catalogue's TTL (1 s) passes on the
    // gateway's own clock while the tool-service is cut.
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let started = Instant::now();
    let (status, body) = list(url.clone(), token.clone()).await;
    assert_eq!(status, 200);
    assert_eq!(
        error_code(&body["result"]).as_deref(),
        Some("MCP_DEPENDENCY_UNAVAILABLE"),
        "{body}"
    );
    assert!(started.elapsed() < DEADLINE, "refused, not waited on");
    tools.set(Mode::Forward);
    eventually_every(
        "the tool-service is used again without a restart",
        Duration::from_secs(5),
        CALLS_EVERY,
        || async {
            let (_, body) = list(url.clone(), token.clone()).await;
            error_code(&body["result"]).is_none()
        },
    )
    .await;

    // Hung (connections open, nothing answered): once the breaker has seen
    // it, refused at once with the request's id, until it answers again.
    let auth_down = |body: &Value| {
        body["id"] == 1 && body["error"]["data"]["code"] == "MCP_DEPENDENCY_UNAVAILABLE"
    };
    auth.set(Mode::Stall);
    let took = known_down(|| list(url.clone(), token.clone()), auth_down).await;
    assert!(median(took.clone()) < FAST, "a hung auth-service: {took:?}");
    auth.set(Mode::Forward);
    let back = Instant::now();
    until_served(|| list(url.clone(), token.clone())).await;
    assert!(back.elapsed() < RECOVERY, "{:?}", back.elapsed());

    let tools_down = |body: &Value| {
        body["id"] == 1
            && error_code(&body["result"]).as_deref() == Some("MCP_DEPENDENCY_UNAVAILABLE")
    };
    tools.set(Mode::Stall);
    let took = known_down(|| list(url.clone(), token.clone()), tools_down).await;
    assert!(median(took.clone()) < FAST, "a hung tool-service: {took:?}");
    tools.set(Mode::Forward);
    let back = Instant::now();
    until_served(|| list(url.clone(), token.clone())).await;
    assert!(back.elapsed() < RECOVERY, "{:?}", back.elapsed());
    stop.cancel();
    sandbox.shutdown().await;
}

/// A call already waiting on the tool-service when it hangs ends with the
/// typed error as soon as the gateway's breaker sees the hang, not at its
/// deadline (20 s here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_on_a_hung_tool_service_ends_when_its_breaker_opens() {
    const LONG: Duration = Duration::from_secs(20);
    let prefix = prefix();
    let Some((sandbox, _db)) = sandbox_on_redis(&prefix, |_| {}).await else {
        return;
    };
    let tools = Forwarder::start(sandbox.tools_grpc_url.trim_start_matches("http://")).await;
    let (url, stop) = extra_gateway(&sandbox.stack, |config| {
        config.tool_service_url = format!("http://{}", tools.authority());
        config.deadlines.read_ms = LONG.as_millis() as u64;
    })
    .await;
    let token = sandbox.token(USER_MANAGER).await;
    let (status, body) = call_at(&url, &token, "chataigne_organizations_list", json!({})).await;
    assert_eq!((status, error_code(&body["result"])), (200, None), "{body}");

    tools.set(Mode::Stall);
    let started = Instant::now();
    let (status, body) = call_at(&url, &token, "chataigne_organizations_list", json!({})).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        error_code(&body["result"]).as_deref(),
        Some("MCP_DEPENDENCY_UNAVAILABLE"),
        "{body}"
    );
    // The hang is known within a second (two probes timing out back to
    // back): the waiting call ends then, far from its 20 s deadline.
    assert!(took < HANG_KNOWN, "ended after {took:?}");
    tools.set(Mode::Forward);
    stop.cancel();
    sandbox.shutdown().await;
}

/// A request whose token check is already waiting on the auth-service when
/// it hangs ends with the dependency error as soon as the gateway's breaker
/// sees the hang, not at the check's deadline (20 s here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_check_waiting_on_a_hung_auth_service_ends_when_its_breaker_opens() {
    const LONG: Duration = Duration::from_secs(20);
    let prefix = prefix();
    let Some((sandbox, _db)) = sandbox_on_redis(&prefix, |_| {}).await else {
        return;
    };
    let auth = Forwarder::start(sandbox.auth_grpc_url.trim_start_matches("http://")).await;
    let (url, stop) = extra_gateway(&sandbox.stack, |config| {
        config.auth_service_url = format!("http://{}", auth.authority());
        config.deadlines.auth_ms = LONG.as_millis() as u64;
    })
    .await;
    let token = sandbox.token(USER_MANAGER).await;
    let (status, body) = call_at(&url, &token, "chataigne_organizations_list", json!({})).await;
    assert_eq!((status, error_code(&body["result"])), (200, None), "{body}");

    auth.set(Mode::Stall);
    let started = Instant::now();
    let (status, body) = call_at(&url, &token, "chataigne_organizations_list", json!({})).await;
    let took = started.elapsed();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body["error"]["data"]["code"], "MCP_DEPENDENCY_UNAVAILABLE",
        "{body}"
    );
    // The hang is known within a second (two probes timing out back to
    // back): the waiting check ends then, far from its 20 s deadline.
    assert!(took < HANG_KNOWN, "ended after {took:?}");
    auth.set(Mode::Forward);
    stop.cancel();
    sandbox.shutdown().await;
}

/// A hung dependency is known within a second
/// (`chataigne_common::breaker::DETECTS_HANG_WITHIN`, 950 ms), plus a small
/// margin for the answer to travel on a loaded machine.
const HANG_KNOWN: Duration = Duration::from_millis(1_250);

/// The auth and read deadlines of the outage test's extra gateway: until a
/// hang is known, calls wait this long.
const DEADLINE: Duration = Duration::from_secs(2);
/// A call refused because its dependency is known down ends well before
/// any deadline it could have waited out (2 s or more here): this bound is
/// ten times the ~100 ms such a refusal takes, so only a call that waited
/// fails it (asserted on the median of several calls).
const FAST: Duration = Duration::from_secs(1);
/// Service resumes without a restart: the health probe (every 250 ms) sees
/// the dependency back, so within this (generous, ~10x) bound of it answering.
const RECOVERY: Duration = Duration::from_secs(3);

fn median(mut took: Vec<Duration>) -> Duration {
    took.sort();
    took[took.len() / 2]
}

/// Calls `call` until it answers 200 with a body `down` accepts within
/// [`FAST`] (the dependency is known down; 20 s bound), then 5 more times,
/// each answering so; their latencies.
async fn known_down<F, Fut>(call: F, down: impl Fn(&Value) -> bool) -> Vec<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = (u16, Value)>,
{
    known_down_when(call, |(status, body): &(u16, Value)| {
        *status == 200 && down(body)
    })
    .await
}

/// [`known_down`] for any kind of answer: `down` says which answers are
/// the refusal of a dependency known down.
async fn known_down_when<F, Fut, T>(mut call: F, down: impl Fn(&T) -> bool) -> Vec<Duration>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
    T: std::fmt::Debug,
{
    let down = &down;
    let every = Duration::from_millis(50);
    eventually_every("calls fail fast", Duration::from_secs(20), every, || {
        let started = Instant::now();
        let answer = call();
        async move { down(&answer.await) && started.elapsed() < FAST }
    })
    .await;
    let mut took = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let answer = call().await;
        took.push(started.elapsed());
        assert!(down(&answer), "{answer:?}");
    }
    took
}

/// Calls `call` until it succeeds (10 s bound).
async fn until_served<F, Fut>(mut call: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = (u16, Value)>,
{
    let every = Duration::from_millis(20);
    eventually_every("served again", Duration::from_secs(10), every, || {
        let answer = call();
        async move {
            let (status, body) = answer.await;
            status == 200 && body["result"].is_object() && error_code(&body["result"]).is_none()
        }
    })
    .await;
}

/// The overall `grpc.health.v1` status of the backend at `url`.
async fn overall_health(url: &str) -> Option<i32> {
    let channel = tonic::transport::Endpoint::from_shared(url.to_owned())
        .ok()?
        .connect()
        .await
        .ok()?;
    let answer = HealthClient::new(channel)
        .check(HealthCheckRequest {
            service: String::new(),
        })
        .await
        .ok()?;
    Some(answer.into_inner().status)
}

/// The gateway's `/readyz`: status and body.
async fn readiness(sandbox: &Sandbox) -> (u16, Value) {
    let response = reqwest::get(format!("{}/readyz", sandbox.gateway_internal_url))
        .await
        .expect("internal listener");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

async fn scrape(url: &str) -> String {
    reqwest::get(url)
        .await
        .expect("metrics reachable")
        .text()
        .await
        .expect("metrics text")
}

/// The names `tools/list` shows `token`.
async fn listed(sandbox: &Sandbox, token: &str) -> Vec<String> {
    let (status, body) = sandbox
        .mcp(
            token,
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a listing: {body}"))
        .iter()
        .filter_map(|tool| tool["name"].as_str().map(str::to_owned))
        .collect()
}

/// Sets the operator's write switch straight in the database `url`.
async fn set_writes(url: &str, enabled: bool) {
    let pool = sqlx::PgPool::connect(url).await.expect("tools database");
    sqlx::query(
        "INSERT INTO operator_flags (name, enabled, reason, changed_at_ms) \
         VALUES ('writes', $1, NULL, 0) \
         ON CONFLICT (name) DO UPDATE SET enabled = excluded.enabled",
    )
    .bind(enabled)
    .execute(&pool)
    .await
    .expect("switch set");
    pool.close().await;
}

/// PostgreSQL goes away under the tool-service (`outage`: cut, or hung with
/// its connections open and silent): its health turns
/// NOT_SERVING, the gateway's readiness and dependency gauges say so, and
/// every call (read or write, on both profiles) is refused within 100 ms
/// with the dependency error to the request's id, not after a pool
/// timeout; the catalogue keeps listing the write tools (the last known
/// switch) through the failed refreshes; within a second of the database's
/// return calls are served, and the catalogue is refreshed at once (a
/// switch turned off meanwhile hides the write tools).
async fn postgres_known_down(outage: Mode) {
    let prefix = prefix();
    let Some((sandbox, proxy, db)) = sandbox_behind_proxy(&prefix, Database::Tools, |config| {
        config.gateway.tool_catalog_ttl_secs = 1;
        with_google_endpoint(config);
    })
    .await
    else {
        return;
    };
    let conversation = first_conversation(&db, ORG_BISTRO).await;
    let token = sandbox.token(USER_MANAGER).await;
    let (google_url, google_token) = google_endpoint(&sandbox).await;
    let assertion = typed_rpc::assertion(&sandbox, &token).await;
    let url = sandbox.mcp_url.clone();
    let before = staff_messages(&db, &conversation).await;
    assert!(listed(&sandbox, &token).await.iter().any(|t| t == SEND));
    assert_eq!(readiness(&sandbox).await.0, 200);

    proxy.set(outage);
    eventually(
        "the tool-service reports its database down",
        Duration::from_secs(10),
        || async {
            overall_health(&sandbox.tools_grpc_url).await == Some(ServingStatus::NotServing as i32)
        },
    )
    .await;
    eventually(
        "the gateway reports the tool-service unready",
        Duration::from_secs(10),
        || async {
            let (status, body) = readiness(&sandbox).await;
            status == 503 && body["tool_service"] == false && body["auth_service"] == true
        },
    )
    .await;
    // The breaker opens at its second failed probe, soon after.
    let gateway_metrics = format!("{}/metrics", sandbox.gateway_internal_url);
    eventually(
        "the gauges show the tool-service down and the auth-service up",
        Duration::from_secs(5),
        || async {
            let scraped = scrape(&gateway_metrics).await;
            scraped.contains("chataigne_gateway_dependency_up{dependency=\"tool_service\"} 0")
                && scraped
                    .contains("chataigne_gateway_dependency_up{dependency=\"auth_service\"} 1")
        },
    )
    .await;
    let tools_metrics = scrape(&sandbox.tools_metrics_url).await;
    assert!(
        tools_metrics.contains("chataigne_tools_dependency_up{dependency=\"database\"} 0"),
        "{tools_metrics}"
    );

    // Direct gRPC callers of the tool-service are refused at once too.
    let channel = tonic::transport::Endpoint::from_shared(sandbox.tools_grpc_url.clone())
        .expect("URL")
        .connect()
        .await
        .expect("tool-service reachable");
    let mut direct = ToolCatalogClient::new(channel);
    let mut took = Vec::new();
    for _ in 0..5 {
        let mut request = tonic::Request::new(CallToolRequest {
            name: "chataigne_organizations_list".to_owned(),
            arguments_json: "{}".to_owned(),
            ..Default::default()
        });
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {assertion}").parse().expect("ascii"),
        );
        let started = Instant::now();
        let refused = direct.call_tool(request).await.expect_err("refused");
        took.push(started.elapsed());
        assert_eq!(
            decode_status(&refused).code,
            ErrorCode::DependencyUnavailable,
            "{refused:?}"
        );
    }
    assert!(median(took.clone()) < FAST, "direct gRPC: {took:?}");

    let mut took = Vec::new();
    for n in 0..5 {
        let started = Instant::now();
        let (status, body) = call_at(&url, &token, "chataigne_organizations_list", json!({})).await;
        took.push(started.elapsed());
        assert_eq!((status, &body["id"]), (200, &json!(1)), "{body}");
        assert_eq!(
            error_code(&body["result"]).as_deref(),
            Some("MCP_DEPENDENCY_UNAVAILABLE"),
            "{body}"
        );
        let write = json!({"conversation_id": conversation, "text": "Pendant la panne.",
                           "idempotency_key": format!("pg-down-{n:04}-nnnn")});
        let started = Instant::now();
        let (status, body) = call_at(&url, &token, SEND, write).await;
        took.push(started.elapsed());
        assert_eq!((status, &body["id"]), (200, &json!(1)), "{body}");
        assert_eq!(
            error_code(&body["result"]).as_deref(),
            Some("MCP_DEPENDENCY_UNAVAILABLE"),
            "{body}"
        );
        let started = Instant::now();
        let (status, body) = call_at(
            &google_url,
            &google_token,
            "chataigne_organizations_list",
            json!({}),
        )
        .await;
        took.push(started.elapsed());
        assert_eq!((status, &body["id"]), (200, &json!(1)), "{body}");
        assert_eq!(body["error"]["code"], -32502, "google profile: {body}");
    }
    assert!(median(took.clone()) < FAST, "{took:?}");

    // Past the catalogue's TTL, the write tools are still listed (the
    // behaviour under test: the TTL passing on the gateway's own clock).
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    assert!(
        listed(&sandbox, &token).await.iter().any(|t| t == SEND),
        "the last known write switch stands"
    );
    // Meanwhile the operator switches writes off.
    set_writes(&db, false).await;

    proxy.set(Mode::Forward);
    let back = Instant::now();
    until_served(|| call_at(&url, &token, "chataigne_organizations_list", json!({}))).await;
    assert!(
        back.elapsed() < RECOVERY,
        "served again {:?} after the database returned",
        back.elapsed()
    );
    assert!(
        !listed(&sandbox, &token).await.iter().any(|t| t == SEND),
        "the catalogue is refreshed as soon as the tool-service answers"
    );
    assert!(
        back.elapsed() < RECOVERY,
        "refreshed {:?} after the database returned",
        back.elapsed()
    );
    eventually("ready again", Duration::from_secs(2), || async {
        readiness(&sandbox).await.0 == 200
    })
    .await;
    assert_eq!(
        staff_messages(&db, &conversation).await,
        before,
        "no write refused during the outage happened"
    );
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_cut_fails_fast_reports_unready_and_recovers_without_a_restart() {
    postgres_known_down(Mode::Cut).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_hung_fails_fast_reports_unready_and_recovers_without_a_restart() {
    postgres_known_down(Mode::Stall).await;
}

/// Path of the Connected Apps (google profile) endpoint added for the test.
const GOOGLE_PATH: &str = "/mcp/google";

/// Adds the Connected Apps endpoint at [`GOOGLE_PATH`].
fn with_google_endpoint(config: &mut chataigne::StackConfig) {
    config
        .gateway
        .endpoints
        .push(chataigne_gateway::EndpointConfig {
            path: GOOGLE_PATH.to_owned(),
            profile: chataigne_gateway::Profile::Google,
            hosts: Vec::new(),
            public_url: None,
            ..Default::default()
        });
}

/// The URL of the Connected Apps endpoint and a manager's token for it.
async fn google_endpoint(sandbox: &Sandbox) -> (String, String) {
    let google_url = format!("{}{GOOGLE_PATH}", sandbox.gateway_url);
    let token = sandbox
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
    (google_url, token)
}

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
    eventually_some_every(
        &format!("{name} succeeds again"),
        Duration::from_secs(15),
        CALLS_EVERY,
        || async {
            let (status, body) = call_at(url, token, name, arguments.clone()).await;
            (status == 200 && body["result"].is_object() && error_code(&body["result"]).is_none())
                .then(|| body["result"].clone())
        },
    )
    .await
}

/// The tool-service really stopped (its `serve` shut down, its port closed)
/// then started again on the same address: while it is down, calls are
/// answered at once with the dependency error of each profile; once it is
/// back the same gateway serves again without a restart; writes attempted
/// before, during and across the outage each happen exactly once.
async fn tool_service_stopped_then_restarted(backend: Backend) {
    let Some(sandbox) = Sandbox::start_with(backend, with_google_endpoint).await else {
        assert!(!chataigne_tests::in_ci(), "PostgreSQL is required in CI");
        return;
    };
    let url = sandbox.mcp_url.clone();
    let (google_url, google_token) = google_endpoint(&sandbox).await;
    let token = sandbox.token(USER_MANAGER).await;
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
        // Refused, not waited on: far inside the 15 s read deadline.
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

/// PostgreSQL goes away under the auth-service: its health turns
/// NOT_SERVING (liveness stays SERVING), the gateway reports it unready and
/// refuses every call within 100 ms with the dependency error to the
/// request's id (not after the pool's timeout); within a second of the
/// database's return calls are served again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auth_database_down_is_reported_and_refused_at_once_then_recovers() {
    let prefix = prefix();
    let Some((sandbox, proxy, _db)) = sandbox_behind_proxy(&prefix, Database::Auth, |_| {}).await
    else {
        return;
    };
    let token = sandbox.token(USER_MANAGER).await;
    let url = sandbox.mcp_url.clone();
    let list = || call_at(&url, &token, "chataigne_organizations_list", json!({}));
    until_served(list).await;

    proxy.set(Mode::Cut);
    eventually(
        "the auth-service reports its database down",
        Duration::from_secs(10),
        || async {
            overall_health(&sandbox.auth_grpc_url).await == Some(ServingStatus::NotServing as i32)
        },
    )
    .await;
    let liveness = async {
        let channel = tonic::transport::Endpoint::from_shared(sandbox.auth_grpc_url.clone())
            .expect("URL")
            .connect()
            .await
            .expect("auth-service reachable");
        HealthClient::new(channel)
            .check(HealthCheckRequest {
                service: "liveness".to_owned(),
            })
            .await
            .expect("liveness answers")
            .into_inner()
            .status
    };
    assert_eq!(liveness.await, ServingStatus::Serving as i32);
    eventually(
        "the gateway reports the auth-service unready",
        Duration::from_secs(10),
        || async {
            let (status, body) = readiness(&sandbox).await;
            status == 503 && body["auth_service"] == false
        },
    )
    .await;
    let down = |body: &Value| {
        body["id"] == 1 && body["error"]["data"]["code"] == "MCP_DEPENDENCY_UNAVAILABLE"
    };
    let took = known_down(list, down).await;
    assert!(median(took.clone()) < FAST, "{took:?}");

    proxy.set(Mode::Forward);
    let back = Instant::now();
    until_served(list).await;
    assert!(
        back.elapsed() < RECOVERY,
        "served again {:?} after the database returned",
        back.elapsed()
    );
    sandbox.shutdown().await;
}

/// A typed caller the tool-service cannot decide locally (a service account's
/// token) needs the auth-service on every call. Once the tool-service's
/// breaker knows the auth-service hung, such calls fail at once with the
/// dependency error (not at their deadline) and the tool-service's gauge
/// says so; as soon as the auth-service answers again they are served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_auth_service_fails_typed_callers_at_once_then_recovers() {
    let mut tools = None;
    let sandbox = Sandbox::start_with(Backend::Sqlite, |config| {
        tools = Some(config.tools.clone());
    })
    .await
    .expect("sqlite sandbox");
    let (client_id, secret) = sandbox
        .service_account(
            "outage-reporting",
            "orders.read location.read",
            ORG_BISTRO,
            "analyst",
        )
        .await;
    let token = sandbox.client_credentials_token(&client_id, &secret).await;
    // A second tool-service on the same database, reaching the auth-service
    // through a forwarder the test controls.
    let auth = Forwarder::start(sandbox.auth_grpc_url.trim_start_matches("http://")).await;
    let mut config = tools.expect("configuration captured");
    config.auth_service_url = format!("http://{}", auth.authority());
    let second = ExtraToolService::start(config).await;
    let (tools_url, metrics_url) = (&second.url, &second.metrics_url);
    let list = || list_orders_typed(tools_url, &token);
    list().await.expect("served while the auth-service answers");
    let gauge =
        |up: u8| format!("chataigne_tools_dependency_up{{dependency=\"auth_service\"}} {up}");
    assert!(scrape(metrics_url).await.contains(&gauge(1)));

    auth.set(Mode::Stall);
    let down =
        |answer: &Result<(), tonic::Status>| answer.as_ref().is_err_and(dependency_unavailable);
    let took = known_down_when(list, down).await;
    assert!(median(took.clone()) < FAST, "a hung auth-service: {took:?}");
    assert!(scrape(metrics_url).await.contains(&gauge(0)));

    auth.set(Mode::Forward);
    let every = Duration::from_millis(50);
    eventually_every("served again", RECOVERY, every, || async {
        list().await.is_ok()
    })
    .await;
    assert!(scrape(metrics_url).await.contains(&gauge(1)));
    second.stop.cancel();
    sandbox.shutdown().await;
}

/// `ListOrders` on the typed API at `url` with `credential`, under the
/// deadline a hang would be waited out to.
async fn list_orders_typed(url: &str, credential: &str) -> Result<(), tonic::Status> {
    use chataigne_proto::tools::v1::{
        ListOrdersRequest, Page, restaurant_client::RestaurantClient,
    };
    let mut client = RestaurantClient::connect(url.to_owned())
        .await
        .expect("tool-service reachable");
    let mut request = tonic::Request::new(ListOrdersRequest {
        location_id: LOC_PARIS.to_owned(),
        page: Some(Page {
            limit: 5,
            cursor: String::new(),
        }),
        ..ListOrdersRequest::default()
    });
    request.set_timeout(DEADLINE);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {credential}").parse().expect("ascii"),
    );
    client.list_orders(request).await.map(drop)
}

fn dependency_unavailable(status: &tonic::Status) -> bool {
    decode_status(status).code == ErrorCode::DependencyUnavailable
}

/// Calls already waiting for a pooled connection when PostgreSQL hangs
/// (connections open, nothing answered) end as soon as the tool-service's
/// health probe finds the database down, with `MCP_DEPENDENCY_UNAVAILABLE`
/// and a retry hint, instead of waiting out the pool's acquire timeout
/// (3 s) or their deadline (20 s here).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_waiting_for_a_pooled_connection_end_when_postgres_is_found_hung() {
    const LONG: Duration = Duration::from_secs(20);
    let prefix = prefix();
    let Some((sandbox, proxy, _db)) = sandbox_behind_proxy(&prefix, Database::Tools, |_| {}).await
    else {
        return;
    };
    let token = sandbox.token(USER_MANAGER).await;
    let mut assertions = Vec::new();
    for _ in 0..3 {
        assertions.push(typed_rpc::assertion(&sandbox, &token).await);
    }
    let channel = tonic::transport::Endpoint::from_shared(sandbox.tools_grpc_url.clone())
        .expect("URL")
        .connect()
        .await
        .expect("tool-service reachable");
    assert_eq!(
        overall_health(&sandbox.tools_grpc_url).await,
        Some(ServingStatus::Serving as i32)
    );

    proxy.set(Mode::Stall);
    let calls: Vec<_> = assertions
        .into_iter()
        .map(|assertion| {
            let mut direct = ToolCatalogClient::new(channel.clone());
            tokio::spawn(async move {
                let mut request = tonic::Request::new(CallToolRequest {
                    name: "chataigne_organizations_list".to_owned(),
                    arguments_json: "{}".to_owned(),
                    ..Default::default()
                });
                request.set_timeout(LONG);
                request.metadata_mut().insert(
                    "authorization",
                    format!("Bearer {assertion}").parse().expect("ascii"),
                );
                let answer = direct.call_tool(request).await;
                (answer.map(|_| ()), Instant::now())
            })
        })
        .collect();
    let stalled = Instant::now();
    let url = sandbox.tools_grpc_url.clone();
    chataigne_common::testing::eventually(
        "the database found down",
        Duration::from_secs(10),
        || {
            let url = url.clone();
            async move { overall_health(&url).await == Some(ServingStatus::NotServing as i32) }
        },
    )
    .await;
    let found_down = Instant::now();
    for call in calls {
        let (answer, ended) = call.await.expect("call task");
        let refused = answer.expect_err("the database is hung");
        let decoded = decode_status(&refused);
        assert_eq!(
            decoded.code,
            ErrorCode::DependencyUnavailable,
            "{refused:?}"
        );
        assert!(
            decoded.retry_after.is_some(),
            "with a retry hint: {refused:?}"
        );
        // Released when the database was found down (the health status
        // follows the same probe verdict), not at the pool's timeout.
        assert!(
            ended < found_down + Duration::from_millis(100),
            "ended {:?} after the stall, the database found down after {:?}",
            ended - stalled,
            found_down - stalled
        );
    }
    proxy.set(Mode::Forward);
    sandbox.shutdown().await;
}
