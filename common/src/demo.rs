//! The demo tenant set seeded in embedded mode and used by the tests: the
//! identifiers both services agree on (organizations and locations owned by the
//! tool-service, users and memberships owned by the auth-service).

/// A demo organization.
pub struct DemoOrganization {
    pub id: &'static str,
    pub name: &'static str,
}

/// A demo location with its owner organization.
pub struct DemoLocation {
    pub id: &'static str,
    pub organization_id: &'static str,
    pub name: &'static str,
    pub timezone: &'static str,
    pub currency: &'static str,
    pub line1: &'static str,
    pub city: &'static str,
    pub postal_code: &'static str,
    pub country: &'static str,
}

/// Where a membership applies.
pub enum DemoTarget {
    Organization(&'static str),
    Location {
        organization_id: &'static str,
        location_id: &'static str,
    },
}

pub struct DemoMembership {
    pub target: DemoTarget,
    pub role: &'static str,
}

pub struct DemoUser {
    pub id: &'static str,
    pub email: &'static str,
    pub display_name: &'static str,
    /// `active`, `revoked` or `banned`.
    pub status: &'static str,
    pub platform_admin: bool,
    pub memberships: &'static [DemoMembership],
}

pub const ORG_BISTRO: &str = "org_01bistrochataigne";
pub const ORG_HARBOR: &str = "org_01harborstreet";

pub const LOC_PARIS: &str = "loc_01paris11";
pub const LOC_LYON: &str = "loc_01lyoncroixrousse";
pub const LOC_BORDEAUX: &str = "loc_01bordeauxchartrons";
pub const LOC_BROOKLYN: &str = "loc_01brooklyn";
pub const LOC_BOSTON: &str = "loc_01bostonseaport";

pub const ORGANIZATIONS: &[DemoOrganization] = &[
    DemoOrganization {
        id: ORG_BISTRO,
        name: "Bistro Châtaigne",
    },
    DemoOrganization {
        id: ORG_HARBOR,
        name: "Harbor Street Kitchen",
    },
];

pub const LOCATIONS: &[DemoLocation] = &[
    DemoLocation {
        id: LOC_PARIS,
        organization_id: ORG_BISTRO,
        name: "Châtaigne Paris 11e",
        timezone: "Europe/Paris",
        currency: "EUR",
        line1: "42 rue Oberkampf",
        city: "Paris",
        postal_code: "75011",
        country: "FR",
    },
    DemoLocation {
        id: LOC_LYON,
        organization_id: ORG_BISTRO,
        name: "Châtaigne Lyon Croix-Rousse",
        timezone: "Europe/Paris",
        currency: "EUR",
        line1: "8 place de la Croix-Rousse",
        city: "Lyon",
        postal_code: "69004",
        country: "FR",
    },
    DemoLocation {
        id: LOC_BORDEAUX,
        organization_id: ORG_BISTRO,
        name: "Châtaigne Bordeaux Chartrons",
        timezone: "Europe/Paris",
        currency: "EUR",
        line1: "27 quai des Chartrons",
        city: "Bordeaux",
        postal_code: "33000",
        country: "FR",
    },
    DemoLocation {
        id: LOC_BROOKLYN,
        organization_id: ORG_HARBOR,
        name: "Harbor Street Brooklyn",
        timezone: "America/New_York",
        currency: "USD",
        line1: "210 Atlantic Avenue",
        city: "Brooklyn",
        postal_code: "11201",
        country: "US",
    },
    DemoLocation {
        id: LOC_BOSTON,
        organization_id: ORG_HARBOR,
        name: "Harbor Street Seaport",
        timezone: "America/New_York",
        currency: "USD",
        line1: "75 Northern Avenue",
        city: "Boston",
        postal_code: "02210",
        country: "US",
    },
];

/// Manager of the whole Bistro organization: the user of the printed demo token.
pub const USER_MANAGER: &str = "usr_01camillemartin";
/// Staff member of one Paris location only.
pub const USER_STAFF: &str = "usr_01louisbernard";
/// Analyst of the Harbor organization.
pub const USER_ANALYST: &str = "usr_01avachen";
/// Owner of the Harbor organization.
pub const USER_OWNER: &str = "usr_01samrivera";
/// A former manager whose account was revoked.
pub const USER_REVOKED: &str = "usr_01formeremployee";
/// A platform administrator without any membership.
pub const USER_ADMIN: &str = "usr_01platformops";

pub const USERS: &[DemoUser] = &[
    DemoUser {
        id: USER_MANAGER,
        email: "camille.martin@bistro.example",
        display_name: "Camille Martin",
        status: "active",
        platform_admin: false,
        memberships: &[DemoMembership {
            target: DemoTarget::Organization(ORG_BISTRO),
            role: "manager",
        }],
    },
    DemoUser {
        id: USER_STAFF,
        email: "louis.bernard@bistro.example",
        display_name: "Louis Bernard",
        status: "active",
        platform_admin: false,
        memberships: &[DemoMembership {
            target: DemoTarget::Location {
                organization_id: ORG_BISTRO,
                location_id: LOC_PARIS,
            },
            role: "staff",
        }],
    },
    DemoUser {
        id: USER_ANALYST,
        email: "ava.chen@harbor.example",
        display_name: "Ava Chen",
        status: "active",
        platform_admin: false,
        memberships: &[DemoMembership {
            target: DemoTarget::Organization(ORG_HARBOR),
            role: "analyst",
        }],
    },
    DemoUser {
        id: USER_OWNER,
        email: "sam.rivera@harbor.example",
        display_name: "Sam Rivera",
        status: "active",
        platform_admin: false,
        memberships: &[DemoMembership {
            target: DemoTarget::Organization(ORG_HARBOR),
            role: "owner",
        }],
    },
    DemoUser {
        id: USER_REVOKED,
        email: "former.employee@bistro.example",
        display_name: "Former Employee",
        status: "revoked",
        platform_admin: false,
        memberships: &[DemoMembership {
            target: DemoTarget::Organization(ORG_BISTRO),
            role: "manager",
        }],
    },
    DemoUser {
        id: USER_ADMIN,
        email: "ops@chataigne.example",
        display_name: "Chataigne Operations",
        status: "active",
        platform_admin: true,
        memberships: &[],
    },
];

/// The demo password of every demo user (embedded mode only).
pub const DEMO_PASSWORD: &str = "chataigne-demo";

/// The pre-registered demo OAuth client.
pub const DEMO_CLIENT_ID: &str = "chataigne-demo-assistant";

/// Role → permissions. Roles are data in the auth-service; this is the demo set.
pub const ROLE_PERMISSIONS: &[(&str, &[&str])] = &[
    ("owner", crate::scopes::BUSINESS_SCOPES),
    // Managers hold every business permission of their tenant; what sets them
    // apart from owners is data elsewhere (billing, staff), not permissions.
    ("manager", crate::scopes::BUSINESS_SCOPES),
    (
        "staff",
        &[
            "location.read",
            "locationStatusSettings.read",
            "catalog.read",
            "catalog.updateAvailability",
            "orders.read",
            "orders.write",
            "conversations.read",
        ],
    ),
    (
        "analyst",
        &[
            "businessOrganization.read",
            "location.read",
            "catalog.read",
            "orders.read",
            "analytics.read",
            "discounts.read",
        ],
    ),
];

/// The scopes the printed demo token carries: every business scope.
pub fn demo_token_scopes() -> Vec<&'static str> {
    crate::scopes::IDENTITY_SCOPES
        .iter()
        .chain(crate::scopes::BUSINESS_SCOPES)
        .copied()
        .collect()
}
