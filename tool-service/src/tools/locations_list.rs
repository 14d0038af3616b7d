//! `chataigne_locations_list` ↔ `Restaurant/ListLocations`: the locations of
//! one organization that the signed-in user may see.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::Summary;
use super::support::paged_input;
use super::{CallContext, DeadlineClass, Tool, ToolFacts, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{DomainError, Locale, Location, PageAfter};
use crate::present;
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_locations_list",
    title: "List locations",
    description: "Lists the locations (restaurants) of one organization that the signed-in \
user can access, sorted by name, with ID, address, timezone and currency. The usual source of \
the `location_id` other tools take. Returns 20 by default, 50 at most, with `meta.next_cursor` \
when more exist.",
    scope: "location.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Restaurant/ListLocations",
    facts: ToolFacts {
        lists_ids: &["location_id"],
        ..ToolFacts::NONE
    },
};

paged_input! {
    #[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct LocationsListInput {
        /// From chataigne_organizations_list, e.g. "org_01bistrochataigne".
        #[schemars(length(min = 1, max = 64))]
        pub organization_id: String,
    }
    cursor: "`meta.next_cursor` of the previous page, with the same organization_id."
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LocationsListOutput {
    /// Locations sorted by name.
    pub locations: Vec<Location>,
}

/// `chataigne_locations_list`, declared by [`SPEC`].
pub struct LocationsList;

impl Tool for LocationsList {
    type Input = LocationsListInput;
    type Output = LocationsListOutput;
    type Reply = ToolOutput<LocationsListOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: LocationsListInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<LocationsListOutput>, DomainError> {
        let (principal, scope) = tools.access.resolve(&ctx.credential, SPEC.scope).await?;
        let org = &input.organization_id;
        // Whole organization for admins and org-level members; otherwise only
        // the locations of that organization the user is a member of. An
        // organization outside both is refused like one that does not exist.
        let only: Option<Vec<String>> = if scope.all_tenants || scope.organization_ids.contains(org)
        {
            None
        } else {
            Some(scope.location_ids.clone())
        };
        if only.as_ref().is_some_and(Vec::is_empty) {
            return Err(DomainError::Forbidden);
        }
        if tools.store.get_organization(org).await?.is_none() {
            return Err(if scope.all_tenants {
                DomainError::NotFound
            } else {
                DomainError::Forbidden
            });
        }
        let (pager, page) = tools.page(SPEC.name, &input, &principal, ctx)?;
        let records = tools
            .store
            .list_locations(org, only.as_deref(), &page)
            .await?;
        if only.is_some() && records.is_empty() && page.after.is_none() {
            // Member of locations, but none in this organization.
            return Err(DomainError::Forbidden);
        }
        let (records, next_cursor) = pager.paginate(records, &page, |r| PageAfter {
            key: r.name.clone(),
            id: r.id.clone(),
        });
        let locations: Vec<Location> = records.into_iter().map(present::location).collect();
        let head = if ctx.locale == Locale::Fr {
            format!("{} établissement(s).", locations.len())
        } else {
            format!("{} location(s).", locations.len())
        };
        let mut summary = Summary::new(ctx.locale, head);
        for l in &locations {
            let a = &l.address;
            summary.line(format!(
                "- {} ({}) · {} ({}) · {}, {} {}, {} · {} · {} · {}",
                l.name,
                l.id,
                l.organization_name,
                l.organization_id,
                a.line1,
                a.postal_code,
                a.city,
                a.country,
                l.timezone,
                l.currency,
                l.created_at
            ));
        }
        Ok(pager.output(LocationsListOutput { locations }, summary, next_cursor))
    }
}
