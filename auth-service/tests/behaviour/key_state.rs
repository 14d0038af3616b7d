//! A retired or deleted signing key stops verifying at the next request on
//! every replica — not at their next periodic reload — and a replica whose
//! own signing key was retired elsewhere signs with the current one instead.
//! Two auth-service replicas on one database, periodic reload an hour away.

use chataigne_auth::AuthApp;
use chataigne_common::demo::USER_MANAGER;

use crate::oauth_support::full_flow;
use crate::support::{Backend, Harness, RESOURCE, assert_unauthenticated, parts};

fn kid(token: &str) -> String {
    parts(token).0["kid"].as_str().unwrap().to_owned()
}

async fn two_replicas(backend: Backend) {
    let Some(a) = Harness::start_with(backend, |c| c.key_reload_secs = 3600).await else {
        return;
    };
    let mut config = crate::support::config(&a.db_url);
    config.key_reload_secs = 3600;
    let b = Harness::serve(
        AuthApp::build(config).await.unwrap(),
        backend,
        a.db_url.clone(),
    )
    .await;

    let first = a.token(USER_MANAGER, &["orders.read"]).await;
    let first_kid = kid(&first.access_token);
    for replica in [&a, &b] {
        assert!(
            replica
                .authenticate(&first.access_token, RESOURCE)
                .await
                .is_ok()
        );
    }
    // Replica B rotates; the operator retires the first key (the real binary).
    let second_kid = b.app.rotate_signing_key().await.unwrap();
    crate::operator::ok(&a, &["keys", "retire", &first_kid]);
    for replica in [&a, &b] {
        assert_unauthenticated(
            replica.authenticate(&first.access_token, RESOURCE).await,
            "token_invalid",
        );
    }
    // A still held the retired key as its signer: what it issues now is
    // signed with the current key, and verifies everywhere.
    let issued = a.token(USER_MANAGER, &["orders.read"]).await;
    assert_eq!(kid(&issued.access_token), second_kid);
    let flow = full_flow(&a, "orders.read").await;
    let from_oauth = flow["access_token"].as_str().unwrap().to_owned();
    assert_eq!(kid(&from_oauth), second_kid);
    for replica in [&a, &b] {
        assert!(
            replica
                .authenticate(&issued.access_token, RESOURCE)
                .await
                .is_ok()
        );
        assert!(replica.authenticate(&from_oauth, RESOURCE).await.is_ok());
    }
    // A key deleted from the database stops verifying as well.
    let third_kid = a.app.rotate_signing_key().await.unwrap();
    a.execute(format!(
        "DELETE FROM signing_keys WHERE kid = '{second_kid}'"
    ))
    .await;
    for replica in [&a, &b] {
        assert_unauthenticated(
            replica.authenticate(&issued.access_token, RESOURCE).await,
            "token_invalid",
        );
    }
    let last = b.token(USER_MANAGER, &["orders.read"]).await;
    assert_eq!(
        kid(&last.access_token),
        third_kid,
        "B signs with a live key"
    );
    assert!(a.authenticate(&last.access_token, RESOURCE).await.is_ok());
    drop(b);
    a.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_retired_or_deleted_key_stops_verifying_on_every_replica() {
    two_replicas(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_retired_or_deleted_key_stops_verifying_on_every_replica() {
    two_replicas(Backend::Postgres).await;
}
