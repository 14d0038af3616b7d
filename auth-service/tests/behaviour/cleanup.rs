//! The cleanup of expired authorization state: expired codes, refresh
//! tokens, browser sessions and sessions go, as do those revoked (codes:
//! spent) longer than the retention ago; live rows and recently revoked ones
//! stay. Bounded batches get through everything; `serve` runs it periodically.

use std::time::Duration;

use chataigne_common::demo::{DEMO_CLIENT_ID, USER_MANAGER};

use crate::support::{Backend, Harness, now};

/// Now, in Unix milliseconds (the stores' unit).
fn now_ms() -> i64 {
    now() * 1000
}

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;

/// Rows of every kind: `live_*` and `recent_*` must stay, `gone_*` must go.
fn fixtures(now: i64) -> String {
    let (u, c) = (USER_MANAGER, DEMO_CLIENT_ID);
    let (future, past, long_ago, recently) =
        (now + HOUR_MS, now - HOUR_MS, now - 2 * DAY_MS, now - 60_000);
    format!(
        "INSERT INTO sessions (id, user_id, client_id, created_at, expires_at, revoked_at) VALUES \
           ('live_s', '{u}', '{c}', {now}, {future}, NULL), \
           ('recent_revoked_s', '{u}', '{c}', {now}, {future}, {recently}), \
           ('gone_expired_s', '{u}', '{c}', {long_ago}, {past}, NULL), \
           ('gone_revoked_s', '{u}', '{c}', {long_ago}, {future}, {long_ago}); \
         INSERT INTO refresh_tokens (token_hash, session_id, client_id, user_id, scopes, resource, \
           created_at, expires_at, used_at, revoked_at) VALUES \
           ('live_rt', 'live_s', '{c}', '{u}', 'orders.read', 'r', {now}, {future}, NULL, NULL), \
           ('live_spent_rt', 'live_s', '{c}', '{u}', 'orders.read', 'r', {now}, {future}, {recently}, NULL), \
           ('recent_revoked_rt', 'live_s', '{c}', '{u}', 'orders.read', 'r', {now}, {future}, NULL, {recently}), \
           ('gone_expired_rt', 'live_s', '{c}', '{u}', 'orders.read', 'r', {long_ago}, {past}, NULL, NULL), \
           ('gone_revoked_rt', 'live_s', '{c}', '{u}', 'orders.read', 'r', {long_ago}, {future}, NULL, {long_ago}), \
           ('gone_of_expired_session_rt', 'gone_expired_s', '{c}', '{u}', 'orders.read', 'r', {long_ago}, {future}, NULL, NULL); \
         INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scopes, \
           resource, code_challenge, created_at, expires_at, used_at, session_id) VALUES \
           ('live_code', '{c}', '{u}', 'x', 's', 'r', 'ch', {now}, {future}, NULL, NULL), \
           ('recent_spent_code', '{c}', '{u}', 'x', 's', 'r', 'ch', {recently}, {recently}, {recently}, 'live_s'), \
           ('gone_expired_code', '{c}', '{u}', 'x', 's', 'r', 'ch', {past}, {past}, NULL, NULL), \
           ('gone_spent_code', '{c}', '{u}', 'x', 's', 'r', 'ch', {long_ago}, {long_ago}, {long_ago}, 'live_s'); \
         INSERT INTO browser_sessions (id_hash, user_id, created_at, expires_at, revoked_at) VALUES \
           ('live_b', '{u}', {now}, {future}, NULL), \
           ('recent_revoked_b', '{u}', {now}, {future}, {recently}), \
           ('gone_expired_b', '{u}', {long_ago}, {past}, NULL), \
           ('gone_revoked_b', '{u}', {long_ago}, {future}, {long_ago});"
    )
}

/// Every fixture id left, sorted.
async fn left(h: &Harness) -> Vec<String> {
    let fixture = |column: &str| {
        format!("{column} LIKE 'live%' OR {column} LIKE 'recent%' OR {column} LIKE 'gone%'")
    };
    let mut ids = Vec::new();
    for (table, column) in [
        ("sessions", "id"),
        ("refresh_tokens", "token_hash"),
        ("authorization_codes", "code_hash"),
        ("browser_sessions", "id_hash"),
    ] {
        let query = format!("SELECT {column} FROM {table} WHERE {}", fixture(column));
        ids.extend(h.strings(&query).await);
    }
    ids.sort();
    ids
}

/// The fixtures that must stay, sorted.
fn kept() -> Vec<String> {
    let mut ids: Vec<String> = [
        "live_s",
        "recent_revoked_s",
        "live_rt",
        "live_spent_rt",
        "recent_revoked_rt",
        "live_code",
        "recent_spent_code",
        "live_b",
        "recent_revoked_b",
    ]
    .iter()
    .map(|id| (*id).to_owned())
    .collect();
    ids.sort();
    ids
}

async fn expired_and_long_revoked_rows_go_and_live_rows_stay(h: &Harness) {
    h.execute(fixtures(now_ms())).await;
    assert_eq!(left(h).await.len(), 18, "fixtures inserted");
    let purged = h.app.purge_expired().await.expect("cleanup runs");
    assert_eq!(purged.codes, 2, "{purged:?}");
    // The refresh token of the expired session goes with it (cascade).
    assert_eq!(purged.refresh_tokens, 2, "{purged:?}");
    assert_eq!(purged.browser_sessions, 2, "{purged:?}");
    assert_eq!(purged.sessions, 2, "{purged:?}");
    assert_eq!(left(h).await, kept());
    // A second run finds nothing more.
    let again = h.app.purge_expired().await.expect("cleanup runs");
    assert_eq!(again.total(), 0, "{again:?}");
    assert_eq!(left(h).await, kept());
}

async fn live_tokens_keep_working_after_a_cleanup(h: &Harness) {
    let issued = h.token(USER_MANAGER, &["orders.read"]).await;
    h.execute(fixtures(now_ms())).await;
    h.app.purge_expired().await.expect("cleanup runs");
    assert!(
        h.authenticate(&issued.access_token, crate::support::RESOURCE)
            .await
            .is_ok()
    );
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Harness::start(crate::support::Backend::Sqlite)
        .await
        .expect("SQLite is always available"),
    postgres: Harness::start(crate::support::Backend::Postgres).await,
    run: |harness| (&harness),
    finish: harness.finish().await,
    tests: [
        expired_and_long_revoked_rows_go_and_live_rows_stay,
        live_tokens_keep_working_after_a_cleanup,
    ],
}

/// Many expired rows and batches of two: every row goes, live ones stay.
async fn small_batches_get_through_everything(backend: Backend) {
    let Some(h) = Harness::start_with(backend, |c| c.oauth.cleanup_batch_size = 2).await else {
        return;
    };
    let past = now_ms() - HOUR_MS;
    let codes: Vec<String> = (0..7)
        .map(|i| {
            format!(
                "('gone_{i}_code', '{DEMO_CLIENT_ID}', '{USER_MANAGER}', 'x', 's', 'r', 'ch', {past}, {past}, NULL, NULL)"
            )
        })
        .collect();
    h.execute(format!(
        "INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, scopes, \
           resource, code_challenge, created_at, expires_at, used_at, session_id) VALUES {}; {}",
        codes.join(", "),
        fixtures(now_ms())
    ))
    .await;
    let purged = h.app.purge_expired().await.expect("cleanup runs");
    assert_eq!(purged.codes, 9, "{purged:?}");
    assert_eq!(left(&h).await, kept());
    h.finish().await;
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Backend::Sqlite,
    postgres: Some(Backend::Postgres),
    run: |backend| (backend),
    tests: [
        small_batches_get_through_everything,
    ],
}

/// `serve` starts the periodic cleanup: expired rows go without a call.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_served_app_cleans_up_periodically() {
    let h = Harness::start_with(Backend::Sqlite, |c| c.oauth.cleanup_interval_secs = 1)
        .await
        .expect("SQLite is always available");
    h.execute(fixtures(now_ms())).await;
    chataigne_common::testing::eventually(
        "the expired rows cleaned up",
        Duration::from_secs(60),
        || async { left(&h).await == kept() },
    )
    .await;
}
