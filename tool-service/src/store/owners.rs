//! Owners already read. The organization and location a location or an
//! order belongs to are written once, when it is created, and never change
//! (no statement updates them, and neither is ever deleted), so an owner
//! found once is remembered, bounded, and the authorization of the next call
//! naming the same resource costs no statement. Only owners that exist are
//! remembered: a resource not found is looked up again, so one created
//! later is found at once. What the caller may do there stays live: it is
//! decided on every call from the principal's current grants.

use chataigne_common::expiring::ExpiringMap;

use super::Owner;

/// How many owners are remembered at most (about 150 bytes each); a flood of
/// distinct ids only costs the lookups it would have saved.
const CAPACITY: usize = 65_536;

/// What kind of resource an owner was read for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Owned {
    Location,
    Order,
}

/// Owners by resource, never expiring (see the module doc).
pub(crate) struct Owners(ExpiringMap<(Owned, String), Owner>);

impl Owners {
    pub(crate) fn new() -> Owners {
        Owners(ExpiringMap::new(CAPACITY))
    }

    pub(crate) fn get(&self, kind: Owned, id: &str) -> Option<Owner> {
        self.0.get(&(kind, id.to_owned()), 0)
    }

    pub(crate) fn remember(&self, kind: Owned, id: &str, owner: &Owner) {
        self.0
            .insert((kind, id.to_owned()), owner.clone(), i64::MAX, 0);
    }
}

impl std::fmt::Debug for Owners {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Owners")
            .field("remembered", &self.0.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owner(organization: &str) -> Owner {
        Owner {
            organization_id: organization.to_owned(),
            location_id: Some("loc".to_owned()),
        }
    }

    #[test]
    fn an_owner_is_remembered_by_kind_and_id() {
        let owners = Owners::new();
        assert_eq!(owners.get(Owned::Location, "loc"), None);
        owners.remember(Owned::Location, "loc", &owner("org"));
        assert_eq!(owners.get(Owned::Location, "loc"), Some(owner("org")));
        assert_eq!(owners.get(Owned::Order, "loc"), None);
    }
}
