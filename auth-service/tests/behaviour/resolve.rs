//! ResolveAccess: the organizations and locations where a permission is
//! currently held, every tenant for platform admins, scope still required.

use chataigne_common::ErrorCode;
use chataigne_common::demo::{
    LOC_PARIS, ORG_BISTRO, ORG_HARBOR, USER_ADMIN, USER_ANALYST, USER_MANAGER, USER_STAFF,
};

use crate::support::{Harness, assert_code, assert_unauthenticated};

const SCOPES: &[&str] = &["orders.read", "customers.read", "analytics.read"];

async fn organization_members_resolve_to_their_organizations(h: &Harness) {
    let assertion = h.assertion(USER_MANAGER, SCOPES).await;
    let access = h.resolve(&assertion, "orders.read").await.unwrap();
    assert!(!access.all_tenants);
    assert_eq!(access.organization_ids, [ORG_BISTRO]);
    assert!(access.location_ids.is_empty());
    assert_eq!(access.principal.unwrap().user_id, USER_MANAGER);

    let analyst = h.assertion(USER_ANALYST, SCOPES).await;
    let access = h.resolve(&analyst, "analytics.read").await.unwrap();
    assert_eq!(access.organization_ids, [ORG_HARBOR]);
}

async fn location_members_resolve_to_their_locations(h: &Harness) {
    let assertion = h.assertion(USER_STAFF, SCOPES).await;
    let access = h.resolve(&assertion, "orders.read").await.unwrap();
    assert!(access.organization_ids.is_empty());
    assert_eq!(access.location_ids, [LOC_PARIS]);
    // Consented, but no role of theirs grants it: nothing.
    let access = h.resolve(&assertion, "customers.read").await.unwrap();
    assert!(!access.all_tenants);
    assert!(access.organization_ids.is_empty() && access.location_ids.is_empty());
}

async fn platform_admins_resolve_to_every_tenant(h: &Harness) {
    let assertion = h.assertion(USER_ADMIN, SCOPES).await;
    let access = h.resolve(&assertion, "orders.read").await.unwrap();
    assert!(access.all_tenants);
    assert_code(
        h.resolve(&assertion, "orders.write").await,
        ErrorCode::ScopeRequired,
    );
}

async fn resolution_follows_live_changes(h: &Harness) {
    let assertion = h.assertion(USER_MANAGER, SCOPES).await;
    let decoded = assert_code(
        h.resolve(&assertion, "orders.write").await,
        ErrorCode::ScopeRequired,
    );
    assert_eq!(
        decoded.metadata,
        vec![("scope".to_owned(), "orders.write".to_owned())]
    );
    h.app
        .add_membership(USER_MANAGER, ORG_HARBOR, None, "analyst")
        .await
        .unwrap();
    let access = h.resolve(&assertion, "orders.read").await.unwrap();
    assert_eq!(access.organization_ids, [ORG_BISTRO, ORG_HARBOR]);
    h.app
        .remove_membership(USER_MANAGER, ORG_BISTRO, None)
        .await
        .unwrap();
    let access = h.resolve(&assertion, "customers.read").await.unwrap();
    assert!(access.organization_ids.is_empty());
    let session = access.principal.unwrap().session_id;
    h.app.revoke_session(&session).await.unwrap();
    assert_unauthenticated(
        h.resolve(&assertion, "orders.read").await,
        "session_revoked",
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
        organization_members_resolve_to_their_organizations,
        location_members_resolve_to_their_locations,
        platform_admins_resolve_to_every_tenant,
        resolution_follows_live_changes,
    ],
}
