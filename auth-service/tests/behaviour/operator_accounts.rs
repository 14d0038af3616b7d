//! The account commands of the `chataigne-auth-service` binary, run against
//! the served instance's database: `users add|list|set-status`,
//! `roles list|set`, `memberships grant|list|revoke` and `clients remove`. Each change takes
//! effect at the next sign-in, `Authenticate` or `Authorize`.

use chataigne_auth::IssueTokenRequest;
use chataigne_common::ErrorCode;
use chataigne_common::demo::{ORG_BISTRO, USER_MANAGER};

use crate::oauth_support::{Browser, authorize_query, form_of, pkce, post_form};
use crate::operator::{cli, cli_with_stdin, ok};
use crate::support::{Harness, RESOURCE, assert_code, assert_unauthenticated};

const PASSWORD: &str = "a long kitchen passphrase";

/// Posts the sign-in form as `email`; true when the server signed the user
/// in (a redirect to the consent step), false when it showed the form again.
async fn signs_in(h: &Harness, email: &str, password: &str) -> bool {
    let (_, challenge) = pkce();
    let mut browser = Browser::new(h);
    let (status, _, html) = browser
        .get(&authorize_query(&challenge, "orders.read", "st-1"))
        .await;
    assert_eq!(status, 200, "{html}");
    let (status, _, _) = post_form(
        &mut browser,
        "/authorize/login",
        &form_of(&html, &[("email", email), ("password", password)]),
    )
    .await;
    status == 303
}

fn line_of<'a>(listing: &'a str, id: &str) -> Option<&'a str> {
    listing
        .lines()
        .find(|line| line.starts_with(&format!("{id}\t")))
}

async fn added_users_sign_in_with_their_password_and_their_status_is_read_live(h: &Harness) {
    let out = {
        let (success, out, err) = cli_with_stdin(
            h,
            &[
                "users",
                "add",
                "--email",
                "Lea.Fournier@bistro.example",
                "--name",
                "Léa Fournier",
                "--password-stdin",
            ],
            &format!("{PASSWORD}\n"),
        );
        assert!(success, "{err}");
        assert!(!err.contains(PASSWORD) && !out.contains(PASSWORD));
        out
    };
    let user_id = out
        .trim()
        .strip_prefix("user_id=")
        .unwrap_or_else(|| panic!("{out}"))
        .to_owned();
    assert!(user_id.starts_with("usr_"), "{user_id}");
    let listed = ok(h, &["users", "list"]);
    assert_eq!(
        line_of(&listed, &user_id),
        Some(
            format!("{user_id}\tactive\t-\tpassword\tLea.Fournier@bistro.example\tLéa Fournier")
                .as_str()
        ),
        "{listed}"
    );
    assert!(signs_in(h, "lea.fournier@bistro.example", PASSWORD).await);
    assert!(!signs_in(h, "lea.fournier@bistro.example", "not the passphrase!").await);

    // The same address again, a short password, a malformed address: refused.
    let (success, _, err) = cli_with_stdin(
        h,
        &[
            "users",
            "add",
            "--email",
            "lea.fournier@BISTRO.example",
            "--name",
            "Again",
            "--password-stdin",
        ],
        &format!("{PASSWORD}\n"),
    );
    assert!(!success && err.contains("exists"), "{err}");
    let (success, _, err) = cli_with_stdin(
        h,
        &[
            "users",
            "add",
            "--email",
            "short@bistro.example",
            "--name",
            "Short",
            "--password-stdin",
        ],
        "short\n",
    );
    assert!(!success && err.contains("12 to 512"), "{err}");
    let (success, _, _) = cli(h, &["users", "add", "--email", "nobody", "--name", "N"]);
    assert!(!success);
    // Without a password the user exists but cannot sign in.
    let out = ok(
        h,
        &[
            "users",
            "add",
            "--email",
            "no.password@bistro.example",
            "--name",
            "No Password",
        ],
    );
    let silent = out.trim().trim_start_matches("user_id=").to_owned();
    assert!(
        line_of(&ok(h, &["users", "list"]), &silent).is_some_and(|l| l.contains("\tno-password\t"))
    );

    // Status: revoked and banned users are refused at the next request, and
    // at the next sign-in; active again, the same token works.
    let token = h.token(&user_id, &["orders.read"]).await;
    assert!(h.authenticate(&token.access_token, RESOURCE).await.is_ok());
    for status in ["revoked", "banned"] {
        ok(h, &["users", "set-status", &user_id, status]);
        assert_unauthenticated(
            h.authenticate(&token.access_token, RESOURCE).await,
            "user_inactive",
        );
        assert!(!signs_in(h, "lea.fournier@bistro.example", PASSWORD).await);
        assert!(
            line_of(&ok(h, &["users", "list"]), &user_id)
                .is_some_and(|l| l.contains(&format!("\t{status}\t")))
        );
    }
    ok(h, &["users", "set-status", &user_id, "active"]);
    assert!(h.authenticate(&token.access_token, RESOURCE).await.is_ok());
}

async fn memberships_are_granted_listed_and_revoked_at_the_next_request(h: &Harness) {
    let listed = ok(h, &["memberships", "list", USER_MANAGER]);
    assert!(
        listed
            .lines()
            .any(|l| l == format!("{ORG_BISTRO}\t-\tmanager")),
        "{listed}"
    );
    let assertion = h.assertion(USER_MANAGER, &["orders.read"]).await;
    ok(
        h,
        &[
            "memberships",
            "revoke",
            USER_MANAGER,
            "--organization",
            ORG_BISTRO,
        ],
    );
    assert!(
        !ok(h, &["memberships", "list", USER_MANAGER])
            .lines()
            .any(|l| l.starts_with(&format!("{ORG_BISTRO}\t-\t")))
    );
    assert_code(
        h.authorize(&assertion, "orders.read", ORG_BISTRO, None)
            .await,
        ErrorCode::ResourceForbidden,
    );
    ok(
        h,
        &[
            "memberships",
            "grant",
            USER_MANAGER,
            "--organization",
            ORG_BISTRO,
            "--location",
            "loc_granted",
            "--role",
            "staff",
        ],
    );
    let listed = ok(h, &["memberships", "list", USER_MANAGER]);
    assert!(
        listed
            .lines()
            .any(|l| l == format!("{ORG_BISTRO}\tloc_granted\tstaff")),
        "{listed}"
    );
    assert!(
        h.authorize(&assertion, "orders.read", ORG_BISTRO, Some("loc_granted"))
            .await
            .is_ok()
    );
    let (success, _, err) = cli(h, &["memberships", "list", "usr_nobody"]);
    assert!(!success && !err.is_empty());
}

async fn roles_define_what_memberships_grant_at_the_next_request(h: &Harness) {
    let listed = ok(h, &["roles", "list"]);
    assert!(
        listed.lines().any(|l| l == "manager\torders.read"),
        "{listed}"
    );
    let assertion = h.assertion(USER_MANAGER, &["orders.read"]).await;
    ok(
        h,
        &[
            "roles",
            "set",
            "manager",
            "--permission",
            "location.read catalog.read",
        ],
    );
    let listed = ok(h, &["roles", "list"]);
    let manager: Vec<&str> = listed
        .lines()
        .filter(|l| l.starts_with("manager\t"))
        .collect();
    assert_eq!(manager, ["manager\tcatalog.read", "manager\tlocation.read"]);
    assert_code(
        h.authorize(&assertion, "orders.read", ORG_BISTRO, None)
            .await,
        ErrorCode::ResourceForbidden,
    );
    ok(
        h,
        &["roles", "set", "manager", "--permission", "orders.read"],
    );
    assert!(
        h.authorize(&assertion, "orders.read", ORG_BISTRO, None)
            .await
            .is_ok()
    );
    let (success, _, err) = cli(
        h,
        &["roles", "set", "manager", "--permission", "orders.delete"],
    );
    assert!(!success && err.contains("unknown scope"), "{err}");
}

async fn removed_clients_lose_their_tokens_and_service_accounts_their_user(h: &Harness) {
    ok(
        h,
        &[
            "clients",
            "add",
            "short-lived",
            "--name",
            "Short lived",
            "--redirect-uri",
            "https://app.example/cb",
        ],
    );
    let token = h
        .app
        .issue_access_token(IssueTokenRequest {
            user_id: USER_MANAGER.to_owned(),
            client_id: "short-lived".to_owned(),
            scopes: vec!["orders.read".to_owned()],
            resource: RESOURCE.to_owned(),
            ttl: None,
        })
        .await
        .expect("token issued");
    assert!(h.authenticate(&token.access_token, RESOURCE).await.is_ok());
    ok(h, &["clients", "remove", "short-lived"]);
    assert_unauthenticated(
        h.authenticate(&token.access_token, RESOURCE).await,
        "session_revoked",
    );
    assert!(line_of(&ok(h, &["clients", "list"]), "short-lived").is_none());
    let (success, _, err) = cli(h, &["clients", "remove", "short-lived"]);
    assert!(!success && err.contains("not found"), "{err}");

    ok(
        h,
        &[
            "clients",
            "add",
            "reporting",
            "--name",
            "Reporting",
            "--kind",
            "service",
            "--scope",
            "orders.read",
        ],
    );
    assert!(line_of(&ok(h, &["users", "list"]), "svc_reporting").is_some());
    ok(h, &["clients", "remove", "reporting"]);
    assert!(line_of(&ok(h, &["users", "list"]), "svc_reporting").is_none());
    let (success, _, _) = cli(h, &["memberships", "list", "svc_reporting"]);
    assert!(!success, "the service user went with its client");
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
        added_users_sign_in_with_their_password_and_their_status_is_read_live,
        memberships_are_granted_listed_and_revoked_at_the_next_request,
        roles_define_what_memberships_grant_at_the_next_request,
        removed_clients_lose_their_tokens_and_service_accounts_their_user,
    ],
}
