//! Exactly-once writes through the whole stack, on PostgreSQL with the real
//! Redis and on SQLite with the embedded in-process stores (no Redis):
//! concurrent duplicates (also spread over a second tool-service replica on
//! the same database, so they race in the database itself), replay after the
//! gateway lost its cache entry (as when a gateway dies between the effect
//! and storing the result), argument mismatch, an operation still in
//! progress, a gateway killed while its write waits in the database (the key
//! is freed at once and the retry runs once), and a stalled Redis.

use chataigne_common::testing::eventually;
use chataigne_tests::envelope;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use chataigne_tests::demo::{ORG_BISTRO, USER_ADMIN, USER_MANAGER};
use chataigne_tests::forwarder::{Forwarder, Mode};
use chataigne_tests::stores::{
    CrashableGateway, ExtraToolService, call_at, delete_keys, error_code, extra_gateway, prefix,
    redis_authority, replayed, retry_while_in_progress, sandbox_on_redis,
};
use chataigne_tests::{Backend, Sandbox};
use secrecy::SecretString;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const SEND: &str = "chataigne_conversation_message_send";
const STAFF_MESSAGES: &str =
    "SELECT COUNT(*) FROM conversation_messages WHERE conversation_id = $1 AND sender = 'staff'";
const OUTBOX: &str = "SELECT COUNT(*) FROM outbound_messages WHERE conversation_id = $1";
const FIRST_CONVERSATION: &str =
    "SELECT id FROM conversations WHERE organization_id = $1 ORDER BY id LIMIT 1";

/// The tool-service's database, read directly by the test.
enum Db {
    Postgres(String),
    Sqlite(String),
}

/// The single value `sql` selects on `db` with `bind`, over a pool opened for
/// the query (either database's driver).
macro_rules! query_one {
    ($db:expr, $sql:expr, $bind:expr) => {
        match $db {
            Db::Postgres(url) => {
                let pool = sqlx::PgPool::connect(url).await.expect("tools database");
                let value = sqlx::query_scalar($sql).bind($bind).fetch_one(&pool).await;
                pool.close().await;
                value
            }
            Db::Sqlite(url) => {
                let pool = sqlx::SqlitePool::connect(url)
                    .await
                    .expect("tools database");
                let value = sqlx::query_scalar($sql).bind($bind).fetch_one(&pool).await;
                pool.close().await;
                value
            }
        }
    };
}

impl Db {
    async fn count(&self, sql: &'static str, bind: &str) -> i64 {
        query_one!(self, sql, bind.to_owned()).expect("scalar query")
    }

    async fn first_conversation(&self, organization_id: &str) -> String {
        query_one!(self, FIRST_CONVERSATION, organization_id).expect("a seeded conversation")
    }

    async fn staff_messages(&self, conversation: &str) -> i64 {
        self.count(STAFF_MESSAGES, conversation).await
    }
}

/// A sandbox with direct access to its tool-service's database and the
/// means to lose the gateway's idempotency cache.
struct Bench {
    sandbox: Sandbox,
    db: Db,
    /// The tool-service's configuration, for replicas on the same database.
    tools: chataigne_tools::Config,
    /// The gateway's Redis key prefix (PostgreSQL runs); `None`: in-process stores.
    redis_prefix: Option<String>,
    stops: Mutex<Vec<CancellationToken>>,
}

impl Bench {
    /// PostgreSQL with the gateway on the real Redis, or SQLite with the
    /// embedded in-process stores. `None` only outside CI without Postgres.
    async fn start(
        backend: Backend,
        adjust: impl FnOnce(&mut chataigne::StackConfig),
    ) -> Option<Bench> {
        let mut tools = None;
        let capture = |config: &mut chataigne::StackConfig| {
            adjust(config);
            tools = Some(config.tools.clone());
        };
        let (sandbox, postgres_url, redis_prefix) = match backend {
            Backend::Postgres => {
                let prefix = prefix();
                let (sandbox, url) = sandbox_on_redis(&prefix, capture).await?;
                (sandbox, Some(url), Some(prefix))
            }
            Backend::Sqlite => {
                let sandbox = Sandbox::start_with(Backend::Sqlite, capture)
                    .await
                    .expect("sqlite sandbox");
                (sandbox, None, None)
            }
        };
        let tools = tools.expect("configuration captured");
        let db = match postgres_url {
            Some(url) => Db::Postgres(url),
            None => Db::Sqlite(tools.database.url().to_owned()),
        };
        Some(Bench {
            sandbox,
            db,
            tools,
            redis_prefix,
            stops: Mutex::default(),
        })
    }

    /// The first Bistro conversation, a manager's token and the conversation's
    /// staff messages before the test writes.
    async fn scene(&self) -> (String, String, i64) {
        let conversation = self.db.first_conversation(ORG_BISTRO).await;
        let token = self.sandbox.token(USER_MANAGER).await;
        let before = self.db.staff_messages(&conversation).await;
        (conversation, token, before)
    }

    fn keep(&self, stop: CancellationToken) {
        self.stops.lock().expect("stops").push(stop);
    }

    /// What the gateway remembered of finished writes is gone, as after a
    /// gateway died between the effect and storing its result: on Redis the
    /// entries are deleted; in-process, the next calls go through a new
    /// gateway (empty memory) in front of the same backends. Returns the MCP
    /// URL to retry on.
    async fn forget(&self) -> String {
        match &self.redis_prefix {
            Some(prefix) => {
                delete_keys(prefix, "idem").await;
                self.sandbox.mcp_url.clone()
            }
            None => {
                let (url, stop) = extra_gateway(&self.sandbox.stack, |_| {}).await;
                self.keep(stop);
                url
            }
        }
    }

    /// A second tool-service on the same database (same idempotency secret)
    /// behind a gateway of its own; returns that gateway's MCP URL.
    async fn replica(&self) -> String {
        let mut config = self.tools.clone();
        config.auth_service_url = self.sandbox.auth_grpc_url.clone();
        let replica = ExtraToolService::start(config).await;
        self.keep(replica.stop);
        let tools_url = replica.url;
        let (url, stop) = extra_gateway(&self.sandbox.stack, |config| {
            config.tool_service_url = tools_url;
        })
        .await;
        self.keep(stop);
        url
    }

    async fn shutdown(self) {
        for stop in self.stops.lock().expect("stops").drain(..) {
            stop.cancel();
        }
        self.sandbox.shutdown().await;
    }
}

/// `tools/call` on the MCP endpoint `url`; the JSON-RPC `result`.
async fn call(url: &str, token: &str, name: &str, arguments: Value) -> Value {
    let (status, body) = call_at(url, token, name, arguments).await;
    assert_eq!(status, 200, "tools/call {name}: {body}");
    body.get("result")
        .cloned()
        .unwrap_or_else(|| panic!("no result for {name}: {body}"))
}

fn in_progress_is_retryable(result: &Value) {
    let error = &envelope(result)["data"]["error"];
    assert!(
        error["retry_after_ms"].as_u64().is_some_and(|ms| ms > 0),
        "{error}"
    );
    assert_eq!(error["retryable"], true, "{error}");
}

async fn concurrent_duplicates(backend: Backend) {
    let Some(bench) = Bench::start(backend, |_| {}).await else {
        return;
    };
    let (sandbox, db) = (&bench.sandbox, &bench.db);
    let (conversation, token, before) = bench.scene().await;
    let replica = bench.replica().await;
    let urls = [sandbox.mcp_url.clone(), replica.clone()];
    let args = json!({"conversation_id": conversation, "text": "Votre commande arrive dans 10 minutes.",
                      "idempotency_key": "dup-key-0001-aaaa"});
    let calls = (0..16).map(|i| call(&urls[i % 2], &token, SEND, args.clone()));
    let results = futures::future::join_all(calls).await;
    assert_eq!(
        db.staff_messages(&conversation).await,
        before + 1,
        "one effect"
    );
    let fresh: Vec<&Value> = results
        .iter()
        .filter(|r| error_code(r).is_none() && !replayed(r))
        .collect();
    assert_eq!(fresh.len(), 1, "exactly one call did the work: {results:?}");
    let first = fresh[0];
    for result in &results {
        match error_code(result).as_deref() {
            None => assert_eq!(
                result["structuredContent"]["data"], first["structuredContent"]["data"],
                "a replay is the stored result"
            ),
            Some("MCP_OPERATION_IN_PROGRESS") => in_progress_is_retryable(result),
            Some(other) => panic!("unexpected {other}: {result}"),
        }
    }
    for url in &urls {
        let again = call(url, &token, SEND, args.clone()).await;
        assert!(replayed(&again), "{again}");
        assert_eq!(
            again["structuredContent"]["data"], first["structuredContent"]["data"],
            "the replay is the stored result"
        );
    }
    assert_eq!(db.count(OUTBOX, &conversation).await, 1);
    assert_eq!(db.staff_messages(&conversation).await, before + 1);
    bench.shutdown().await;
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 4),
    sqlite: Backend::Sqlite,
    postgres: Some(Backend::Postgres),
    run: |backend| (backend),
    tests: [
        concurrent_duplicates_make_exactly_one_effect_and_replay = concurrent_duplicates,
    ],
}

async fn lost_cache_and_mismatch(backend: Backend) {
    let Some(bench) = Bench::start(backend, |_| {}).await else {
        return;
    };
    let (sandbox, db) = (&bench.sandbox, &bench.db);
    let (conversation, token, before) = bench.scene().await;
    let args = json!({"conversation_id": conversation, "text": "Merci pour votre visite !",
                      "idempotency_key": "crash-key-0002-bbbb"});
    let first = call(&sandbox.mcp_url, &token, SEND, args.clone()).await;
    assert_eq!(error_code(&first), None, "{first}");
    assert!(!replayed(&first));
    if let Some(prefix) = &bench.redis_prefix {
        assert_eq!(
            delete_keys(prefix, "idem").await,
            0,
            "the gateway keeps no idempotency entry: the tool-service's record answers"
        );
    }
    // The gateway "died" after the effect: its cache entry is gone.
    let after_crash = bench.forget().await;
    let retry = call(&after_crash, &token, SEND, args.clone()).await;
    assert!(
        replayed(&retry),
        "answered from the database record: {retry}"
    );
    assert_eq!(
        retry["structuredContent"]["data"],
        first["structuredContent"]["data"]
    );
    assert_eq!(db.staff_messages(&conversation).await, before + 1);

    let mut other = args.clone();
    other["text"] = json!("Un autre message");
    let cached = call(&sandbox.mcp_url, &token, SEND, other.clone()).await;
    assert_eq!(
        error_code(&cached).as_deref(),
        Some("MCP_IDEMPOTENCY_MISMATCH"),
        "{cached}"
    );
    let after_crash = bench.forget().await;
    let from_db = call(&after_crash, &token, SEND, other).await;
    assert_eq!(
        error_code(&from_db).as_deref(),
        Some("MCP_IDEMPOTENCY_MISMATCH"),
        "{from_db}"
    );
    assert_eq!(db.staff_messages(&conversation).await, before + 1);

    // The same key for another tool is another key.
    let instruction = json!({"conversation_id": conversation, "text": "Offrir le dessert.",
                             "idempotency_key": "crash-key-0002-bbbb"});
    let result = call(
        &sandbox.mcp_url,
        &token,
        "chataigne_conversation_instruction_send",
        instruction,
    )
    .await;
    assert_eq!(
        error_code(&result),
        None,
        "keys are scoped by tool: {result}"
    );
    assert_eq!(
        result["structuredContent"]["data"]["message"]["kind"],
        "instruction"
    );
    // And for another user too.
    let owner = sandbox.token(chataigne_tests::demo::USER_OWNER).await;
    let harbor = db
        .first_conversation(chataigne_tests::demo::ORG_HARBOR)
        .await;
    let theirs = json!({"conversation_id": harbor, "text": "Merci pour votre visite !",
                        "idempotency_key": "crash-key-0002-bbbb"});
    let result = call(&sandbox.mcp_url, &owner, SEND, theirs).await;
    assert_eq!(
        error_code(&result),
        None,
        "keys are scoped by user: {result}"
    );
    assert!(!replayed(&result), "{result}");
    bench.shutdown().await;
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Backend::Sqlite,
    postgres: Some(Backend::Postgres),
    run: |backend| (backend),
    tests: [
        a_lost_cache_entry_replays_from_the_database_and_mismatches_stay_refused = lost_cache_and_mismatch,
    ],
}

/// Another connection's transaction holding the lock the first write needs:
/// on PostgreSQL an `ACCESS EXCLUSIVE` lock on the messages table (the first
/// write waits inside its transaction, after claiming its key), on SQLite the
/// database's write lock (the first write waits to begin).
enum Stall {
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
    Sqlite(sqlx::Transaction<'static, sqlx::Sqlite>),
}

impl Stall {
    async fn hold(db: &Db) -> Stall {
        match db {
            Db::Postgres(url) => {
                let pool = sqlx::PgPool::connect(url).await.expect("tools database");
                let mut tx = pool.begin().await.expect("begin");
                sqlx::query("LOCK TABLE conversation_messages IN ACCESS EXCLUSIVE MODE")
                    .execute(&mut *tx)
                    .await
                    .expect("table locked");
                Stall::Postgres(tx)
            }
            Db::Sqlite(url) => {
                let pool = sqlx::SqlitePool::connect(url)
                    .await
                    .expect("tools database");
                let tx = pool
                    .begin_with("BEGIN IMMEDIATE")
                    .await
                    .expect("write lock taken");
                Stall::Sqlite(tx)
            }
        }
    }

    async fn release(self) {
        match self {
            Stall::Postgres(tx) => tx.rollback().await.expect("lock released"),
            Stall::Sqlite(tx) => tx.commit().await.expect("lock released"),
        }
    }
}

async fn duplicate_of_a_running_write(backend: Backend) {
    let Some(bench) = Bench::start(backend, |config| {
        config.gateway.deadlines.write_ms = 20_000;
    })
    .await
    else {
        return;
    };
    let (sandbox, db) = (&bench.sandbox, &bench.db);
    let (conversation, token, before) = bench.scene().await;
    // A second gateway: its duplicate reaches the tool-service while the first runs.
    let (other_gateway, stop) = extra_gateway(&sandbox.stack, |_| {}).await;
    bench.keep(stop);
    let args = json!({"conversation_id": conversation, "text": "Nous avons bien reçu votre demande.",
                      "idempotency_key": "slow-key-0003-cccc"});
    let stall = Stall::hold(db).await;
    let first = call(&sandbox.mcp_url, &token, SEND, args.clone());
    let duplicates = async {
        // Kept: the first call gives no sign, on either backend, of having
        // reached the tool-service; the duplicates must come while it runs.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut duplicates = Vec::new();
        for url in [&sandbox.mcp_url, &other_gateway] {
            let started = Instant::now();
            let result = call(url, &token, SEND, args.clone()).await;
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "answered at once, not after the first: {:?}",
                started.elapsed()
            );
            duplicates.push(result);
        }
        stall.release().await;
        duplicates
    };
    let (first, duplicates) = tokio::join!(first, duplicates);
    for duplicate in &duplicates {
        assert_eq!(
            error_code(duplicate).as_deref(),
            Some("MCP_OPERATION_IN_PROGRESS"),
            "{duplicate}"
        );
        in_progress_is_retryable(duplicate);
    }
    assert_eq!(error_code(&first), None, "{first}");
    assert!(!replayed(&first), "{first}");
    for url in [&sandbox.mcp_url, &other_gateway] {
        let retry = call(url, &token, SEND, args.clone()).await;
        assert!(replayed(&retry), "{retry}");
    }
    assert_eq!(db.staff_messages(&conversation).await, before + 1);
    bench.shutdown().await;
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Backend::Sqlite,
    postgres: Some(Backend::Postgres),
    run: |backend| (backend),
    tests: [
        a_duplicate_of_a_running_write_is_in_progress_then_replays = duplicate_of_a_running_write,
    ],
}

/// Advisory locks held in the tool-service's database (each idempotent write
/// on PostgreSQL holds one on its key for its transaction).
const KEY_LOCKS: &str = "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' \
     AND database = (SELECT oid FROM pg_database WHERE datname = $1)";

/// How many key locks the database `url` holds.
async fn key_locks(url: &str) -> i64 {
    let pool = sqlx::PgPool::connect(url).await.expect("tools database");
    let name: String = sqlx::query_scalar("SELECT current_database()")
        .fetch_one(&pool)
        .await
        .expect("database name");
    let held = sqlx::query_scalar(KEY_LOCKS)
        .bind(name)
        .fetch_one(&pool)
        .await
        .expect("pg_locks");
    pool.close().await;
    held
}

/// The gateway dies (its runtime killed at once, as `kill -9` would) while
/// its write waits on the database (PostgreSQL: inside its transaction,
/// holding the key's lock; SQLite: for the write lock): the tool-service
/// sees its caller gone, drops the call's in-flight entry and (PostgreSQL)
/// cancels the transaction in the database at once, so the key is free
/// again within about a second, not after the write's 20 s deadline; the
/// retry through another gateway then runs afresh, once, without any "in
/// progress" answer.
async fn gateway_crash_mid_write(backend: Backend) {
    let Some(bench) = Bench::start(backend, |config| {
        config.gateway.deadlines.write_ms = 20_000;
    })
    .await
    else {
        assert!(!chataigne_tests::in_ci(), "PostgreSQL is required in CI");
        return;
    };
    let (sandbox, db) = (&bench.sandbox, &bench.db);
    let (conversation, token, before) = bench.scene().await;
    let mut doomed = CrashableGateway::start(&sandbox.stack, |config| {
        config.deadlines.write_ms = 20_000;
    })
    .await;
    let args = json!({"conversation_id": conversation, "text": "Votre livreur est en route.",
                      "idempotency_key": "crash-key-0011-kkkk"});
    let stall = Stall::hold(db).await;
    let in_flight = tokio::spawn({
        let (url, token, args) = (doomed.url.clone(), token.clone(), args.clone());
        async move {
            // Never answered: the gateway dies first.
            let _ = reqwest::Client::new()
                .post(url)
                .bearer_auth(token)
                .header("accept", "application/json, text/event-stream")
                .header("mcp-protocol-version", "2025-11-25")
                .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                              "params": {"name": SEND, "arguments": args}}))
                .send()
                .await;
        }
    });
    match db {
        Db::Postgres(url) => {
            eventually(
                "the write takes its key",
                Duration::from_secs(10),
                || async { key_locks(url).await > 0 },
            )
            .await;
            // Kept: the behaviour under test is that the write keeps waiting.
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert_eq!(key_locks(url).await, 1, "the write waits, holding its key");
            doomed.crash();
            eventually(
                "the key is released after its caller died",
                Duration::from_secs(2),
                || async { key_locks(url).await == 0 },
            )
            .await;
        }
        Db::Sqlite(_) => {
            // The write is waiting for the write lock, its key in flight.
            // Kept: SQLite shows no lock waiter to poll for, before the crash
            // or after it.
            tokio::time::sleep(Duration::from_millis(800)).await;
            doomed.crash();
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
    let _ = in_flight.await;
    stall.release().await;
    assert_eq!(
        db.staff_messages(&conversation).await,
        before,
        "the abandoned write was rolled back"
    );

    let retried = call(&sandbox.mcp_url, &token, SEND, args.clone()).await;
    assert_eq!(
        error_code(&retried),
        None,
        "no in-progress answer: {retried}"
    );
    assert!(!replayed(&retried), "nothing had committed: {retried}");
    let again = call(&sandbox.mcp_url, &token, SEND, args).await;
    assert!(replayed(&again), "{again}");
    assert_eq!(db.staff_messages(&conversation).await, before + 1);
    bench.shutdown().await;
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Backend::Sqlite,
    postgres: Some(Backend::Postgres),
    run: |backend| (backend),
    tests: [
        a_gateway_crash_mid_write_frees_the_key_at_once_and_the_retry_runs_once = gateway_crash_mid_write,
    ],
}

/// Redis stalls (connections open, nothing answered) for the whole run:
/// once its breaker has seen it, calls no longer wait on it (the rate
/// limit fails open at once), and exactly-once holds from the tool-service's
/// record: each key's effect happens once, duplicates are replayed (or, while
/// the first runs, refused for a moment), never a stretch of "in progress";
/// Redis is used again after it answers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_redis_neither_slows_nor_doubles_writes() {
    let proxy = Forwarder::start(&redis_authority()).await;
    let proxied = format!("redis://{}", proxy.authority());
    let Some(bench) = Bench::start(Backend::Postgres, |config| {
        config.gateway.redis.url = Some(SecretString::from(proxied.clone()));
    })
    .await
    else {
        assert!(!chataigne_tests::in_ci(), "PostgreSQL is required in CI");
        return;
    };
    let (sandbox, db) = (&bench.sandbox, &bench.db);
    let (conversation, token, before) = bench.scene().await;
    let readiness = format!("{}/readyz", sandbox.gateway_internal_url);
    let redis_ready = || async {
        let body: Value = reqwest::get(&readiness)
            .await
            .expect("internal listener")
            .json()
            .await
            .expect("readiness body");
        body["redis"].as_bool()
    };
    assert_eq!(redis_ready().await, Some(true));

    proxy.set(Mode::Stall);
    eventually("the stall is noticed", Duration::from_secs(15), || async {
        redis_ready().await == Some(false)
    })
    .await;
    let mut took = Vec::new();
    for n in 0..4 {
        let args = json!({"conversation_id": conversation, "text": format!("Message {n} pendant la panne."),
                          "idempotency_key": format!("stall-key-{n:04}-llll")});
        let started = Instant::now();
        let first = call(&sandbox.mcp_url, &token, SEND, args.clone()).await;
        took.push(started.elapsed());
        assert_eq!(error_code(&first), None, "{first}");
        assert!(!replayed(&first), "{first}");
        let again = call(&sandbox.mcp_url, &token, SEND, args).await;
        assert!(replayed(&again), "{again}");
    }
    took.sort();
    // Without the breaker each call waits on Redis for its timeouts (about
    // half a second with the default connect and response timeouts).
    assert!(
        took[took.len() / 2] < Duration::from_millis(300),
        "calls do not wait on the stalled Redis: {took:?}"
    );
    // A burst of duplicates of one key: one effect; the rest replay, or are
    // refused while the first runs and replay at the next attempt.
    let burst = json!({"conversation_id": conversation, "text": "Tout est prêt.",
                       "idempotency_key": "stall-burst-0005-mmmm"});
    let results = futures::future::join_all(
        (0..6).map(|_| call(&sandbox.mcp_url, &token, SEND, burst.clone())),
    )
    .await;
    let fresh = results
        .iter()
        .filter(|r| error_code(r).is_none() && !replayed(r))
        .count();
    assert_eq!(fresh, 1, "{results:?}");
    for result in &results {
        assert!(
            matches!(
                error_code(result).as_deref(),
                None | Some("MCP_OPERATION_IN_PROGRESS")
            ),
            "{result}"
        );
    }
    let settled = Instant::now();
    let replay = retry_while_in_progress("the burst's key settles", || {
        call(&sandbox.mcp_url, &token, SEND, burst.clone())
    })
    .await;
    assert!(replayed(&replay), "{replay}");
    assert!(
        settled.elapsed() < Duration::from_secs(2),
        "no stretch of in-progress answers: {:?}",
        settled.elapsed()
    );
    assert_eq!(db.staff_messages(&conversation).await, before + 5);

    proxy.set(Mode::Forward);
    eventually("Redis is used again", Duration::from_secs(10), || async {
        redis_ready().await == Some(true)
    })
    .await;
    let replay = call(&sandbox.mcp_url, &token, SEND, burst).await;
    assert!(replayed(&replay), "{replay}");
    assert_eq!(db.staff_messages(&conversation).await, before + 5);
    bench.shutdown().await;
}

async fn creations_once(backend: Backend) {
    let Some(bench) = Bench::start(backend, |_| {}).await else {
        return;
    };
    let (sandbox, db) = (&bench.sandbox, &bench.db);
    let url = sandbox.mcp_url.clone();
    let admin = sandbox
        .token_with(
            USER_ADMIN,
            &["admin.organizations.create", "admin.locations.create"],
        )
        .await;
    let create = json!({"name": "Crêperie du Port", "idempotency_key": "org-key-0004-dddd"});
    let org = call(
        &url,
        &admin,
        "chataigne_organization_create",
        create.clone(),
    )
    .await;
    assert_eq!(error_code(&org), None, "{org}");
    let org_id = org["structuredContent"]["data"]["organization"]["id"]
        .as_str()
        .expect("organization id")
        .to_owned();
    let after_crash = bench.forget().await;
    let again = call(
        &after_crash,
        &admin,
        "chataigne_organization_create",
        create,
    )
    .await;
    assert!(replayed(&again), "{again}");
    assert_eq!(
        again["structuredContent"]["data"],
        org["structuredContent"]["data"]
    );
    assert_eq!(
        db.count(
            "SELECT COUNT(*) FROM organizations WHERE name = $1",
            "Crêperie du Port"
        )
        .await,
        1
    );
    let location = json!({"organization_id": org_id, "name": "Crêperie du Port — Quai", "line1": "1 quai Est",
        "city": "Nantes", "postal_code": "44000", "country": "FR", "timezone": "Europe/Paris",
        "currency": "EUR", "idempotency_key": "loc-key-0005-eeee"});
    let created = call(&url, &admin, "chataigne_location_create", location.clone()).await;
    assert_eq!(error_code(&created), None, "{created}");
    let after_crash = bench.forget().await;
    let again = call(
        &after_crash,
        &admin,
        "chataigne_location_create",
        location.clone(),
    )
    .await;
    assert!(replayed(&again), "{again}");
    let mut renamed = location.clone();
    renamed["name"] = json!("Crêperie du Port — Gare");
    let mismatch = call(&after_crash, &admin, "chataigne_location_create", renamed).await;
    assert_eq!(
        error_code(&mismatch).as_deref(),
        Some("MCP_IDEMPOTENCY_MISMATCH"),
        "{mismatch}"
    );
    assert_eq!(
        db.count(
            "SELECT COUNT(*) FROM locations WHERE organization_id = $1",
            &org_id
        )
        .await,
        1
    );
    let mut unknown = location.clone();
    unknown["organization_id"] = json!("org_doesnotexist");
    unknown["idempotency_key"] = json!("loc-key-0006-ffff");
    let missing = call(&url, &admin, "chataigne_location_create", unknown).await;
    assert_eq!(
        error_code(&missing).as_deref(),
        Some("MCP_RESOURCE_NOT_FOUND"),
        "{missing}"
    );

    // A manager holding the scope but not a platform admin is refused, live.
    let manager = sandbox
        .token_with(USER_MANAGER, &["admin.organizations.create"])
        .await;
    let refused = call(
        &url,
        &manager,
        "chataigne_organization_create",
        json!({"name": "Nope", "idempotency_key": "org-key-0007-gggg"}),
    )
    .await;
    assert_eq!(
        error_code(&refused).as_deref(),
        Some("MCP_RESOURCE_FORBIDDEN"),
        "{refused}"
    );
    let bad_key = call(
        &url,
        &admin,
        "chataigne_organization_create",
        json!({"name": "X", "idempotency_key": "short"}),
    )
    .await;
    assert_eq!(
        error_code(&bad_key).as_deref(),
        Some("MCP_INVALID_ARGUMENTS"),
        "{bad_key}"
    );
    bench.shutdown().await;
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Backend::Sqlite,
    postgres: Some(Backend::Postgres),
    run: |backend| (backend),
    tests: [
        platform_admins_create_organizations_and_locations_once = creations_once,
    ],
}

/// Embedded mode: a write that cannot take SQLite's write lock before its
/// deadline is answered `MCP_OUTCOME_UNKNOWN` in time; the abandoned attempt
/// leaves nothing behind (no effect, no record, no lock), so the retry with
/// the same key does the effect, once, and later writes are not blocked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_write_past_its_deadline_is_unknown_then_happens_once() {
    let deadline = Duration::from_millis(1_500);
    let Some(bench) = Bench::start(Backend::Sqlite, |config| {
        config.gateway.deadlines.write_ms = 1_500;
    })
    .await
    else {
        return;
    };
    let (sandbox, db) = (&bench.sandbox, &bench.db);
    let Db::Sqlite(url) = db else {
        unreachable!("an embedded bench")
    };
    let (conversation, token, before) = bench.scene().await;
    let args = json!({"conversation_id": conversation, "text": "Votre commande part à l'instant.",
                      "idempotency_key": "late-key-0008-hhhh"});

    let pool = sqlx::SqlitePool::connect(url)
        .await
        .expect("tools database");
    let writer = pool
        .begin_with("BEGIN IMMEDIATE")
        .await
        .expect("write lock taken");
    let started = Instant::now();
    let late = call(&sandbox.mcp_url, &token, SEND, args.clone()).await;
    let elapsed = started.elapsed();
    assert_eq!(
        error_code(&late).as_deref(),
        Some("MCP_OUTCOME_UNKNOWN"),
        "{late}"
    );
    assert!(
        elapsed >= deadline - Duration::from_millis(200)
            && elapsed < deadline + Duration::from_secs(5),
        "answered at the deadline: {elapsed:?}"
    );
    // Still locked out: the abandoned attempt wrote nothing (kept: time
    // passing without an effect is the behaviour under test).
    tokio::time::sleep(Duration::from_millis(500)).await;
    writer.commit().await.expect("write lock released");
    pool.close().await;
    assert_eq!(db.staff_messages(&conversation).await, before);

    let retried = retry_while_in_progress("the retry goes through once the lock is free", || {
        call(&sandbox.mcp_url, &token, SEND, args.clone())
    })
    .await;
    assert!(
        !replayed(&retried),
        "the first attempt left no record: {retried}"
    );
    let again = call(&sandbox.mcp_url, &token, SEND, args).await;
    assert!(replayed(&again), "{again}");
    assert_eq!(db.staff_messages(&conversation).await, before + 1);

    let started = Instant::now();
    let next = json!({"conversation_id": conversation, "text": "Bon appétit !",
                      "idempotency_key": "late-key-0009-iiii"});
    let next = call(&sandbox.mcp_url, &token, SEND, next).await;
    assert_eq!(error_code(&next), None, "{next}");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "no lock left behind: {:?}",
        started.elapsed()
    );
    assert_eq!(db.staff_messages(&conversation).await, before + 2);
    bench.shutdown().await;
}

/// Embedded mode: a record replays for its time to live only; past it the
/// key is free again (the expired record is replaced in the same transaction
/// as the new effect).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_keys_replay_until_they_expire() {
    let Some(bench) = Bench::start(Backend::Sqlite, |config| {
        config.tools.idempotency.replay_ttl_secs = 1;
    })
    .await
    else {
        return;
    };
    let (sandbox, db) = (&bench.sandbox, &bench.db);
    let (conversation, token, before) = bench.scene().await;
    let args = json!({"conversation_id": conversation, "text": "À demain !",
                      "idempotency_key": "ttl-key-0010-jjjj"});
    let first = call(&sandbox.mcp_url, &token, SEND, args.clone()).await;
    assert_eq!(error_code(&first), None, "{first}");
    let replay = call(&sandbox.mcp_url, &token, SEND, args.clone()).await;
    assert!(replayed(&replay), "within its time to live: {replay}");
    assert_eq!(db.staff_messages(&conversation).await, before + 1);

    // Kept: the record's time to live (1 s) passing is the behaviour under test.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let mut other = args.clone();
    other["text"] = json!("À bientôt !");
    let reused = call(&sandbox.mcp_url, &token, SEND, other).await;
    assert_eq!(
        error_code(&reused),
        None,
        "an expired key is free: {reused}"
    );
    assert!(!replayed(&reused), "{reused}");
    assert_ne!(
        reused["structuredContent"]["data"]["message"]["id"],
        first["structuredContent"]["data"]["message"]["id"]
    );
    assert_eq!(db.staff_messages(&conversation).await, before + 2);
    assert_eq!(
        db.count(
            "SELECT COUNT(*) FROM idempotency_keys WHERE tool = $1",
            SEND
        )
        .await,
        1,
        "the expired record was replaced"
    );
    bench.shutdown().await;
}
