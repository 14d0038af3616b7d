//! `chataigne_integrations_list` ↔ `Locations/ListIntegrations`: what a
//! location is connected to and how healthy each connection is. Credentials
//! are not part of the model, so they cannot be returned.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::{Summary, paged_input};
use super::{CallContext, DeadlineClass, Tool, ToolFacts, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{DomainError, Integration, Locale, PageAfter};
use crate::present;
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_integrations_list",
    title: "List integrations",
    description: "Lists the integrations serving one location, its own and its organization's, \
sorted by name, with kind, health and last synchronization time (ISO 8601, location's UTC \
offset). Suited to questions such as why orders from a \
delivery channel stopped or whether the till is in sync. Returns 20 by default, 50 at most, \
with `meta.next_cursor` when more exist.",
    scope: "integrations.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Locations/ListIntegrations",
    facts: ToolFacts::NONE,
};

paged_input! {
    #[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct IntegrationsListInput {
        /// From chataigne_locations_list, e.g. "loc_01paris11".
        #[schemars(length(min = 1, max = 64))]
        pub location_id: String,
    }
    cursor: "`meta.next_cursor` of the previous page, with the same location_id."
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct IntegrationsListOutput {
    /// Integrations sorted by name.
    pub integrations: Vec<Integration>,
}

/// `chataigne_integrations_list`, declared by [`SPEC`].
pub struct IntegrationsList;

impl Tool for IntegrationsList {
    type Input = IntegrationsListInput;
    type Output = IntegrationsListOutput;
    type Reply = ToolOutput<IntegrationsListOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: IntegrationsListInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<IntegrationsListOutput>, DomainError> {
        let (owner, principal) = tools
            .authorize_location(&input.location_id, SPEC.scope, ctx)
            .await?;
        let location = tools.location(&input.location_id).await?;
        let (pager, page) = tools.page(SPEC.name, &input, &principal, ctx)?;
        let records = tools.store.list_integrations(&owner, &page).await?;
        let (records, next_cursor) = pager.paginate(records, &page, |r| PageAfter {
            key: r.name.clone(),
            id: r.id.clone(),
        });
        let integrations = records
            .into_iter()
            .map(|r| present::integration(r, &location.timezone, ctx.locale))
            .collect::<Result<Vec<_>, _>>()?;
        let (n, name, id) = (integrations.len(), &location.name, &location.id);
        let head = if ctx.locale == Locale::Fr {
            format!("{n} intégration(s) pour {name} ({id}).")
        } else {
            format!("{n} integration(s) for {name} ({id}).")
        };
        let mut summary = Summary::new(ctx.locale, head);
        for i in &integrations {
            let scope = match (ctx.locale, i.organization_wide) {
                (Locale::Fr, true) => "toute l'organisation",
                (Locale::Fr, false) => "cet établissement",
                (_, true) => "organization-wide",
                (_, false) => "this location",
            };
            let mut line = format!(
                "- {} ({}) · {} · {} · {scope}",
                i.name, i.id, i.kind_label, i.health_label
            );
            if let Some(at) = &i.last_sync_at {
                line.push_str(&format!(
                    " · {} {at}",
                    ctx.locale.pick("dernière synchronisation", "last sync")
                ));
            }
            summary.line(line);
        }
        Ok(pager.output(
            IntegrationsListOutput { integrations },
            summary,
            next_cursor,
        ))
    }
}
