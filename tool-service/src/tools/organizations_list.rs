//! `chataigne_organizations_list` ↔ `Restaurant/ListOrganizations`: the
//! organizations the signed-in user belongs to (every one, for platform admins).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::Summary;
use super::support::paged_input;
use super::{CallContext, DeadlineClass, Tool, ToolFacts, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{DomainError, Locale, Organization, PageAfter};
use crate::present;
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_organizations_list",
    title: "List organizations",
    description: "Lists the restaurant organizations (businesses) the signed-in user belongs \
to, or all of them for platform administrators, sorted by name, with ID and number of \
locations. The starting point for finding an `organization_id`. Returns 20 by default, 50 at \
most, with `meta.next_cursor` when more exist.",
    scope: "businessOrganization.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Restaurant/ListOrganizations",
    facts: ToolFacts {
        lists_ids: &["organization_id"],
        ..ToolFacts::NONE
    },
};

paged_input! {
    #[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct OrganizationsListInput {
    }
    cursor: "`meta.next_cursor` of the previous page."
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OrganizationsListOutput {
    /// Organizations sorted by name.
    pub organizations: Vec<Organization>,
}

/// `chataigne_organizations_list`, declared by [`SPEC`].
pub struct OrganizationsList;

impl Tool for OrganizationsList {
    type Input = OrganizationsListInput;
    type Output = OrganizationsListOutput;
    type Reply = ToolOutput<OrganizationsListOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: OrganizationsListInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<OrganizationsListOutput>, DomainError> {
        let (principal, scope) = tools.access.resolve(&ctx.credential, SPEC.scope).await?;
        let (pager, page) = tools.page(SPEC.name, &input, &principal, ctx)?;
        let records = if scope.is_empty() {
            Vec::new()
        } else {
            tools.store.list_organizations(&scope, &page).await?
        };
        let (records, next_cursor) = pager.paginate(records, &page, |r| PageAfter {
            key: r.name.clone(),
            id: r.id.clone(),
        });
        let organizations: Vec<Organization> =
            records.into_iter().map(present::organization).collect();
        let head = if ctx.locale == Locale::Fr {
            format!("{} organisation(s).", organizations.len())
        } else {
            format!("{} organization(s).", organizations.len())
        };
        let mut summary = Summary::new(ctx.locale, head);
        for org in &organizations {
            summary.line(format!(
                "- {} ({}) · {} {} · {} {}",
                org.name,
                org.id,
                org.location_count,
                ctx.locale.pick("établissement(s)", "location(s)"),
                ctx.locale.pick("créée le", "created"),
                org.created_at
            ));
        }
        Ok(pager.output(
            OrganizationsListOutput { organizations },
            summary,
            next_cursor,
        ))
    }
}
