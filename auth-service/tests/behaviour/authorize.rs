//! Authorize: consented scope ∩ live role permissions ∩ live membership of the
//! target's owner (organization or location); platform admins still need the scope.

use chataigne_common::ErrorCode;
use chataigne_common::demo::{
    LOC_BROOKLYN, LOC_LYON, LOC_PARIS, ORG_BISTRO, ORG_HARBOR, USER_ADMIN, USER_ANALYST,
    USER_MANAGER, USER_STAFF,
};

use crate::support::{Harness, assert_code};

const ORDERS: &[&str] = &["orders.read", "orders.write", "customers.read"];

#[track_caller]
fn assert_forbidden<T: std::fmt::Debug>(result: Result<T, tonic::Status>) {
    let status = result.as_ref().err().cloned();
    assert_code(result, ErrorCode::ResourceForbidden);
    let status = status.unwrap();
    assert_eq!(
        status.message(),
        ErrorCode::ResourceForbidden.default_message()
    );
    assert!(
        chataigne_common::codes::decode_status(&status)
            .metadata
            .is_empty()
    );
}

async fn an_organization_manager_is_allowed_on_the_organization_and_its_locations(h: &Harness) {
    let assertion = h.assertion(USER_MANAGER, ORDERS).await;
    let response = h
        .authorize(&assertion, "orders.write", ORG_BISTRO, None)
        .await
        .unwrap();
    assert_eq!(response.principal.unwrap().user_id, USER_MANAGER);
    for location in [LOC_PARIS, LOC_LYON] {
        h.authorize(&assertion, "orders.read", ORG_BISTRO, Some(location))
            .await
            .unwrap();
    }
}

async fn location_staff_are_allowed_only_on_their_location(h: &Harness) {
    let assertion = h.assertion(USER_STAFF, ORDERS).await;
    h.authorize(&assertion, "orders.write", ORG_BISTRO, Some(LOC_PARIS))
        .await
        .unwrap();
    assert_forbidden(
        h.authorize(&assertion, "orders.read", ORG_BISTRO, Some(LOC_LYON))
            .await,
    );
    assert_forbidden(
        h.authorize(&assertion, "orders.read", ORG_BISTRO, None)
            .await,
    );
}

async fn another_tenant_is_forbidden(h: &Harness) {
    let assertion = h.assertion(USER_MANAGER, ORDERS).await;
    assert_forbidden(
        h.authorize(&assertion, "orders.read", ORG_HARBOR, None)
            .await,
    );
    assert_forbidden(
        h.authorize(&assertion, "orders.read", ORG_HARBOR, Some(LOC_BROOKLYN))
            .await,
    );
    // An identifier that exists nowhere looks the same.
    assert_forbidden(
        h.authorize(&assertion, "orders.read", "org_nope", None)
            .await,
    );
}

async fn a_role_without_the_permission_is_forbidden(h: &Harness) {
    // Staff hold orders.* but not customers.read, even with the scope consented.
    let staff = h.assertion(USER_STAFF, ORDERS).await;
    assert_forbidden(
        h.authorize(&staff, "customers.read", ORG_BISTRO, Some(LOC_PARIS))
            .await,
    );
    // Analysts read orders but may not write them.
    let analyst = h.assertion(USER_ANALYST, ORDERS).await;
    h.authorize(&analyst, "orders.read", ORG_HARBOR, None)
        .await
        .unwrap();
    assert_forbidden(
        h.authorize(&analyst, "orders.write", ORG_HARBOR, None)
            .await,
    );
}

async fn a_missing_scope_is_scope_required(h: &Harness) {
    let assertion = h.assertion(USER_MANAGER, &["orders.read"]).await;
    let decoded = assert_code(
        h.authorize(&assertion, "orders.write", ORG_BISTRO, None)
            .await,
        ErrorCode::ScopeRequired,
    );
    assert_eq!(
        decoded.metadata,
        vec![("scope".to_owned(), "orders.write".to_owned())]
    );
    assert_eq!(decoded.message, ErrorCode::ScopeRequired.default_message());
}

async fn a_platform_admin_needs_the_scope_but_no_membership(h: &Harness) {
    let assertion = h.assertion(USER_ADMIN, &["orders.read"]).await;
    let principal = h
        .authorize(&assertion, "orders.read", ORG_HARBOR, Some(LOC_BROOKLYN))
        .await
        .unwrap()
        .principal
        .unwrap();
    assert!(principal.platform_admin);
    h.authorize(&assertion, "orders.read", ORG_BISTRO, None)
        .await
        .unwrap();
    assert_code(
        h.authorize(&assertion, "orders.write", ORG_BISTRO, None)
            .await,
        ErrorCode::ScopeRequired,
    );
    // Admin rights are read live.
    h.app.set_platform_admin(USER_ADMIN, false).await.unwrap();
    assert_forbidden(
        h.authorize(&assertion, "orders.read", ORG_HARBOR, None)
            .await,
    );
}

async fn a_removed_membership_is_forbidden_at_the_next_call(h: &Harness) {
    let assertion = h.assertion(USER_MANAGER, ORDERS).await;
    h.authorize(&assertion, "orders.read", ORG_BISTRO, Some(LOC_LYON))
        .await
        .unwrap();
    h.app
        .remove_membership(USER_MANAGER, ORG_BISTRO, None)
        .await
        .unwrap();
    assert_forbidden(
        h.authorize(&assertion, "orders.read", ORG_BISTRO, Some(LOC_LYON))
            .await,
    );
    assert_forbidden(
        h.authorize(&assertion, "orders.read", ORG_BISTRO, None)
            .await,
    );

    // A new location-level membership applies at the next call as well.
    h.app
        .add_membership(USER_MANAGER, ORG_BISTRO, Some(LOC_LYON), "staff")
        .await
        .unwrap();
    h.authorize(&assertion, "orders.read", ORG_BISTRO, Some(LOC_LYON))
        .await
        .unwrap();
    assert_forbidden(
        h.authorize(&assertion, "customers.read", ORG_BISTRO, Some(LOC_LYON))
            .await,
    );
    assert_forbidden(
        h.authorize(&assertion, "orders.read", ORG_BISTRO, Some(LOC_PARIS))
            .await,
    );
}

async fn malformed_requests_are_invalid_arguments(h: &Harness) {
    let assertion = h.assertion(USER_MANAGER, ORDERS).await;
    let decoded = assert_code(
        h.authorize(&assertion, "orders.read", "", None).await,
        ErrorCode::InvalidArguments,
    );
    assert_eq!(decoded.violations[0].field, "organization_id");
    let decoded = assert_code(
        h.authorize(&assertion, "orders.delete", ORG_BISTRO, None)
            .await,
        ErrorCode::InvalidArguments,
    );
    assert_eq!(decoded.violations[0].field, "permission");
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
        an_organization_manager_is_allowed_on_the_organization_and_its_locations,
        location_staff_are_allowed_only_on_their_location,
        another_tenant_is_forbidden,
        a_role_without_the_permission_is_forbidden,
        a_missing_scope_is_scope_required,
        a_platform_admin_needs_the_scope_but_no_membership,
        a_removed_membership_is_forbidden_at_the_next_call,
        malformed_requests_are_invalid_arguments,
    ],
}
