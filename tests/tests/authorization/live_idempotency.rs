//! Live authorization on every path of an idempotent write, through the
//! whole stack on PostgreSQL with the real Redis and on the embedded stack:
//! once a membership is removed, a retry with the same key and arguments
//! (a replay), the same key with other arguments (a mismatch) and a
//! duplicate of a write still running (in progress) are all refused with
//! `MCP_RESOURCE_FORBIDDEN` at the next request — the answer a fresh call
//! gets — and none of them reveals the stored result. Given back the
//! membership, the caller gets the replay again.

use std::time::Duration;

use chataigne_tests::demo::{ORG_BISTRO, USER_MANAGER};
use chataigne_tests::stores::{call_at, error_code, replayed, sandbox_on_redis};
use chataigne_tests::{Backend, Sandbox};
use serde_json::{Value, json};

const SEND: &str = "chataigne_conversation_message_send";
const FIRST_CONVERSATION: &str =
    "SELECT id FROM conversations WHERE organization_id = $1 ORDER BY id LIMIT 1";

/// The tool-service's database.
enum Db {
    Postgres(String),
    Sqlite(String),
}

/// A transaction holding the lock the write needs (as in `exactly_once.rs`):
/// the messages table on PostgreSQL, the write lock on SQLite.
enum Stall {
    Postgres(sqlx::Transaction<'static, sqlx::Postgres>),
    Sqlite(sqlx::Transaction<'static, sqlx::Sqlite>),
}

impl Db {
    async fn first_conversation(&self) -> String {
        match self {
            Db::Postgres(url) => {
                let pool = sqlx::PgPool::connect(url).await.expect("tools database");
                let id = sqlx::query_scalar(FIRST_CONVERSATION)
                    .bind(ORG_BISTRO)
                    .fetch_one(&pool)
                    .await
                    .expect("a conversation");
                pool.close().await;
                id
            }
            Db::Sqlite(url) => {
                let pool = sqlx::SqlitePool::connect(url)
                    .await
                    .expect("tools database");
                let id = sqlx::query_scalar(FIRST_CONVERSATION)
                    .bind(ORG_BISTRO)
                    .fetch_one(&pool)
                    .await
                    .expect("a conversation");
                pool.close().await;
                id
            }
        }
    }

    async fn stall(&self) -> Stall {
        match self {
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
                Stall::Sqlite(pool.begin_with("BEGIN IMMEDIATE").await.expect("locked"))
            }
        }
    }
}

impl Stall {
    async fn release(self) {
        match self {
            Stall::Postgres(tx) => tx.rollback().await.expect("released"),
            Stall::Sqlite(tx) => tx.commit().await.expect("released"),
        }
    }
}

async fn start(backend: Backend) -> Option<(Sandbox, Db)> {
    match backend {
        Backend::Postgres => {
            let prefix = chataigne_tests::stores::prefix();
            let (sandbox, url) = sandbox_on_redis(&prefix, |_| {}).await?;
            Some((sandbox, Db::Postgres(url)))
        }
        Backend::Sqlite => {
            let mut url = String::new();
            let sandbox = Sandbox::start_with(Backend::Sqlite, |config| {
                url = secrecy::ExposeSecret::expose_secret(&config.tools.database.url).to_owned();
            })
            .await
            .expect("sqlite sandbox");
            Some((sandbox, Db::Sqlite(url)))
        }
    }
}

async fn call(sandbox: &Sandbox, token: &str, arguments: &Value) -> Value {
    let (status, body) = call_at(&sandbox.mcp_url, token, SEND, arguments.clone()).await;
    assert_eq!(status, 200, "{body}");
    body["result"].clone()
}

#[track_caller]
fn assert_forbidden(result: &Value, what: &str) {
    assert_eq!(
        error_code(result).as_deref(),
        Some("MCP_RESOURCE_FORBIDDEN"),
        "{what}: {result}"
    );
    assert!(!replayed(result), "{what}: {result}");
    assert!(
        !result.to_string().contains("msg_"),
        "{what}: the stored result is not revealed: {result}"
    );
}

async fn scenario(backend: Backend) {
    let Some((sandbox, db)) = start(backend).await else {
        return;
    };
    let auth = &sandbox.stack.auth;
    let conversation = db.first_conversation().await;
    let token = sandbox.token(USER_MANAGER).await;
    let args = json!({"conversation_id": conversation, "text": "Votre commande est prête.",
                      "idempotency_key": "live-key-0001-aaaa"});
    let mut other = args.clone();
    other["text"] = json!("Un autre texte");

    let first = call(&sandbox, &token, &args).await;
    assert_eq!(error_code(&first), None, "{first}");
    assert!(
        replayed(&call(&sandbox, &token, &args).await),
        "a replay while allowed"
    );

    auth.remove_membership(USER_MANAGER, ORG_BISTRO, None)
        .await
        .expect("membership removed");
    for attempt in 0..20 {
        assert_forbidden(
            &call(&sandbox, &token, &args).await,
            &format!("replay #{attempt}"),
        );
    }
    assert_forbidden(&call(&sandbox, &token, &other).await, "mismatch");

    auth.add_membership(USER_MANAGER, ORG_BISTRO, None, "manager")
        .await
        .expect("membership back");
    let again = call(&sandbox, &token, &args).await;
    assert!(replayed(&again), "{again}");
    assert_eq!(
        again["structuredContent"]["data"],
        first["structuredContent"]["data"]
    );
    assert_eq!(
        error_code(&call(&sandbox, &token, &other).await).as_deref(),
        Some("MCP_IDEMPOTENCY_MISMATCH")
    );

    // A duplicate of a write still running.
    let running = json!({"conversation_id": conversation, "text": "Nous arrivons.",
                         "idempotency_key": "live-key-0002-bbbb"});
    let stall = db.stall().await;
    let in_flight = {
        let url = sandbox.mcp_url.clone();
        let token = token.clone();
        let running = running.clone();
        tokio::spawn(async move { call_at(&url, &token, SEND, running).await })
    };
    // Kept: the running write gives no sign, on either backend, of having
    // reached the tool-service; the duplicate must come while it runs.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let duplicate = call(&sandbox, &token, &running).await;
    assert_eq!(
        error_code(&duplicate).as_deref(),
        Some("MCP_OPERATION_IN_PROGRESS"),
        "allowed, the duplicate is in progress: {duplicate}"
    );
    auth.remove_membership(USER_MANAGER, ORG_BISTRO, None)
        .await
        .expect("membership removed");
    assert_forbidden(&call(&sandbox, &token, &running).await, "in progress");
    stall.release().await;
    let (status, done) = in_flight.await.expect("first call");
    assert_eq!(status, 200);
    assert_eq!(
        error_code(&done["result"]),
        None,
        "authorized before the removal: {done}"
    );
    assert_forbidden(&call(&sandbox, &token, &running).await, "after it finished");
    auth.add_membership(USER_MANAGER, ORG_BISTRO, None, "manager")
        .await
        .expect("membership back");
    assert!(replayed(&call(&sandbox, &token, &running).await));
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removed_membership_is_refused_on_replay_mismatch_and_in_progress() {
    scenario(Backend::Postgres).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn embedded_a_removed_membership_is_refused_on_replay_mismatch_and_in_progress() {
    scenario(Backend::Sqlite).await;
}
