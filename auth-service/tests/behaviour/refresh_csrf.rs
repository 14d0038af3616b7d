//! Refresh tokens refused without being spent, rotation that happens once,
//! and CSRF tokens that verify only in the browser session and for the
//! authorization request they were made for, in `__Host-` cookies.

use chataigne_auth::{ClientKind, NewClientRequest};
use chataigne_common::demo::DEMO_CLIENT_ID;
use serde_json::Value;

use crate::oauth_support::*;
use crate::support::{Harness, RESOURCE, assert_unauthenticated};

const MANAGER_EMAIL: &str = "camille.martin@bistro.example";
const STAFF_EMAIL: &str = "louis.bernard@bistro.example";

/// A refresh of `token` as `client_id`, with `extra` form fields.
async fn refresh(
    h: &Harness,
    token: &str,
    client_id: &str,
    extra: &[(&str, &str)],
) -> (u16, Value) {
    let mut form = vec![
        ("grant_type", "refresh_token"),
        ("client_id", client_id),
        ("refresh_token", token),
    ];
    form.extend_from_slice(extra);
    crate::oauth_support::token(h, &form).await
}

async fn a_refused_refresh_leaves_the_token_valid(h: &Harness) {
    h.app
        .add_client(NewClientRequest {
            client_id: "other-app".into(),
            name: "Other app".into(),
            kind: ClientKind::Public,
            redirect_uris: vec![REDIRECT.into()],
            allowed_scopes: Vec::new(),
        })
        .await
        .unwrap();
    let first = full_flow(h, "orders.read location.read").await;
    let access = first["access_token"].as_str().unwrap().to_owned();
    let token = first["refresh_token"].as_str().unwrap().to_owned();
    for (client_id, extra, error) in [
        (
            DEMO_CLIENT_ID,
            vec![("scope", "orders.write")],
            "invalid_scope",
        ),
        (
            DEMO_CLIENT_ID,
            vec![("scope", "orders.read catalog.read")],
            "invalid_scope",
        ),
        (
            DEMO_CLIENT_ID,
            vec![("resource", "https://elsewhere.example/mcp")],
            "invalid_target",
        ),
        ("other-app", vec![], "invalid_grant"),
    ] {
        let (status, body) = refresh(h, &token, client_id, &extra).await;
        assert_eq!(
            (status, body["error"].as_str()),
            (400, Some(error)),
            "{extra:?}"
        );
        // Refused, and nothing was spent: the session is intact.
        assert!(h.authenticate(&access, RESOURCE).await.is_ok(), "{extra:?}");
    }
    // The same token still refreshes (narrowing is allowed), once.
    let (status, second) = refresh(h, &token, DEMO_CLIENT_ID, &[("scope", "orders.read")]).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["scope"], "orders.read");
    let next = second["refresh_token"].as_str().unwrap().to_owned();
    assert_ne!(next, token);
    let (status, third) = refresh(h, &next, DEMO_CLIENT_ID, &[]).await;
    assert_eq!(status, 200, "{third}");
    assert_eq!(
        third["scope"], "orders.read location.read",
        "the family keeps the grant's scopes"
    );
    // Presenting a spent token is still reuse: the family ends.
    let (status, body) = refresh(h, &token, DEMO_CLIENT_ID, &[]).await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let latest = third["access_token"].as_str().unwrap();
    assert_unauthenticated(h.authenticate(latest, RESOURCE).await, "session_revoked");
}

async fn concurrent_refreshes_of_one_token_rotate_once(h: &Harness) {
    let first = full_flow(h, "orders.read").await;
    let token = first["refresh_token"].as_str().unwrap().to_owned();
    let attempts = (0..4).map(|_| refresh(h, &token, DEMO_CLIENT_ID, &[]));
    let results = futures::future::join_all(attempts).await;
    let granted = results.iter().filter(|(status, _)| *status == 200).count();
    assert_eq!(granted, 1, "exactly one rotation: {results:?}");
    for (status, body) in &results {
        if *status != 200 {
            assert_eq!(body["error"], "invalid_grant", "{body}");
        }
    }
}

/// POSTs `form` to `path` with exactly `cookies`.
async fn post_with_cookies(
    h: &Harness,
    path: &str,
    cookies: &[(&str, &str)],
    form: &[(String, String)],
) -> (u16, String) {
    let cookie = cookies
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("; ");
    let response = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
        .post(format!("{}{path}", h.http_url))
        .header("cookie", cookie)
        .form(form)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

fn cookie<'a>(b: &'a Browser, name: &str) -> &'a str {
    b.cookies
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("cookie {name} in {:?}", b.cookies))
}

/// Signs `b` in as `email` on a fresh request for `scope`; returns the
/// consent page.
async fn signed_in_consent(b: &mut Browser, email: &str, scope: &str) -> String {
    let (_, challenge) = pkce();
    let (status, headers, html) = b.get(&authorize_query(&challenge, scope, "st")).await;
    assert_eq!(status, 200, "{html}");
    let set_cookie = headers["set-cookie"].to_str().unwrap();
    assert!(
        set_cookie.starts_with("__Host-chataigne_as_csrf=") && set_cookie.contains("Secure"),
        "{set_cookie}"
    );
    let (status, headers, _) = post_form(
        b,
        "/authorize/login",
        &form_of(
            &html,
            &[
                ("email", email),
                ("password", chataigne_common::demo::DEMO_PASSWORD),
            ],
        ),
    )
    .await;
    assert_eq!(status, 303);
    let session = headers["set-cookie"].to_str().unwrap();
    assert!(
        session.starts_with("__Host-chataigne_as_session=") && session.contains("Secure"),
        "{session}"
    );
    let location = headers["location"].to_str().unwrap().to_owned();
    let (status, _, consent) = b.get(&location).await;
    assert_eq!(status, 200);
    consent
}

async fn a_csrf_pair_from_another_browser_or_request_is_refused(h: &Harness) {
    const CSRF: &str = "__Host-chataigne_as_csrf";
    const SESSION: &str = "__Host-chataigne_as_session";
    let mut victim = Browser::new(h);
    let consent = signed_in_consent(&mut victim, MANAGER_EMAIL, "orders.read").await;
    let victim_session = cookie(&victim, SESSION).to_owned();
    let victim_csrf = cookie(&victim, CSRF).to_owned();

    // The attacker's own pair, from a consent page of their own session…
    let mut attacker = Browser::new(h);
    let theirs = signed_in_consent(&mut attacker, STAFF_EMAIL, "orders.read").await;
    let attacker_csrf = cookie(&attacker, CSRF).to_owned();
    let approve = form_of(&theirs, &[("decision", "approve")]);
    let (status, page) = post_with_cookies(
        h,
        "/authorize/consent",
        &[(SESSION, &victim_session), (CSRF, &attacker_csrf)],
        &approve,
    )
    .await;
    assert_eq!(status, 403, "another browser's pair: {page}");
    // …or from a sign-in page, bound to no session.
    let mut fresh = Browser::new(h);
    let (_, challenge) = pkce();
    let (_, _, sign_in) = fresh
        .get(&authorize_query(&challenge, "orders.read", "st"))
        .await;
    let fresh_csrf = cookie(&fresh, CSRF).to_owned();
    let (status, _) = post_with_cookies(
        h,
        "/authorize/consent",
        &[(SESSION, &victim_session), (CSRF, &fresh_csrf)],
        &form_of(&sign_in, &[("decision", "approve")]),
    )
    .await;
    assert_eq!(status, 403, "a sign-in pair for a consent");
    // The victim's own token for another request (more scopes) is refused.
    let mut widened = form_of(&consent, &[("decision", "approve")]);
    for (name, value) in &mut widened {
        if name == "scope" {
            *value = "orders.read orders.write".into();
        }
    }
    let (status, _) = post_with_cookies(
        h,
        "/authorize/consent",
        &[(SESSION, &victim_session), (CSRF, &victim_csrf)],
        &widened,
    )
    .await;
    assert_eq!(status, 403, "a token for another request");
    // The victim's own form, as served, goes through.
    let (status, back) = post_with_cookies(
        h,
        "/authorize/consent",
        &[(SESSION, &victim_session), (CSRF, &victim_csrf)],
        &form_of(&consent, &[("decision", "approve")]),
    )
    .await;
    assert_eq!(status, 200, "{back}");
    assert!(back.contains("code="), "{back}");
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
        a_refused_refresh_leaves_the_token_valid,
        concurrent_refreshes_of_one_token_rotate_once,
        a_csrf_pair_from_another_browser_or_request_is_refused,
    ],
}
