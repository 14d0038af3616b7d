//! Shared-store helpers of the cross-service tests: the gateway configured
//! on the real Redis under a key prefix of its own (tests run in parallel
//! against one server), and direct access to that Redis.

use crate::envelope;
use std::time::Duration;

use chataigne::StackConfig;
use secrecy::SecretString;

pub use chataigne_common::testing::redis_url;

/// A fresh key prefix for one test.
pub fn prefix() -> String {
    format!("t{}", uuid::Uuid::new_v4().simple())
}

/// Points the gateway of `config` at Redis `url` under `prefix`.
pub fn use_redis(config: &mut StackConfig, url: &str, prefix: &str) {
    config.gateway.redis.url = Some(SecretString::from(url.to_owned()));
    config.gateway.redis.key_prefix = prefix.to_owned();
    config.tools.idempotency.secret = Some(SecretString::from(format!(
        "{prefix}-tools-secret-0123456789abcdef"
    )));
}

/// A connection to the test Redis; panics when it is unreachable (tests on
/// Redis are not skipped).
pub async fn redis() -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(redis_url()).expect("redis url");
    tokio::time::timeout(
        Duration::from_secs(5),
        client.get_multiplexed_async_connection(),
    )
    .await
    .expect("redis answers in time")
    .expect("redis reachable at the test URL")
}

/// Deletes every key under `prefix:kind:`; returns how many.
pub async fn delete_keys(prefix: &str, kind: &str) -> usize {
    let mut connection = redis().await;
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{prefix}:{kind}:*"))
        .query_async(&mut connection)
        .await
        .expect("KEYS");
    for key in &keys {
        let _: i64 = redis::cmd("DEL")
            .arg(key)
            .query_async(&mut connection)
            .await
            .expect("DEL");
    }
    keys.len()
}

/// `host:port` of a `redis://host:port` URL.
pub fn redis_authority() -> String {
    redis_url()
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .to_owned()
}

/// A Postgres sandbox whose gateway uses the real Redis under `prefix`, after
/// `adjust`; with the tool-service database URL. `None` only outside CI when
/// Postgres is unreachable.
pub async fn sandbox_on_redis(
    prefix: &str,
    adjust: impl FnOnce(&mut StackConfig),
) -> Option<(crate::Sandbox, String)> {
    let mut tools_url = String::new();
    let sandbox = crate::Sandbox::start_with(crate::Backend::Postgres, |config| {
        use_redis(config, &redis_url(), prefix);
        // Seeding on a busy machine may take long; per-call bounds are shorter.
        config.tools.database.statement_timeout_ms = 180_000;
        adjust(config);
        tools_url = secrecy::ExposeSecret::expose_secret(&config.tools.database.url).to_owned();
    })
    .await?;
    Some((sandbox, tools_url))
}

/// The PostgreSQL database of one service, as [`sandbox_behind_proxy`] names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Database {
    Tools,
    Auth,
}

/// Like [`sandbox_on_redis`], with the `database` of one service reached
/// through a [`Forwarder`](crate::forwarder::Forwarder) the test controls;
/// returns the sandbox, that forwarder and the URL of the tools database
/// reached directly (the test's own queries do not go through the forwarder).
pub async fn sandbox_behind_proxy(
    prefix: &str,
    database: Database,
    adjust: impl FnOnce(&mut StackConfig),
) -> Option<(crate::Sandbox, crate::forwarder::Forwarder, String)> {
    let authority = postgres_authority();
    let proxy = crate::forwarder::Forwarder::start(&authority).await;
    let proxied = proxy.authority();
    let (sandbox, db) = sandbox_on_redis(prefix, |config| {
        let url = match database {
            Database::Tools => &mut config.tools.database.url,
            Database::Auth => &mut config.auth.database.url,
        };
        let through = secrecy::ExposeSecret::expose_secret(&*url).replacen(&authority, &proxied, 1);
        *url = SecretString::from(through);
        adjust(config);
    })
    .await?;
    Some((sandbox, proxy, db.replacen(&proxied, &authority, 1)))
}

/// One integer from `sql` (a `COUNT(*)` or similar) on database `url`.
pub async fn scalar(url: &str, sql: &str, bind: &str) -> i64 {
    let pool = sqlx::PgPool::connect(url).await.expect("tools database");
    let value: i64 = sqlx::query_scalar(sqlx::AssertSqlSafe(sql.to_owned()))
        .bind(bind.to_owned())
        .fetch_one(&pool)
        .await
        .expect("scalar query");
    pool.close().await;
    value
}

/// The first conversation of `organization_id` in database `url`.
pub async fn first_conversation(url: &str, organization_id: &str) -> String {
    let pool = sqlx::PgPool::connect(url).await.expect("tools database");
    let id: String = sqlx::query_scalar(
        "SELECT id FROM conversations WHERE organization_id = $1 ORDER BY id LIMIT 1",
    )
    .bind(organization_id)
    .fetch_one(&pool)
    .await
    .expect("a seeded conversation");
    pool.close().await;
    id
}

/// Customer messages written by staff in conversation `id`.
pub async fn staff_messages(url: &str, id: &str) -> i64 {
    scalar(
        url,
        "SELECT COUNT(*) FROM conversation_messages WHERE conversation_id = $1 AND sender = 'staff'",
        id,
    )
    .await
}

/// The envelope error code of a `tools/call` result, if it failed.
pub fn error_code(result: &serde_json::Value) -> Option<String> {
    (result["isError"] == true).then(|| {
        envelope(result)["data"]["error"]["code"]
            .as_str()
            .unwrap_or("?")
            .to_owned()
    })
}

/// Calls `attempt` while it answers `MCP_OPERATION_IN_PROGRESS` (5 s
/// bound); the first successful result. Panics on any other error, and
/// with `what` when the operation is still in progress at the bound.
pub async fn retry_while_in_progress<F, Fut>(what: &str, mut attempt: F) -> serde_json::Value
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = serde_json::Value>,
{
    // Each attempt is a tool call, counted against the caller's rate limits.
    let every = Duration::from_millis(250);
    chataigne_common::testing::eventually_some_every(what, Duration::from_secs(5), every, || {
        let result = attempt();
        async move {
            let result = result.await;
            match error_code(&result).as_deref() {
                None => Some(result),
                Some("MCP_OPERATION_IN_PROGRESS") => None,
                Some(other) => panic!("unexpected {other}: {result}"),
            }
        }
    })
    .await
}

/// `meta.replayed` of a successful result.
pub fn replayed(result: &serde_json::Value) -> bool {
    result["structuredContent"]["meta"]["replayed"] == true
}

/// The configuration of a second gateway in front of the same backends as
/// `stack` (same canonical URL, so the same tokens), after `adjust`.
fn extra_gateway_config(
    stack: &chataigne::Stack,
    adjust: impl FnOnce(&mut chataigne_gateway::Config),
) -> chataigne_gateway::Config {
    let mut config = chataigne_gateway::Config {
        allowlist: chataigne_gateway::Allowlist::loopback(),
        public_url: Some(stack.gateway_url.clone()),
        auth_service_url: stack.auth_grpc_url.clone(),
        tool_service_url: stack.tools_grpc_url.clone(),
        authorization_server: Some(stack.auth_http_url.clone()),
        gateway_credential: Some(stack.gateway_credential.clone()),
        ..chataigne_gateway::Config::default()
    };
    adjust(&mut config);
    config
}

/// A second gateway (as [`extra_gateway`]) on a runtime of its own, so that
/// a test can kill it as a crash (`kill -9`) would: every task, connection
/// and in-flight request dies at once and nothing drains.
pub struct CrashableGateway {
    /// Its MCP URL.
    pub url: String,
    runtime: Option<tokio::runtime::Runtime>,
}

impl CrashableGateway {
    pub async fn start(
        stack: &chataigne::Stack,
        adjust: impl FnOnce(&mut chataigne_gateway::Config),
    ) -> CrashableGateway {
        let config = extra_gateway_config(stack, adjust);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("gateway runtime");
        let (bound, url) = tokio::sync::oneshot::channel();
        runtime.spawn(async move {
            // Bound here: listeners belong to the runtime that created them.
            let public = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let internal = tokio::net::TcpListener::bind("127.0.0.1:0")
                .await
                .expect("bind");
            let url = format!("http://{}/mcp/v1", public.local_addr().expect("addr"));
            let _ = bound.send(url);
            let listeners = chataigne_gateway::Listeners { public, internal };
            chataigne_gateway::run(config, listeners, std::future::pending())
                .await
                .expect("crashable gateway runs");
        });
        let url = url.await.expect("crashable gateway bound");
        CrashableGateway {
            url,
            runtime: Some(runtime),
        }
    }

    /// Kills the gateway at once: its runtime and everything on it go.
    pub fn crash(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for CrashableGateway {
    fn drop(&mut self) {
        self.crash();
    }
}

/// A second gateway in front of the same backends as `stack` (same canonical
/// URL, so the same tokens), after `adjust`. Returns its MCP URL and the
/// token that stops it.
pub async fn extra_gateway(
    stack: &chataigne::Stack,
    adjust: impl FnOnce(&mut chataigne_gateway::Config),
) -> (String, tokio_util::sync::CancellationToken) {
    let config = extra_gateway_config(stack, adjust);
    let public = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let internal = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}/mcp/v1", public.local_addr().expect("addr"));
    let stop = tokio_util::sync::CancellationToken::new();
    let signal = stop.clone();
    tokio::spawn(async move {
        let listeners = chataigne_gateway::Listeners { public, internal };
        chataigne_gateway::run(config, listeners, async move { signal.cancelled().await })
            .await
            .expect("extra gateway runs");
    });
    (url, stop)
}

/// A second tool-service built from `config` (its database, secrets and
/// auth-service URL; the demo data is not loaded again), with its `/metrics`.
pub struct ExtraToolService {
    /// Its gRPC URL.
    pub url: String,
    /// Its `/metrics` page.
    pub metrics_url: String,
    /// Stops it.
    pub stop: tokio_util::sync::CancellationToken,
}

impl ExtraToolService {
    pub async fn start(mut config: chataigne_tools::Config) -> ExtraToolService {
        config.seed_demo = false;
        let service = chataigne_tools::ToolService::build(&config)
            .await
            .expect("extra tool-service builds");
        let grpc = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let metrics = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}", grpc.local_addr().expect("addr"));
        let metrics_url = format!("http://{}/metrics", metrics.local_addr().expect("addr"));
        let stop = tokio_util::sync::CancellationToken::new();
        let signal = stop.clone();
        tokio::spawn(async move {
            let listeners = chataigne_tools::Listeners {
                grpc,
                metrics: Some(metrics),
            };
            service
                .serve(listeners, async move { signal.cancelled().await })
                .await
                .expect("extra tool-service serves");
        });
        ExtraToolService {
            url,
            metrics_url,
            stop,
        }
    }
}

/// `tools/call` on the MCP endpoint `url`; returns the HTTP status and body.
pub async fn call_at(
    url: &str,
    token: &str,
    name: &str,
    arguments: serde_json::Value,
) -> (u16, serde_json::Value) {
    let response = reqwest::Client::new()
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(
            &serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                   "params": {"name": name, "arguments": arguments}}),
        )
        .timeout(Duration::from_secs(30))
        .send()
        .await
        .expect("gateway reachable");
    let status = response.status().as_u16();
    (
        status,
        response.json().await.unwrap_or(serde_json::Value::Null),
    )
}

/// `host:port` of the test PostgreSQL server.
pub fn postgres_authority() -> String {
    let url = chataigne_common::testing::postgres_admin_url();
    url.trim_start_matches("postgres://")
        .trim_start_matches("postgresql://")
        .rsplit_once('@')
        .map_or(url.as_str(), |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or("127.0.0.1:5432")
        .to_owned()
}
