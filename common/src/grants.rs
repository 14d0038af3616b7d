//! The one authorization decision of the product (SPEC §4), shared by the
//! auth-service's live `Authorize` / `ResolveAccess` and the tool-service's
//! local check of the grants carried in a principal assertion, so that the two
//! cannot drift: the permission must be an effective scope of the principal,
//! then a live platform admin is allowed without membership, anyone else needs
//! a membership on the target's real owner (the organization, or the target's
//! location) whose current role grants the permission.

use serde::{Deserialize, Serialize};

/// Most memberships an assertion carries; a principal with more gets an
/// assertion without grants and is checked by the auth-service as before.
pub const MAX_MEMBERSHIPS: usize = 64;

/// Most bytes the grants may take in an assertion's JSON payload, so that the
/// assertion stays well inside gRPC metadata and the auth-service's credential
/// length limits; above it the grants are left out too.
pub const MAX_GRANTS_BYTES: usize = 4 * 1024;

/// One current membership and the permissions it grants: its role's
/// permissions that are also effective scopes of the principal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Membership {
    #[serde(rename = "org")]
    pub organization_id: String,
    /// `None` for an organization-level membership.
    #[serde(rename = "loc", default, skip_serializing_if = "Option::is_none")]
    pub location_id: Option<String>,
    #[serde(rename = "perm")]
    pub permissions: Vec<String>,
}

/// The live grants of a principal, read when its assertion was signed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grants {
    #[serde(rename = "adm")]
    pub platform_admin: bool,
    #[serde(rename = "mem")]
    pub memberships: Vec<Membership>,
}

/// Why a permission is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The permission is not an effective scope (`MCP_SCOPE_REQUIRED`).
    ScopeRequired(String),
    /// No membership on the target's owner grants it (`MCP_RESOURCE_FORBIDDEN`).
    Forbidden,
}

/// The tenants on which a permission is held (for list tools).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TenantAccess {
    /// Platform admins holding the scope: every tenant.
    pub all_tenants: bool,
    /// Organizations of organization-level memberships granting it.
    pub organization_ids: Vec<String>,
    /// Locations of location-level memberships granting it.
    pub location_ids: Vec<String>,
}

impl TenantAccess {
    /// Builds the answer from the granting memberships `(organization,
    /// location)`, in order, without duplicates.
    pub fn from_memberships<'a>(
        platform_admin: bool,
        granting: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    ) -> TenantAccess {
        if platform_admin {
            return TenantAccess {
                all_tenants: true,
                ..TenantAccess::default()
            };
        }
        let mut access = TenantAccess::default();
        for (organization_id, location_id) in granting {
            let (ids, id) = match location_id {
                None => (&mut access.organization_ids, organization_id),
                Some(location_id) => (&mut access.location_ids, location_id),
            };
            if !ids.iter().any(|known| known == id) {
                ids.push(id.to_owned());
            }
        }
        access
    }
}

/// Where the principal stands towards a target's owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Standing {
    /// A live platform administrator: every tenant.
    PlatformAdmin,
    /// A current membership of the owner whose role grants the permission.
    Member,
    /// Neither.
    Outsider,
}

impl Standing {
    /// A platform administrator stands above any membership.
    pub fn of(platform_admin: bool, member: impl FnOnce() -> bool) -> Standing {
        if platform_admin {
            Standing::PlatformAdmin
        } else if member() {
            Standing::Member
        } else {
            Standing::Outsider
        }
    }
}

/// The decision once its facts are known: scope first, then the principal's
/// standing towards the owner.
pub fn decide(scope_held: bool, standing: Standing, permission: &str) -> Result<(), Refusal> {
    match (scope_held, standing) {
        (false, _) => Err(Refusal::ScopeRequired(permission.to_owned())),
        (true, Standing::PlatformAdmin | Standing::Member) => Ok(()),
        (true, Standing::Outsider) => Err(Refusal::Forbidden),
    }
}

/// Whether a membership on `(member_organization, member_location)` covers a
/// target owned by `organization_id` (at `location_id`): an organization-level
/// membership covers the organization and all its locations, a location-level
/// one only its location.
pub fn covers(
    member_organization: &str,
    member_location: Option<&str>,
    organization_id: &str,
    location_id: Option<&str>,
) -> bool {
    member_organization == organization_id
        && match member_location {
            None => true,
            Some(member_location) => Some(member_location) == location_id,
        }
}

impl Grants {
    /// The grants, or `None` when there are more than [`MAX_MEMBERSHIPS`]
    /// or they would take more than [`MAX_GRANTS_BYTES`].
    pub fn bounded(platform_admin: bool, memberships: Vec<Membership>) -> Option<Grants> {
        let grants = Grants {
            platform_admin,
            memberships,
        };
        (grants.memberships.len() <= MAX_MEMBERSHIPS && grants.encoded_len() <= MAX_GRANTS_BYTES)
            .then_some(grants)
    }

    /// An upper bound of the length of the grants' JSON (identifiers and
    /// permissions are plain ASCII; each string counts its quotes and a
    /// separator, each membership its keys and braces).
    fn encoded_len(&self) -> usize {
        const ENVELOPE: usize = r#"{"adm":false,"mem":[]}"#.len();
        const MEMBERSHIP: usize = r#"{"org":,"loc":,"perm":[]},"#.len();
        ENVELOPE
            + self
                .memberships
                .iter()
                .map(|m| {
                    MEMBERSHIP
                        + m.organization_id.len()
                        + 3
                        + m.location_id.as_ref().map_or(0, |l| l.len() + 3)
                        + m.permissions.iter().map(|p| p.len() + 3).sum::<usize>()
                })
                .sum::<usize>()
    }

    /// Checks `permission` on a target owned by `organization_id` (at
    /// `location_id`) for a principal whose effective scopes are `scopes`.
    pub fn authorize<'a>(
        &self,
        scopes: impl IntoIterator<Item = &'a str>,
        permission: &str,
        organization_id: &str,
        location_id: Option<&str>,
    ) -> Result<(), Refusal> {
        let standing = Standing::of(self.platform_admin, || {
            self.granting(permission).any(|m| {
                covers(
                    &m.organization_id,
                    m.location_id.as_deref(),
                    organization_id,
                    location_id,
                )
            })
        });
        decide(
            scopes.into_iter().any(|s| s == permission),
            standing,
            permission,
        )
    }

    /// The tenants on which a principal whose effective scopes are `scopes`
    /// holds `permission`.
    pub fn resolve<'a>(
        &self,
        scopes: impl IntoIterator<Item = &'a str>,
        permission: &str,
    ) -> Result<TenantAccess, Refusal> {
        if !scopes.into_iter().any(|s| s == permission) {
            return Err(Refusal::ScopeRequired(permission.to_owned()));
        }
        Ok(TenantAccess::from_memberships(
            self.platform_admin,
            self.granting(permission)
                .map(|m| (m.organization_id.as_str(), m.location_id.as_deref())),
        ))
    }

    fn granting<'a>(&'a self, permission: &'a str) -> impl Iterator<Item = &'a Membership> + 'a {
        self.memberships
            .iter()
            .filter(move |m| m.permissions.iter().any(|p| p == permission))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn membership(org: &str, loc: Option<&str>, permissions: &[&str]) -> Membership {
        Membership {
            organization_id: org.into(),
            location_id: loc.map(Into::into),
            permissions: permissions.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    fn grants() -> Grants {
        Grants {
            platform_admin: false,
            memberships: vec![
                membership("org_a", None, &["orders.read", "orders.write"]),
                membership("org_b", Some("loc_b1"), &["orders.read"]),
                membership("org_b", Some("loc_b2"), &["catalog.read"]),
            ],
        }
    }

    const SCOPES: [&str; 3] = ["orders.read", "orders.write", "catalog.read"];

    #[test]
    fn an_organization_membership_covers_the_organization_and_its_locations() {
        let g = grants();
        assert_eq!(g.authorize(SCOPES, "orders.read", "org_a", None), Ok(()));
        assert_eq!(
            g.authorize(SCOPES, "orders.write", "org_a", Some("loc_a1")),
            Ok(())
        );
        assert_eq!(
            g.authorize(SCOPES, "catalog.read", "org_a", None),
            Err(Refusal::Forbidden)
        );
    }

    #[test]
    fn a_location_membership_covers_only_its_location() {
        let g = grants();
        assert_eq!(
            g.authorize(SCOPES, "orders.read", "org_b", Some("loc_b1")),
            Ok(())
        );
        assert_eq!(
            g.authorize(SCOPES, "orders.read", "org_b", Some("loc_b2")),
            Err(Refusal::Forbidden)
        );
        assert_eq!(
            g.authorize(SCOPES, "orders.read", "org_b", None),
            Err(Refusal::Forbidden)
        );
        // Same location id under another organization: cross-tenant.
        assert_eq!(
            g.authorize(SCOPES, "orders.read", "org_c", Some("loc_b1")),
            Err(Refusal::Forbidden)
        );
    }

    #[test]
    fn the_scope_is_checked_first_even_for_platform_admins() {
        let admin = Grants {
            platform_admin: true,
            memberships: Vec::new(),
        };
        assert_eq!(
            admin.authorize(SCOPES, "orders.read", "org_z", Some("loc_z")),
            Ok(())
        );
        assert_eq!(
            admin.authorize(SCOPES, "customers.read", "org_z", None),
            Err(Refusal::ScopeRequired("customers.read".into()))
        );
        assert_eq!(
            grants().authorize(["orders.write"], "orders.read", "org_a", None),
            Err(Refusal::ScopeRequired("orders.read".into()))
        );
        assert_eq!(
            admin.resolve(SCOPES, "orders.read"),
            Ok(TenantAccess {
                all_tenants: true,
                ..TenantAccess::default()
            })
        );
        assert_eq!(
            admin.resolve(SCOPES, "analytics.read"),
            Err(Refusal::ScopeRequired("analytics.read".into()))
        );
    }

    #[test]
    fn resolve_lists_the_granting_tenants_once() {
        let mut g = grants();
        g.memberships
            .push(membership("org_a", None, &["orders.read"]));
        assert_eq!(
            g.resolve(SCOPES, "orders.read"),
            Ok(TenantAccess {
                all_tenants: false,
                organization_ids: vec!["org_a".into()],
                location_ids: vec!["loc_b1".into()],
            })
        );
        assert_eq!(
            g.resolve(SCOPES, "catalog.read").map(|a| a.location_ids),
            Ok(vec!["loc_b2".into()])
        );
    }

    #[test]
    fn grants_above_the_bound_are_left_out() {
        let many = |n: usize| {
            (0..n)
                .map(|i| membership(&format!("org_{i}"), None, &["orders.read"]))
                .collect::<Vec<_>>()
        };
        assert!(Grants::bounded(false, many(MAX_MEMBERSHIPS)).is_some());
        assert!(Grants::bounded(false, many(MAX_MEMBERSHIPS + 1)).is_none());
        let long = |n: usize| {
            (0..n)
                .map(|i| {
                    membership(
                        &format!("org_{i:040}"),
                        Some(&format!("loc_{i:040}")),
                        &crate::scopes::BUSINESS_SCOPES[..10],
                    )
                })
                .collect::<Vec<_>>()
        };
        let within = long(10);
        let json =
            serde_json::to_string(&Grants::bounded(true, within.clone()).unwrap_or_default())
                .unwrap_or_default();
        assert!(json.len() <= MAX_GRANTS_BYTES);
        assert!(Grants::bounded(true, within).is_some());
        assert!(
            Grants::bounded(true, long(40)).is_none(),
            "over the byte bound"
        );
    }

    #[test]
    fn the_length_bound_is_never_below_the_encoded_length() {
        for grants in [Grants::default(), grants()] {
            let json = serde_json::to_string(&grants).unwrap_or_default();
            assert!(grants.encoded_len() >= json.len(), "{json}");
        }
    }

    #[test]
    fn grants_round_trip_in_compact_json() {
        let g = grants();
        let json = serde_json::to_string(&g).unwrap_or_default();
        assert!(json.contains("\"org\":\"org_a\""));
        assert!(!json.contains("\"loc\":null"));
        let back: Grants = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(back, g);
    }
}
