//! Every revocation takes effect at the very next MCP request, through the
//! real stack over HTTP: session revoked, user revoked, user banned, OAuth
//! client disabled, consent revoked, membership removed, consent narrowed.

use chataigne_auth::IssueTokenRequest;
use chataigne_tests::{Backend, Outcome, Sandbox, demo};
use serde_json::json;

const SCOPES: &[&str] = &["businessOrganization.read", "location.read", "orders.read"];

/// A fresh token and its session for `user_id` through `client_id`.
async fn issue(sandbox: &Sandbox, user_id: &str, client_id: &str) -> (String, String) {
    let issued = sandbox
        .auth
        .issue_access_token(IssueTokenRequest {
            user_id: user_id.to_owned(),
            client_id: client_id.to_owned(),
            scopes: SCOPES.iter().map(|s| (*s).to_owned()).collect(),
            resource: sandbox.mcp_url.clone(),
            ttl: None,
        })
        .await
        .expect("token issued");
    (issued.access_token, issued.session_id)
}

async fn orders(sandbox: &Sandbox, token: &str) -> (Outcome, u16, serde_json::Value) {
    sandbox
        .call_outcome(
            token,
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "limit": 1}),
        )
        .await
}

async fn assert_refused_at_next_request(sandbox: &Sandbox, token: &str, what: &str) {
    let (outcome, status, body) = orders(sandbox, token).await;
    assert_eq!(outcome, Outcome::Unauthenticated, "{what}: {status} {body}");
    let challenge = reqwest::Client::new()
        .post(&sandbox.mcp_url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))
        .send()
        .await
        .expect("gateway reachable");
    let header = challenge.headers()["www-authenticate"]
        .to_str()
        .unwrap_or_default()
        .to_owned();
    assert!(
        header.contains("resource_metadata=") && header.contains("invalid_token"),
        "{what}: {header}"
    );
}

async fn revocations(backend: Backend) {
    let Some(sandbox) = Sandbox::start(backend).await else {
        return;
    };
    let client = demo::DEMO_CLIENT_ID;

    // Session revoked.
    let (token, session) = issue(&sandbox, demo::USER_MANAGER, client).await;
    assert_eq!(orders(&sandbox, &token).await.0, Outcome::Ok);
    sandbox.auth.revoke_session(&session).await.unwrap();
    assert_refused_at_next_request(&sandbox, &token, "session revoked").await;

    // User revoked, then user banned.
    for status in ["revoked", "banned"] {
        let (token, _) = issue(&sandbox, demo::USER_MANAGER, client).await;
        assert_eq!(orders(&sandbox, &token).await.0, Outcome::Ok);
        sandbox
            .auth
            .set_user_status(demo::USER_MANAGER, status)
            .await
            .unwrap();
        assert_refused_at_next_request(&sandbox, &token, status).await;
        sandbox
            .auth
            .set_user_status(demo::USER_MANAGER, "active")
            .await
            .unwrap();
        assert_eq!(orders(&sandbox, &token).await.0, Outcome::Ok, "reactivated");
    }

    // Consent revoked.
    let (token, _) = issue(&sandbox, demo::USER_STAFF, client).await;
    assert_eq!(orders(&sandbox, &token).await.0, Outcome::Ok);
    sandbox
        .auth
        .revoke_consent(demo::USER_STAFF, client)
        .await
        .unwrap();
    assert_refused_at_next_request(&sandbox, &token, "consent revoked").await;

    // Consent narrowed: the tool disappears at the next request.
    let (token, _) = issue(&sandbox, demo::USER_MANAGER, client).await;
    sandbox
        .auth
        .set_consent_scopes(demo::USER_MANAGER, client, &["location.read"])
        .await
        .unwrap();
    assert_eq!(orders(&sandbox, &token).await.0, Outcome::Hidden);

    // Membership removed: the target is forbidden at the next request.
    let (token, _) = issue(&sandbox, demo::USER_STAFF, client).await;
    assert_eq!(orders(&sandbox, &token).await.0, Outcome::Ok);
    sandbox
        .auth
        .remove_membership(demo::USER_STAFF, demo::ORG_BISTRO, Some(demo::LOC_PARIS))
        .await
        .unwrap();
    assert_eq!(orders(&sandbox, &token).await.0, Outcome::Forbidden);

    // Client disabled (last: every demo token goes through it).
    let (token, _) = issue(&sandbox, demo::USER_OWNER, client).await;
    assert_eq!(
        sandbox
            .call_outcome(&token, "chataigne_organizations_list", json!({}))
            .await
            .0,
        Outcome::Ok
    );
    sandbox
        .auth
        .set_client_enabled(client, false)
        .await
        .unwrap();
    assert_refused_at_next_request(&sandbox, &token, "client disabled").await;
    sandbox.shutdown().await;
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Backend::Sqlite,
    postgres: Some(Backend::Postgres),
    run: |backend| (backend),
    tests: [
        revocations_take_effect_at_the_next_request = revocations,
    ],
}
