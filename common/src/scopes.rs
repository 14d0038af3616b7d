//! The OAuth scopes of the product (SPEC §4): identity scopes, business scopes in
//! `resource.action` form, and the platform-admin scopes of the creation tools.

/// Identity scopes, granted alongside business scopes.
pub const IDENTITY_SCOPES: &[&str] = &["openid", "profile", "offline_access"];

/// Business scopes; each is also the permission a role may hold.
pub const BUSINESS_SCOPES: &[&str] = &[
    "businessOrganization.read",
    "location.read",
    "storeSettings.read",
    "orderSettings.read",
    "openingHoursSettings.read",
    "deliverySettings.read",
    "paymentMethodSettings.read",
    "settings.read",
    "locationStatusSettings.read",
    "locationStatusSettings.write",
    "catalog.read",
    "catalog.updateAvailability",
    "orders.read",
    "orders.write",
    "customers.read",
    "conversations.read",
    "conversations.write",
    "analytics.read",
    "discounts.read",
    "integrations.read",
    "ai.read",
    "loyalty.read",
    "referrals.read",
    "notifications.read",
];

/// Scopes of the platform-administration tools; they also need a live platform-admin role.
pub const ADMIN_SCOPES: &[&str] = &["admin.organizations.create", "admin.locations.create"];

/// Whether `scope` is one the product knows.
pub fn is_known(scope: &str) -> bool {
    IDENTITY_SCOPES.contains(&scope)
        || BUSINESS_SCOPES.contains(&scope)
        || ADMIN_SCOPES.contains(&scope)
}

/// Every scope, for `scopes_supported` in metadata documents.
pub fn all() -> impl Iterator<Item = &'static str> {
    IDENTITY_SCOPES
        .iter()
        .chain(BUSINESS_SCOPES)
        .chain(ADMIN_SCOPES)
        .copied()
}
