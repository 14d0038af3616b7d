//! Start-up and management behaviour: a restart on the same database keeps
//! the signing key and re-seeds idempotently; management calls validate their
//! input; a dead database fails fast.

use std::time::Duration;

use chataigne_auth::{AuthApp, AuthError};
use chataigne_common::demo::{DEMO_CLIENT_ID, USER_MANAGER, USER_STAFF};
use secrecy::SecretString;

use crate::support::{Harness, RESOURCE, config};

async fn a_restart_keeps_the_key_and_reseeds_idempotently(h: &Harness) {
    let issued = h.token(USER_MANAGER, &["orders.read"]).await;
    h.app.set_user_status(USER_STAFF, "banned").await.unwrap();
    // A second instance on the same database (like a restart or a replica).
    let again = AuthApp::build(config(&h.db_url)).await.unwrap();
    assert_eq!(again.jwks(), h.app.jwks());
    let authenticated = again
        .authenticate(&issued.access_token, RESOURCE)
        .await
        .unwrap();
    assert_eq!(authenticated.principal.user_id, USER_MANAGER);
    // The seed did not overwrite live changes.
    let staff = again
        .issue_access_token(chataigne_auth::IssueTokenRequest {
            user_id: USER_STAFF.into(),
            client_id: DEMO_CLIENT_ID.into(),
            scopes: vec!["orders.read".into()],
            resource: RESOURCE.into(),
            ttl: Some(Duration::from_secs(60)),
        })
        .await
        .unwrap();
    assert!(matches!(
        again.authenticate(&staff.access_token, RESOURCE).await,
        Err(AuthError::Unauthenticated(
            chataigne_auth::AuthFailure::UserInactive
        ))
    ));
}

async fn management_calls_validate_and_report_unknown_names(h: &Harness) {
    let app = &h.app;
    assert!(matches!(
        app.set_user_status(USER_MANAGER, "deleted").await,
        Err(AuthError::InvalidArgument {
            field: "status",
            ..
        })
    ));
    assert!(matches!(
        app.set_user_status("usr_nobody", "active").await,
        Err(AuthError::NotFound { .. })
    ));
    assert!(matches!(
        app.revoke_session("ses_nothing").await,
        Err(AuthError::NotFound { .. })
    ));
    assert!(matches!(
        app.set_client_enabled("no-client", false).await,
        Err(AuthError::NotFound { .. })
    ));
    assert!(matches!(
        app.set_consent_scopes(USER_MANAGER, DEMO_CLIENT_ID, &["orders.nuke"])
            .await,
        Err(AuthError::InvalidArgument {
            field: "scopes",
            ..
        })
    ));
    let unknown_scope = app
        .issue_access_token(chataigne_auth::IssueTokenRequest {
            user_id: USER_MANAGER.into(),
            client_id: DEMO_CLIENT_ID.into(),
            scopes: vec!["root".into()],
            resource: RESOURCE.into(),
            ttl: None,
        })
        .await;
    assert!(matches!(
        unknown_scope,
        Err(AuthError::InvalidArgument { .. })
    ));
    let unknown_client = app
        .issue_access_token(chataigne_auth::IssueTokenRequest {
            user_id: USER_MANAGER.into(),
            client_id: "nope".into(),
            scopes: vec!["orders.read".into()],
            resource: RESOURCE.into(),
            ttl: None,
        })
        .await;
    assert!(matches!(
        unknown_client,
        Err(AuthError::NotFound { what: "client" })
    ));

    // A registered client works like the demo one.
    app.register_client(
        "partner",
        "Partner assistant",
        &["https://partner.example/cb"],
    )
    .await
    .unwrap();
    let issued = app
        .issue_access_token(chataigne_auth::IssueTokenRequest {
            user_id: USER_MANAGER.into(),
            client_id: "partner".into(),
            scopes: vec!["orders.read".into()],
            resource: RESOURCE.into(),
            ttl: Some(Duration::from_secs(30)),
        })
        .await
        .unwrap();
    let principal = h
        .authenticate(&issued.access_token, RESOURCE)
        .await
        .unwrap()
        .principal
        .unwrap();
    assert_eq!(principal.client_id, "partner");
    assert!(format!("{issued:?}").contains("redacted"));
    assert!(!format!("{issued:?}").contains(&issued.access_token));
    assert!(matches!(
        app.register_client("bad", "Bad", &["javascript:alert(1)"])
            .await,
        Err(AuthError::InvalidArgument { .. })
    ));
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
        a_restart_keeps_the_key_and_reseeds_idempotently,
        management_calls_validate_and_report_unknown_names,
    ],
}

// Virtual time: the retry pauses and the connect timeout run on the tokio
// clock, so the bound is checked without waiting for it.
#[tokio::test(start_paused = true)]
async fn an_unreachable_postgres_is_given_up_on_after_the_startup_bound() {
    let mut config = config("postgres://chataigne@127.0.0.1:1/auth");
    config.database.url = SecretString::from("postgres://chataigne:pw@127.0.0.1:1/auth".to_owned());
    config.database.connect_timeout_ms = 500;
    config.startup.max_wait_secs = 1;
    let started = tokio::time::Instant::now();
    let error = AuthApp::build(config).await.err().expect("no database");
    assert!(started.elapsed() < Duration::from_secs(5));
    let error = format!("{error:#}");
    assert!(!error.contains(":pw@"), "the URL never leaks: {error}");
    assert!(
        error.contains("postgres://127.0.0.1:1/auth not available"),
        "{error}"
    );
}

#[tokio::test]
async fn an_in_memory_sqlite_database_works() {
    let app = AuthApp::build(config("sqlite::memory:")).await.unwrap();
    let issued = app
        .issue_access_token(chataigne_auth::IssueTokenRequest {
            user_id: USER_MANAGER.into(),
            client_id: DEMO_CLIENT_ID.into(),
            scopes: vec!["orders.read".into()],
            resource: RESOURCE.into(),
            ttl: None,
        })
        .await
        .unwrap();
    let authenticated = app
        .authenticate(&issued.access_token, RESOURCE)
        .await
        .unwrap();
    let principal = app
        .authorize(
            &authenticated.assertion,
            "orders.read",
            chataigne_common::demo::ORG_BISTRO,
            None,
        )
        .await
        .unwrap();
    assert_eq!(principal.user_id, USER_MANAGER);
}
