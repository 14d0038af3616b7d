//! Errors reported to Sentry with privacy intact: a Sentry-compatible
//! endpoint started by the test on port 0 receives the envelopes of the
//! whole stack (error reporting started as the services start it, the
//! services' telemetry layers), while calls carry privacy canaries in every
//! argument, cursor, idempotency key and bearer token, and a stored settings
//! document is corrupted with a canary inside, so that reading it is an
//! internal error whose detail holds the canary. The forced internal error
//! arrives, tagged with the call's request id, trace id, release and
//! environment; no canary is in any envelope.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use chataigne_common::error_reporting::{self, SentryConfig};
use chataigne_common::testing::eventually_some;
use chataigne_tests::{Backend, Sandbox, demo};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::SdkTracerProvider;
use secrecy::{ExposeSecret, SecretString};
use serde_json::{Map, Value, json};
use tracing_subscriber::prelude::*;

/// What the fake Sentry received: project, auth header, envelope body.
#[derive(Clone, Default)]
struct Received(Arc<Mutex<Vec<(String, String, String)>>>);

impl Received {
    fn all(&self) -> Vec<(String, String, String)> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

async fn envelope(
    State(received): State<Received>,
    Path(project): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> &'static str {
    let auth = headers
        .get("x-sentry-auth")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    received.0.lock().unwrap_or_else(|e| e.into_inner()).push((
        project,
        auth,
        String::from_utf8_lossy(&body).into_owned(),
    ));
    "{}"
}

/// A Sentry-compatible envelope endpoint on a free port: its address.
async fn fake_sentry(received: Received) -> std::net::SocketAddr {
    let app = axum::Router::new()
        .route("/api/{project}/envelope/", axum::routing::post(envelope))
        .with_state(received);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

/// The events (JSON objects with an `event_id` and a `timestamp`, unlike
/// the envelope's header) of an envelope body.
fn events(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|item| item.get("event_id").is_some() && item.get("timestamp").is_some())
        .collect()
}

struct Canaries(Vec<String>);

impl Canaries {
    fn new_one(&mut self) -> String {
        let value = format!("CNRY{}Z", uuid::Uuid::new_v4().simple());
        self.0.push(value.clone());
        value
    }
}

/// Posts `message` to the gateway: (HTTP status, body, `x-request-id`).
async fn mcp(url: &str, token: &str, message: Value) -> (u16, Value, String) {
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&message)
        .send()
        .await
        .expect("gateway reachable");
    let status = response.status().as_u16();
    let request_id = response
        .headers()
        .get("x-request-id")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = response.json().await.unwrap_or(Value::Null);
    (status, body, request_id)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_reach_sentry_with_their_request_id_and_no_canary_ever_does() {
    let received = Received::default();
    let sentry = fake_sentry(received.clone()).await;
    let config = SentryConfig {
        dsn: Some(SecretString::from(format!(
            "http://publickey@{sentry}/4242"
        ))),
        environment: "canary-test".to_owned(),
    };
    let reporting = error_reporting::start("stack", &config).expect("reporting starts");
    assert!(reporting.is_enabled());
    let provider = SdkTracerProvider::builder().build();
    tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("reporting")))
        .with(error_reporting::layer())
        .try_init()
        .expect("the only subscriber of this test process");

    let tools_db = Arc::new(Mutex::new(String::new()));
    let keep = tools_db.clone();
    let sandbox = Sandbox::start_with(Backend::Sqlite, move |config| {
        *keep.lock().unwrap_or_else(|e| e.into_inner()) =
            config.tools.database.url.expose_secret().to_owned();
    })
    .await
    .expect("sandbox");
    let scopes: Vec<&str> = chataigne_common::scopes::all().collect();
    let admin = sandbox.token_with(demo::USER_ADMIN, &scopes).await;
    let mut canaries = Canaries(Vec::new());

    // Every tool with a canary in every string argument (and a cursor and
    // an idempotency key of canaries).
    let (status, listed, _) = mcp(
        &sandbox.mcp_url,
        &admin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    )
    .await;
    assert_eq!(status, 200, "{listed}");
    let tools = listed["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(tools.len() >= 20, "{listed}");
    for tool in &tools {
        let mut arguments = Map::new();
        if let Some(properties) = tool["inputSchema"]["properties"].as_object() {
            for name in properties.keys() {
                arguments.insert(name.clone(), json!(canaries.new_one()));
            }
        }
        arguments.insert("cursor".into(), json!(canaries.new_one()));
        arguments.insert("idempotency_key".into(), json!(canaries.new_one()));
        mcp(
            &sandbox.mcp_url,
            &admin,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": tool["name"], "arguments": arguments}}),
        )
        .await;
    }
    // A canary bearer token and a canary tool name.
    let bad_token = canaries.new_one();
    mcp(
        &sandbox.mcp_url,
        &bad_token,
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list"}),
    )
    .await;
    let bad_tool = canaries.new_one();
    mcp(
        &sandbox.mcp_url,
        &admin,
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
               "params": {"name": bad_tool, "arguments": {}}}),
    )
    .await;

    // The forced internal error: a stored document that no longer parses,
    // holding a canary the parser's message quotes.
    let stored = canaries.new_one();
    let url = tools_db.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let pool = sqlx::SqlitePool::connect(&url)
        .await
        .expect("tools database");
    let corrupted = sqlx::query("UPDATE location_settings SET body = ? WHERE location_id = ?")
        .bind(format!("\"{stored}\""))
        .bind(demo::LOC_PARIS)
        .execute(&pool)
        .await
        .expect("corrupt the settings")
        .rows_affected();
    assert!(corrupted > 0, "the demo location has settings");
    let (status, body, request_id) = mcp(
        &sandbox.mcp_url,
        &admin,
        json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
               "params": {"name": "chataigne_location_settings_get",
                          "arguments": {"location_id": demo::LOC_PARIS,
                                        "sections": ["store"]}}}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body.to_string().contains("MCP_INTERNAL_ERROR"),
        "the call failed as an internal error: {body}"
    );
    assert!(request_id.starts_with("req_"), "{request_id}");

    // The report arrives (delivery is asynchronous: flushed, then polled).
    let report = eventually_some(
        &format!("a report of {request_id}"),
        Duration::from_secs(10),
        || async {
            reporting.flush(Duration::from_secs(2));
            received
                .all()
                .into_iter()
                .find_map(|(project, auth, body)| {
                    events(&body)
                        .into_iter()
                        .find(|event| event["tags"]["request_id"] == request_id.as_str())
                        .map(|event| (project, auth, event))
                })
        },
    )
    .await;
    let (project, auth, event) = report;
    assert_eq!(project, "4242");
    assert!(auth.contains("sentry_key=publickey"), "{auth}");
    // `error` is the protocol's default level, left out of the payload.
    assert!(
        event.get("level").is_none_or(|level| level == "error"),
        "{event}"
    );
    assert_eq!(event["message"], "internal error", "{event}");
    assert_eq!(event["environment"], "canary-test", "{event}");
    assert_eq!(
        event["release"],
        error_reporting::release().as_str(),
        "{event}"
    );
    assert_eq!(event["tags"]["service"], "stack", "{event}");
    let trace_id = event["tags"]["trace_id"].as_str().unwrap_or_default();
    assert_eq!(trace_id.len(), 32, "{event}");
    assert_eq!(event["contexts"]["trace"]["trace_id"], trace_id, "{event}");
    assert!(
        event.get("request").is_none() && event.get("user").is_none(),
        "{event}"
    );

    // No canary in any envelope: arguments, cursors, idempotency keys, the
    // bearer token, the tool name, the corrupted document.
    let everything = received.all();
    assert!(!everything.is_empty());
    for (_, auth, body) in &everything {
        for canary in &canaries.0 {
            assert!(
                !body.contains(canary.as_str()) && !auth.contains(canary.as_str()),
                "canary {canary} left in {body}"
            );
        }
    }
    sandbox.shutdown().await;
}
