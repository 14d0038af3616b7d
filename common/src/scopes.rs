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

/// Business scopes that let a client change something (seed 002: granted
/// only to trusted clients); the platform-admin scopes are writes too.
pub const WRITE_SCOPES: &[&str] = &[
    "locationStatusSettings.write",
    "catalog.updateAvailability",
    "orders.write",
    "conversations.write",
];

/// Whether `scope` lets a client change something (a business write scope or
/// a platform-admin scope).
pub fn is_write(scope: &str) -> bool {
    WRITE_SCOPES.contains(&scope) || ADMIN_SCOPES.contains(&scope)
}

/// Every scope the product knows, platform-admin scopes included.
pub fn all() -> impl Iterator<Item = &'static str> {
    IDENTITY_SCOPES
        .iter()
        .chain(BUSINESS_SCOPES)
        .chain(ADMIN_SCOPES)
        .copied()
}

/// The scopes a client is told to start with (the 401 challenge): the
/// business read scopes. Seed 002: begin with reads, and add each write scope
/// only for a trusted client whose operations need it (write scopes are
/// refused to other clients at `/authorize`).
pub fn suggested() -> impl Iterator<Item = &'static str> {
    BUSINESS_SCOPES
        .iter()
        .copied()
        .filter(|scope| !is_write(scope))
}

/// The scopes public documents list (`scopes_supported` of the metadata
/// documents): identity and business scopes. The platform-admin scopes are
/// documented only in the protected admin area (seed 002).
pub fn public() -> impl Iterator<Item = &'static str> {
    IDENTITY_SCOPES.iter().chain(BUSINESS_SCOPES).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_scopes_are_known_business_or_admin_scopes_and_public_ones_exclude_admin() {
        for scope in WRITE_SCOPES {
            assert!(BUSINESS_SCOPES.contains(scope), "{scope}");
        }
        assert!(is_write("orders.write") && is_write("admin.locations.create"));
        assert!(!is_write("orders.read") && !is_write("openid"));
        assert!(public().all(|scope| !ADMIN_SCOPES.contains(&scope)));
        assert_eq!(public().count() + ADMIN_SCOPES.len(), all().count());
        assert!(suggested().all(|scope| BUSINESS_SCOPES.contains(&scope) && !is_write(scope)));
        assert_eq!(
            suggested().count() + WRITE_SCOPES.len(),
            BUSINESS_SCOPES.len()
        );
    }
}
