//! Exactly-once writes through the whole stack on PostgreSQL and the real
//! Redis: concurrent duplicates, replay after the cache lost its entry (as
//! when a gateway dies between the effect and storing the result), argument
//! mismatch, and an operation still in progress.

use std::time::{Duration, Instant};

use chataigne_tests::demo::{ORG_BISTRO, USER_ADMIN, USER_MANAGER};
use chataigne_tests::forwarder::{Forwarder, Mode};
use chataigne_tests::stores::{
    delete_keys, error_code, first_conversation, prefix, replayed, sandbox_on_redis, scalar,
    staff_messages,
};
use serde_json::json;

const SEND: &str = "chataigne_conversation_message_send";

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_duplicates_make_exactly_one_effect_and_replay() {
    let prefix = prefix();
    let Some((sandbox, db)) = sandbox_on_redis(&prefix, |_| {}).await else {
        return;
    };
    let conversation = first_conversation(&db, ORG_BISTRO).await;
    let token = sandbox.token(USER_MANAGER).await;
    let before = staff_messages(&db, &conversation).await;
    let args = json!({"conversation_id": conversation, "text": "Votre commande arrive dans 10 minutes.",
                      "idempotency_key": "dup-key-0001-aaaa"});
    let calls = (0..16).map(|_| sandbox.call_tool(&token, SEND, args.clone()));
    let results = futures::future::join_all(calls).await;
    assert_eq!(
        staff_messages(&db, &conversation).await,
        before + 1,
        "one effect"
    );
    let fresh = results
        .iter()
        .filter(|r| error_code(r).is_none() && !replayed(r))
        .count();
    assert_eq!(fresh, 1, "exactly one call did the work: {results:?}");
    for result in &results {
        match error_code(result).as_deref() {
            None => {}
            Some("MCP_OPERATION_IN_PROGRESS") => {
                let error = &result["structuredContent"]["data"]["error"];
                assert!(error["retry_after_ms"].as_u64().is_some(), "{error}");
                assert_eq!(error["retryable"], true);
            }
            Some(other) => panic!("unexpected {other}: {result}"),
        }
    }
    let again = sandbox.call_tool(&token, SEND, args.clone()).await;
    assert!(replayed(&again), "{again}");
    let first = results
        .iter()
        .find(|r| error_code(r).is_none() && !replayed(r))
        .unwrap();
    assert_eq!(
        again["structuredContent"]["data"], first["structuredContent"]["data"],
        "the replay is the stored result"
    );
    assert_eq!(
        scalar(
            &db,
            "SELECT COUNT(*) FROM outbound_messages WHERE conversation_id = $1",
            &conversation
        )
        .await,
        1
    );
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_cache_entry_replays_from_the_database_and_mismatches_stay_refused() {
    let prefix = prefix();
    let Some((sandbox, db)) = sandbox_on_redis(&prefix, |_| {}).await else {
        return;
    };
    let conversation = first_conversation(&db, ORG_BISTRO).await;
    let token = sandbox.token(USER_MANAGER).await;
    let before = staff_messages(&db, &conversation).await;
    let args = json!({"conversation_id": conversation, "text": "Merci pour votre visite !",
                      "idempotency_key": "crash-key-0002-bbbb"});
    let first = sandbox.call_tool(&token, SEND, args.clone()).await;
    assert_eq!(error_code(&first), None, "{first}");
    assert!(!replayed(&first));
    // The gateway "died" after the effect: its cache entry is gone.
    assert_eq!(delete_keys(&prefix, "idem").await, 1);
    let retry = sandbox.call_tool(&token, SEND, args.clone()).await;
    assert!(
        replayed(&retry),
        "answered from the database record: {retry}"
    );
    assert_eq!(
        retry["structuredContent"]["data"],
        first["structuredContent"]["data"]
    );
    assert_eq!(staff_messages(&db, &conversation).await, before + 1);

    let mut other = args.clone();
    other["text"] = json!("Un autre message");
    let cached = sandbox.call_tool(&token, SEND, other.clone()).await;
    assert_eq!(
        error_code(&cached).as_deref(),
        Some("MCP_IDEMPOTENCY_MISMATCH"),
        "{cached}"
    );
    delete_keys(&prefix, "idem").await;
    let from_db = sandbox.call_tool(&token, SEND, other).await;
    assert_eq!(
        error_code(&from_db).as_deref(),
        Some("MCP_IDEMPOTENCY_MISMATCH"),
        "{from_db}"
    );
    assert_eq!(staff_messages(&db, &conversation).await, before + 1);

    // The same key of another user is another key.
    let instruction = json!({"conversation_id": conversation, "text": "Offrir le dessert.",
                             "idempotency_key": "crash-key-0002-bbbb"});
    let result = sandbox
        .call_tool(
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
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_duplicate_of_a_running_write_is_in_progress_then_replays() {
    let prefix = prefix();
    let pg = chataigne_common::testing::postgres_admin_url();
    let authority = pg
        .trim_start_matches("postgres://")
        .split_once('@')
        .map_or("127.0.0.1:5432", |(_, rest)| rest)
        .split('/')
        .next()
        .unwrap_or("127.0.0.1:5432")
        .to_owned();
    let proxy = Forwarder::start(&authority).await;
    let proxied = proxy.authority();
    let Some((sandbox, db)) = sandbox_on_redis(&prefix, |config| {
        let url = secrecy::ExposeSecret::expose_secret(&config.tools.database.url).to_owned();
        let url = url.replacen(&authority, &proxied, 1);
        config.tools.database.url = secrecy::SecretString::from(url);
        config.gateway.deadlines.write_ms = 20_000;
    })
    .await
    else {
        return;
    };
    let db = db.replacen(&proxied, &authority, 1);
    let conversation = first_conversation(&db, ORG_BISTRO).await;
    let token = sandbox.token(USER_MANAGER).await;
    let before = staff_messages(&db, &conversation).await;
    let args = json!({"conversation_id": conversation, "text": "Nous avons bien reçu votre demande.",
                      "idempotency_key": "slow-key-0003-cccc"});
    proxy.set(Mode::Stall);
    let first = {
        let sandbox = &sandbox;
        let token = token.clone();
        let args = args.clone();
        async move { sandbox.call_tool(&token, SEND, args).await }
    };
    let duplicate = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let started = Instant::now();
        let result = sandbox.call_tool(&token, SEND, args.clone()).await;
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "answered at once"
        );
        proxy.set(Mode::Forward);
        result
    };
    let (first, duplicate) = tokio::join!(first, duplicate);
    assert_eq!(
        error_code(&duplicate).as_deref(),
        Some("MCP_OPERATION_IN_PROGRESS"),
        "{duplicate}"
    );
    assert!(
        duplicate["structuredContent"]["data"]["error"]["retry_after_ms"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(error_code(&first), None, "{first}");
    let retry = sandbox.call_tool(&token, SEND, args).await;
    assert!(replayed(&retry), "{retry}");
    assert_eq!(staff_messages(&db, &conversation).await, before + 1);
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn platform_admins_create_organizations_and_locations_once() {
    let prefix = prefix();
    let Some((sandbox, db)) = sandbox_on_redis(&prefix, |_| {}).await else {
        return;
    };
    let admin = sandbox
        .token_with(
            USER_ADMIN,
            &["admin.organizations.create", "admin.locations.create"],
        )
        .await;
    let create = json!({"name": "Crêperie du Port", "idempotency_key": "org-key-0004-dddd"});
    let org = sandbox
        .call_tool(&admin, "chataigne_organization_create", create.clone())
        .await;
    assert_eq!(error_code(&org), None, "{org}");
    let org_id = org["structuredContent"]["data"]["organization"]["organization_id"]
        .as_str()
        .unwrap()
        .to_owned();
    delete_keys(&prefix, "idem").await;
    let again = sandbox
        .call_tool(&admin, "chataigne_organization_create", create)
        .await;
    assert!(replayed(&again), "{again}");
    assert_eq!(
        scalar(
            &db,
            "SELECT COUNT(*) FROM organizations WHERE name = $1",
            "Crêperie du Port"
        )
        .await,
        1
    );
    let location = json!({"organization_id": org_id, "name": "Crêperie du Port — Quai", "line1": "1 quai Est",
        "city": "Nantes", "postal_code": "44000", "country": "FR", "timezone": "Europe/Paris",
        "currency": "EUR", "idempotency_key": "loc-key-0005-eeee"});
    let created = sandbox
        .call_tool(&admin, "chataigne_location_create", location.clone())
        .await;
    assert_eq!(error_code(&created), None, "{created}");
    assert_eq!(
        scalar(
            &db,
            "SELECT COUNT(*) FROM locations WHERE organization_id = $1",
            &org_id
        )
        .await,
        1
    );
    let mut unknown = location.clone();
    unknown["organization_id"] = json!("org_doesnotexist");
    unknown["idempotency_key"] = json!("loc-key-0006-ffff");
    let missing = sandbox
        .call_tool(&admin, "chataigne_location_create", unknown)
        .await;
    assert_eq!(
        error_code(&missing).as_deref(),
        Some("MCP_RESOURCE_NOT_FOUND"),
        "{missing}"
    );

    // A manager holding the scope but not a platform admin is refused, live.
    let manager = sandbox
        .token_with(USER_MANAGER, &["admin.organizations.create"])
        .await;
    let refused = sandbox
        .call_tool(
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
    let bad_key = sandbox
        .call_tool(
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
    sandbox.shutdown().await;
}
