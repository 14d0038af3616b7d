//! Every refusal condition of seed 002 has an operator command, run here
//! through the real `chataigne-auth-service` binary against the served
//! instance's database, and each takes effect at the next `Authenticate` /
//! `Authorize` — the calls every MCP request makes — with no restart.

use chataigne_common::ErrorCode;
use chataigne_common::demo::{DEMO_CLIENT_ID, ORG_BISTRO, USER_ADMIN, USER_MANAGER, USER_STAFF};

use crate::oauth_support::{Browser, authorize_query, full_flow, pkce, token};
use crate::support::{Harness, RESOURCE, TEST_KEK, assert_code, assert_unauthenticated, parts};

/// Runs the binary with `args` against `h`'s database; returns success,
/// stdout and stderr.
pub fn cli(h: &Harness, args: &[&str]) -> (bool, String, String) {
    cli_with_stdin(h, args, "")
}

/// [`cli`] with `stdin` as the command's standard input.
pub fn cli_with_stdin(h: &Harness, args: &[&str], stdin: &str) -> (bool, String, String) {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_chataigne-auth-service"))
        .args(args)
        // Only this configuration: other CHATAIGNE_* variables of the test
        // environment are not auth-service fields.
        .env_clear()
        .env("CHATAIGNE_DATABASE__URL", &h.db_url)
        .env("CHATAIGNE_KEYS__ENCRYPTION_KEY", TEST_KEK)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("binary runs");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin.as_bytes())
        .expect("stdin written");
    let output = child.wait_with_output().expect("binary ends");
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs `args`, which must succeed; returns stdout.
#[track_caller]
pub fn ok(h: &Harness, args: &[&str]) -> String {
    let (success, out, err) = cli(h, args);
    assert!(success, "{args:?}: {err}");
    out
}

async fn consent_revocation_ends_access_at_the_next_request(h: &Harness) {
    let issued = h.token(USER_MANAGER, &["orders.read"]).await;
    assert!(h.authenticate(&issued.access_token, RESOURCE).await.is_ok());
    let listed = ok(h, &["consents", "list", USER_MANAGER]);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with(&format!("{DEMO_CLIENT_ID}\tactive\t"))
                && l.contains("orders.read")),
        "{listed}"
    );
    ok(
        h,
        &[
            "consents",
            "revoke",
            USER_MANAGER,
            "--client",
            DEMO_CLIENT_ID,
        ],
    );
    assert_unauthenticated(
        h.authenticate(&issued.access_token, RESOURCE).await,
        "consent_revoked",
    );
    let listed = ok(h, &["consents", "list", USER_MANAGER]);
    assert!(
        listed.contains(&format!("{DEMO_CLIENT_ID}\trevoked\t")),
        "{listed}"
    );
    let (success, _, err) = cli(
        h,
        &["consents", "revoke", USER_MANAGER, "--client", "nobody"],
    );
    assert!(!success && err.contains("not found"), "{err}");
}

async fn ending_sessions_ends_tokens_refreshes_and_the_sign_in(h: &Harness) {
    let flow = full_flow(h, "orders.read").await;
    let access = flow["access_token"].as_str().unwrap().to_owned();
    let refresh = flow["refresh_token"].as_str().unwrap().to_owned();
    let issued = h.token(USER_MANAGER, &["orders.read"]).await;
    let other_user = h.token(USER_STAFF, &["orders.read"]).await;
    // A browser signed in on the consent page.
    let mut browser = Browser::new(h);
    let (_, challenge) = pkce();
    let query = authorize_query(&challenge, "orders.read", "s");
    let (_, _, html) = browser.get(&query).await;
    crate::oauth_support::post_form(
        &mut browser,
        "/authorize/login",
        &crate::oauth_support::form_of(
            &html,
            &[
                ("email", "camille.martin@bistro.example"),
                ("password", chataigne_common::demo::DEMO_PASSWORD),
            ],
        ),
    )
    .await;
    let (_, _, signed_in) = browser.get(&query).await;
    assert!(signed_in.contains("id=\"approve\""), "{signed_in}");

    let out = ok(h, &["sessions", "revoke", USER_MANAGER]);
    let ended: u64 = out
        .trim()
        .strip_prefix("sessions_ended=")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(ended >= 2, "{out}");
    for token in [&access, &issued.access_token] {
        assert_unauthenticated(h.authenticate(token, RESOURCE).await, "session_revoked");
    }
    let (status, body) = token(
        h,
        &[
            ("grant_type", "refresh_token"),
            ("client_id", DEMO_CLIENT_ID),
            ("refresh_token", &refresh),
        ],
    )
    .await;
    assert_eq!(
        (status, body["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let (_, _, again) = browser.get(&query).await;
    assert!(again.contains("id=\"sign-in\""), "signed out: {again}");
    // Other users are untouched.
    assert!(
        h.authenticate(&other_user.access_token, RESOURCE)
            .await
            .is_ok()
    );
    // Through one client only.
    let issued = h.token(USER_MANAGER, &["orders.read"]).await;
    let out = ok(
        h,
        &[
            "sessions",
            "revoke",
            USER_MANAGER,
            "--client",
            DEMO_CLIENT_ID,
        ],
    );
    assert_eq!(out.trim(), "sessions_ended=1");
    assert_unauthenticated(
        h.authenticate(&issued.access_token, RESOURCE).await,
        "session_revoked",
    );
}

async fn bans_clients_admin_rights_and_memberships_apply_at_the_next_request(h: &Harness) {
    // Ban and reactivate.
    let staff = h.token(USER_STAFF, &["orders.read"]).await;
    ok(h, &["users", "set-status", USER_STAFF, "banned"]);
    assert_unauthenticated(
        h.authenticate(&staff.access_token, RESOURCE).await,
        "user_inactive",
    );
    ok(h, &["users", "set-status", USER_STAFF, "active"]);
    assert!(h.authenticate(&staff.access_token, RESOURCE).await.is_ok());
    // Disable and enable the client.
    ok(h, &["clients", "disable", DEMO_CLIENT_ID]);
    assert_unauthenticated(
        h.authenticate(&staff.access_token, RESOURCE).await,
        "client_disabled",
    );
    ok(h, &["clients", "enable", DEMO_CLIENT_ID]);
    assert!(h.authenticate(&staff.access_token, RESOURCE).await.is_ok());
    // Clear and grant the platform-admin flag.
    let scope = "admin.organizations.create";
    let admin = h.token(USER_ADMIN, &[scope]).await;
    let principal = |r: chataigne_proto::auth::v1::AuthenticateResponse| r.principal.unwrap();
    let before = h.authenticate(&admin.access_token, RESOURCE).await.unwrap();
    assert!(principal(before.clone()).platform_admin);
    assert!(
        h.resolve(&before.assertion, scope)
            .await
            .unwrap()
            .all_tenants
    );
    ok(h, &["users", "clear-admin", USER_ADMIN]);
    let after = h.authenticate(&admin.access_token, RESOURCE).await.unwrap();
    assert!(!principal(after.clone()).platform_admin);
    assert!(
        !h.resolve(&after.assertion, scope)
            .await
            .unwrap()
            .all_tenants
    );
    assert!(
        !h.resolve(&before.assertion, scope)
            .await
            .unwrap()
            .all_tenants,
        "read live even for an assertion minted before"
    );
    ok(h, &["users", "grant-admin", USER_ADMIN]);
    let again = h.authenticate(&admin.access_token, RESOURCE).await.unwrap();
    assert!(principal(again).platform_admin);
    // Remove and add a membership.
    let assertion = h.assertion(USER_MANAGER, &["orders.read"]).await;
    assert!(
        h.authorize(&assertion, "orders.read", ORG_BISTRO, None)
            .await
            .is_ok()
    );
    ok(
        h,
        &[
            "memberships",
            "remove",
            USER_MANAGER,
            "--organization",
            ORG_BISTRO,
        ],
    );
    assert_code(
        h.authorize(&assertion, "orders.read", ORG_BISTRO, None)
            .await,
        ErrorCode::ResourceForbidden,
    );
    let fresh = h.assertion(USER_MANAGER, &["orders.read"]).await;
    assert_code(
        h.authorize(&fresh, "orders.read", ORG_BISTRO, None).await,
        ErrorCode::ResourceForbidden,
    );
    ok(
        h,
        &[
            "memberships",
            "add",
            USER_MANAGER,
            "--organization",
            ORG_BISTRO,
            "--role",
            "manager",
        ],
    );
    assert!(
        h.authorize(&assertion, "orders.read", ORG_BISTRO, None)
            .await
            .is_ok()
    );
}

async fn keys_are_rotated_and_retired_by_kid_even_one_starting_with_a_dash(h: &Harness) {
    let old = h.token(USER_MANAGER, &["orders.read"]).await;
    let old_kid = parts(&old.access_token).0["kid"]
        .as_str()
        .unwrap()
        .to_owned();
    // Key ids are base64url thumbprints: they may start with '-'.
    let (success, _, err) = cli(h, &["keys", "retire", "-Zno-such-key"]);
    assert!(!success, "{err}");
    assert!(
        err.contains("signing key not found") && !err.contains("unexpected argument"),
        "parsed as a kid: {err}"
    );
    let (success, _, err) = cli(h, &["keys", "retire", &old_kid]);
    assert!(!success && err.contains("rotate first"), "{err}");
    let rotated = ok(h, &["keys", "rotate"]);
    let new_kid = rotated.trim().strip_prefix("kid=").unwrap().to_owned();
    ok(h, &["keys", "retire", &old_kid]);
    let listed = ok(h, &["keys", "list"]);
    assert!(
        listed.contains(&format!("{old_kid}\t")) && listed.contains("retired"),
        "{listed}"
    );
    // The served instance had never reloaded: the next request is refused.
    assert_unauthenticated(
        h.authenticate(&old.access_token, RESOURCE).await,
        "token_invalid",
    );
    let new = h.token(USER_MANAGER, &["orders.read"]).await;
    assert_eq!(parts(&new.access_token).0["kid"], new_kid.as_str());
    assert!(h.authenticate(&new.access_token, RESOURCE).await.is_ok());
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
        consent_revocation_ends_access_at_the_next_request,
        ending_sessions_ends_tokens_refreshes_and_the_sign_in,
        bans_clients_admin_rights_and_memberships_apply_at_the_next_request,
        keys_are_rotated_and_retired_by_kid_even_one_starting_with_a_dash,
    ],
}
