//! The OAuth scopes of the product (SPEC §4): identity scopes, business scopes in
//! `resource.action` form, and the platform-admin scopes of the creation tools.
//! One table, [`SCOPES`], names each scope once with its family, whether it
//! changes something, and the labels people see on the consent page (English
//! and French); every
//! list below is derived from it.

/// Where a scope belongs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Granted alongside business scopes (`openid`, `profile`, `offline_access`).
    Identity,
    /// A business permission, also the permission a role may hold.
    Business,
    /// A platform-administration tool; it also needs a live platform-admin role.
    Admin,
}

/// Whether a scope only reads or lets a client change something.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    Read,
    /// Seed 002: granted only to trusted clients.
    Write,
}

/// One scope of the product.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Scope {
    /// The scope as written in tokens, requests and metadata documents.
    pub name: &'static str,
    pub family: Family,
    pub access: Access,
    /// A short description for people (the consent page), in English.
    pub label: &'static str,
    /// The same description in French.
    pub label_fr: &'static str,
}

impl Scope {
    /// The scope named `name`, if the product knows it.
    pub fn find(name: &str) -> Option<&'static Scope> {
        SCOPES.iter().find(|scope| scope.name == name)
    }

    /// Whether this scope lets a client change something.
    pub fn is_write(&self) -> bool {
        self.access == Access::Write
    }
}

/// An identity scope of the table.
const fn identity(name: &'static str, label: &'static str, label_fr: &'static str) -> Scope {
    Scope {
        name,
        family: Family::Identity,
        access: Access::Read,
        label,
        label_fr,
    }
}

/// A business read scope of the table.
const fn read(name: &'static str, label: &'static str, label_fr: &'static str) -> Scope {
    Scope {
        name,
        family: Family::Business,
        access: Access::Read,
        label,
        label_fr,
    }
}

/// A business write scope of the table.
const fn write(name: &'static str, label: &'static str, label_fr: &'static str) -> Scope {
    Scope {
        name,
        family: Family::Business,
        access: Access::Write,
        label,
        label_fr,
    }
}

/// A platform-admin scope of the table (each one a write).
const fn admin(name: &'static str, label: &'static str, label_fr: &'static str) -> Scope {
    Scope {
        name,
        family: Family::Admin,
        access: Access::Write,
        label,
        label_fr,
    }
}

/// Every scope the product knows: identity, then business, then
/// platform-admin scopes (the order the metadata documents list them in).
pub const SCOPES: &[Scope] = &[
    identity("openid", "Confirm who you are", "Confirmer qui vous êtes"),
    identity("profile", "See your name", "Voir votre nom"),
    identity(
        "offline_access",
        "Stay connected when you are away",
        "Rester connecté en votre absence",
    ),
    read(
        "businessOrganization.read",
        "See your organizations",
        "Voir vos organisations",
    ),
    read(
        "location.read",
        "See your locations",
        "Voir vos établissements",
    ),
    read(
        "storeSettings.read",
        "See store settings",
        "Voir les réglages de la boutique",
    ),
    read(
        "orderSettings.read",
        "See order settings",
        "Voir les réglages des commandes",
    ),
    read(
        "openingHoursSettings.read",
        "See opening hours",
        "Voir les horaires d'ouverture",
    ),
    read(
        "deliverySettings.read",
        "See delivery settings",
        "Voir les réglages de livraison",
    ),
    read(
        "paymentMethodSettings.read",
        "See payment method settings",
        "Voir les moyens de paiement",
    ),
    read(
        "settings.read",
        "See location settings",
        "Voir les réglages des établissements",
    ),
    read(
        "locationStatusSettings.read",
        "See whether locations accept orders",
        "Voir si les établissements prennent des commandes",
    ),
    write(
        "locationStatusSettings.write",
        "Pause or resume order taking",
        "Suspendre ou reprendre la prise de commandes",
    ),
    read("catalog.read", "See your catalog", "Voir votre carte"),
    write(
        "catalog.updateAvailability",
        "Mark catalog items sold out or available",
        "Marquer des produits de la carte épuisés ou disponibles",
    ),
    read("orders.read", "See orders", "Voir les commandes"),
    write(
        "orders.write",
        "Change order statuses",
        "Changer le statut des commandes",
    ),
    read(
        "customers.read",
        "See customers (contact details masked)",
        "Voir les clients (coordonnées masquées)",
    ),
    read(
        "conversations.read",
        "Read customer conversations",
        "Lire les conversations avec les clients",
    ),
    write(
        "conversations.write",
        "Send messages in customer conversations",
        "Envoyer des messages dans les conversations avec les clients",
    ),
    read("analytics.read", "See analytics", "Voir les statistiques"),
    read("discounts.read", "See discounts", "Voir les remises"),
    read(
        "integrations.read",
        "See integrations and their health",
        "Voir les intégrations et leur état",
    ),
    read(
        "ai.read",
        "See assistant settings",
        "Voir les réglages de l'assistant",
    ),
    read(
        "loyalty.read",
        "See loyalty settings",
        "Voir les réglages de fidélité",
    ),
    read(
        "referrals.read",
        "See referral settings",
        "Voir les réglages de parrainage",
    ),
    read(
        "notifications.read",
        "See notification settings",
        "Voir les réglages des notifications",
    ),
    admin(
        "admin.organizations.create",
        "Create organizations (platform administration)",
        "Créer des organisations (administration de la plateforme)",
    ),
    admin(
        "admin.locations.create",
        "Create locations (platform administration)",
        "Créer des établissements (administration de la plateforme)",
    ),
];

/// Whether `scope` falls in `family` and, when `write_only`, is a write scope.
const fn selected(scope: &Scope, family: Family, write_only: bool) -> bool {
    scope.family as u8 == family as u8 && (!write_only || scope.access as u8 == Access::Write as u8)
}

/// How many scopes of [`SCOPES`] are [`selected`].
const fn count(family: Family, write_only: bool) -> usize {
    let mut index = 0;
    let mut found = 0;
    while index < SCOPES.len() {
        if selected(&SCOPES[index], family, write_only) {
            found += 1;
        }
        index += 1;
    }
    found
}

/// The names of the scopes of [`SCOPES`] that are [`selected`], in table order.
const fn names<const N: usize>(family: Family, write_only: bool) -> [&'static str; N] {
    let mut out = [""; N];
    let mut index = 0;
    let mut found = 0;
    while index < SCOPES.len() {
        if selected(&SCOPES[index], family, write_only) {
            out[found] = SCOPES[index].name;
            found += 1;
        }
        index += 1;
    }
    out
}

const IDENTITY: [&str; count(Family::Identity, false)] = names(Family::Identity, false);
const BUSINESS: [&str; count(Family::Business, false)] = names(Family::Business, false);
const ADMIN: [&str; count(Family::Admin, false)] = names(Family::Admin, false);
const BUSINESS_WRITE: [&str; count(Family::Business, true)] = names(Family::Business, true);

/// Identity scopes, granted alongside business scopes.
pub const IDENTITY_SCOPES: &[&str] = &IDENTITY;

/// Business scopes; each is also the permission a role may hold.
pub const BUSINESS_SCOPES: &[&str] = &BUSINESS;

/// Scopes of the platform-administration tools; they also need a live platform-admin role.
pub const ADMIN_SCOPES: &[&str] = &ADMIN;

/// Business scopes that let a client change something (seed 002: granted
/// only to trusted clients); the platform-admin scopes are writes too.
pub const WRITE_SCOPES: &[&str] = &BUSINESS_WRITE;

/// Whether `scope` is one the product knows.
pub fn is_known(scope: &str) -> bool {
    Scope::find(scope).is_some()
}

/// Whether `scope` lets a client change something (a business write scope or
/// a platform-admin scope).
pub fn is_write(scope: &str) -> bool {
    Scope::find(scope).is_some_and(Scope::is_write)
}

/// The consent-page label of `scope`, if the product knows it.
pub fn label(scope: &str) -> Option<&'static str> {
    Scope::find(scope).map(|scope| scope.label)
}

/// The French consent-page label of `scope`, if the product knows it.
pub fn label_fr(scope: &str) -> Option<&'static str> {
    Scope::find(scope).map(|scope| scope.label_fr)
}

/// Every scope the product knows, platform-admin scopes included.
pub fn all() -> impl Iterator<Item = &'static str> {
    SCOPES.iter().map(|scope| scope.name)
}

/// The scopes a client is told to start with (the 401 challenge): the
/// business read scopes. Seed 002: begin with reads, and add each write scope
/// only for a trusted client whose operations need it (write scopes are
/// refused to other clients at `/authorize`).
pub fn suggested() -> impl Iterator<Item = &'static str> {
    SCOPES
        .iter()
        .filter(|scope| scope.family == Family::Business && !scope.is_write())
        .map(|scope| scope.name)
}

/// The scopes public documents list (`scopes_supported` of the metadata
/// documents): identity and business scopes. The platform-admin scopes are
/// documented only in the protected admin area (seed 002).
pub fn public() -> impl Iterator<Item = &'static str> {
    SCOPES
        .iter()
        .filter(|scope| scope.family != Family::Admin)
        .map(|scope| scope.name)
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

    #[test]
    fn the_derived_lists_follow_the_table() {
        assert_eq!(
            IDENTITY_SCOPES,
            ["openid", "profile", "offline_access"].as_slice()
        );
        assert_eq!(
            ADMIN_SCOPES,
            ["admin.organizations.create", "admin.locations.create"].as_slice()
        );
        assert_eq!(
            WRITE_SCOPES,
            [
                "locationStatusSettings.write",
                "catalog.updateAvailability",
                "orders.write",
                "conversations.write",
            ]
            .as_slice()
        );
        assert_eq!(BUSINESS_SCOPES.len(), 24);
        assert_eq!(BUSINESS_SCOPES[0], "businessOrganization.read");
        assert_eq!(BUSINESS_SCOPES[23], "notifications.read");
        let every: Vec<&str> = IDENTITY_SCOPES
            .iter()
            .chain(BUSINESS_SCOPES)
            .chain(ADMIN_SCOPES)
            .copied()
            .collect();
        assert_eq!(all().collect::<Vec<_>>(), every);
    }

    #[test]
    fn every_scope_is_named_once_with_a_label() {
        for (index, scope) in SCOPES.iter().enumerate() {
            assert!(!scope.label.is_empty(), "{}", scope.name);
            assert!(!scope.label_fr.is_empty(), "{}", scope.name);
            assert_ne!(scope.label, scope.label_fr, "{} untranslated", scope.name);
            assert_eq!(label(scope.name), Some(scope.label));
            assert_eq!(label_fr(scope.name), Some(scope.label_fr));
            assert!(
                SCOPES[index + 1..]
                    .iter()
                    .all(|other| other.name != scope.name),
                "{} twice",
                scope.name
            );
        }
        assert_eq!(label("orders.read"), Some("See orders"));
        assert_eq!(label("unknown.scope"), None);
        assert!(!is_known("unknown.scope") && !is_write("unknown.scope"));
    }
}
