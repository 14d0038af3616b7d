//! The grants an assertion carries: read with the live state in one
//! statement at every `Authenticate`, so a membership change shows in the
//! very next assertion, while an unchanged live state gets the same
//! assertion again.

use chataigne_common::demo::{
    LOC_LYON, LOC_PARIS, ORG_BISTRO, USER_ADMIN, USER_MANAGER, USER_STAFF,
};
use serde_json::{Value, json};

use crate::support::{Harness, RESOURCE, parts};

const SCOPES: &[&str] = &["openid", "orders.read", "orders.write", "analytics.read"];

async fn grants_of(h: &Harness, token: &str) -> (String, Value) {
    let response = h.authenticate(token, RESOURCE).await.unwrap();
    let (_, claims) = parts(&response.assertion);
    (response.assertion, claims["grants"].clone())
}

async fn memberships_carry_the_role_permissions_within_the_scopes(h: &Harness) {
    let manager = h.token(USER_MANAGER, SCOPES).await;
    let (_, grants) = grants_of(h, &manager.access_token).await;
    assert_eq!(
        grants,
        json!({"adm": false, "mem": [{
            "org": ORG_BISTRO,
            "perm": ["analytics.read", "orders.read", "orders.write"],
        }]})
    );
    // Staff: a location-level membership, its role without analytics.read.
    let staff = h.token(USER_STAFF, SCOPES).await;
    let (_, grants) = grants_of(h, &staff.access_token).await;
    assert_eq!(grants["mem"][0]["loc"], LOC_PARIS);
    assert_eq!(
        grants["mem"][0]["perm"],
        json!(["orders.read", "orders.write"])
    );
}

async fn a_user_without_memberships_gets_none(h: &Harness) {
    let admin = h.token(USER_ADMIN, SCOPES).await;
    let (_, grants) = grants_of(h, &admin.access_token).await;
    assert_eq!(grants, json!({"adm": true, "mem": []}));
}

async fn a_membership_change_shows_in_the_next_assertion(h: &Harness) {
    let token = h.token(USER_MANAGER, SCOPES).await;
    let (first, grants) = grants_of(h, &token.access_token).await;
    assert_eq!(grants["mem"].as_array().map(Vec::len), Some(1));
    let (again, same) = grants_of(h, &token.access_token).await;
    assert_ne!(again, first, "every call gets an assertion of its own");
    assert_eq!(same, grants);

    h.app
        .remove_membership(USER_MANAGER, ORG_BISTRO, None)
        .await
        .unwrap();
    let (after_removal, grants) = grants_of(h, &token.access_token).await;
    assert_ne!(after_removal, first);
    assert_eq!(grants["mem"], json!([]));

    h.app
        .add_membership(USER_MANAGER, ORG_BISTRO, Some(LOC_LYON), "staff")
        .await
        .unwrap();
    let (_, grants) = grants_of(h, &token.access_token).await;
    assert_eq!(
        grants["mem"],
        json!([{"org": ORG_BISTRO, "loc": LOC_LYON, "perm": ["orders.read", "orders.write"]}])
    );
}

async fn a_role_losing_a_permission_shows_in_the_next_assertion(h: &Harness) {
    let token = h.token(USER_MANAGER, SCOPES).await;
    let (first, _) = grants_of(h, &token.access_token).await;
    h.execute(
        "DELETE FROM role_permissions WHERE role = 'manager' AND permission = 'orders.write'"
            .to_owned(),
    )
    .await;
    let (next, grants) = grants_of(h, &token.access_token).await;
    assert_ne!(next, first);
    assert_eq!(
        grants["mem"][0]["perm"],
        json!(["analytics.read", "orders.read"])
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
        memberships_carry_the_role_permissions_within_the_scopes,
        a_user_without_memberships_gets_none,
        a_membership_change_shows_in_the_next_assertion,
        a_role_losing_a_permission_shows_in_the_next_assertion,
    ],
}
