//! `chataigne_discounts_list` ↔ `Locations/ListDiscounts`: the discounts
//! valid in one location (its own and its organization's), by name.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::{Summary, paged_input};
use super::{CallContext, DeadlineClass, Tool, ToolFacts, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{Discount, DomainError, Locale, PageAfter};
use crate::present;
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_discounts_list",
    title: "List discounts",
    description: "Lists the discounts valid in one location, its own and its organization's, \
sorted by name, with code (absent for automatic discounts), kind, value (basis points or amount off, with a display string), status, whether it applies now, and validity \
window (ISO 8601, location's UTC offset). Suited to questions about current or planned \
promotions. Returns 20 by default, 50 at most, with `meta.next_cursor` when more exist.",
    scope: "discounts.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Locations/ListDiscounts",
    facts: ToolFacts::NONE,
};

paged_input! {
    #[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct DiscountsListInput {
        /// From chataigne_locations_list, e.g. "loc_01paris11".
        #[schemars(length(min = 1, max = 64))]
        pub location_id: String,
        /// true: only discounts that apply now; false: only the others (scheduled, expired, disabled); omitted: both.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub active: Option<bool>,
    }
    cursor: "`meta.next_cursor` of the previous page, with the same filters."
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DiscountsListOutput {
    /// Discounts sorted by name.
    pub discounts: Vec<Discount>,
}

/// `chataigne_discounts_list`, declared by [`SPEC`].
pub struct DiscountsList;

impl Tool for DiscountsList {
    type Input = DiscountsListInput;
    type Output = DiscountsListOutput;
    type Reply = ToolOutput<DiscountsListOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: DiscountsListInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<DiscountsListOutput>, DomainError> {
        let (owner, principal) = tools
            .authorize_location(&input.location_id, SPEC.scope, ctx)
            .await?;
        let location = tools.location(&input.location_id).await?;
        let (pager, page) = tools.page(SPEC.name, &input, &principal, ctx)?;
        let records = tools
            .store
            .list_discounts(&owner, input.active, ctx.now_ms, &page)
            .await?;
        let (records, next_cursor) = pager.paginate(records, &page, |r| PageAfter {
            key: r.name.clone(),
            id: r.id.clone(),
        });
        let discounts = records
            .into_iter()
            .map(|r| present::discount(r, &location, ctx.now_ms, ctx.locale))
            .collect::<Result<Vec<_>, _>>()?;
        let head = match (ctx.locale, discounts.len()) {
            (Locale::Fr, 0) => "Aucune remise ne correspond.".to_owned(),
            (Locale::Fr, n) => format!("{n} remise(s) pour {} ({}).", location.name, location.id),
            (_, 0) => "No discounts match.".to_owned(),
            (_, n) => format!("{n} discount(s) for {} ({}).", location.name, location.id),
        };
        let mut summary = Summary::new(ctx.locale, head);
        for d in &discounts {
            let state = match (ctx.locale, d.in_force) {
                (Locale::Fr, true) => "en vigueur",
                (Locale::Fr, false) => "pas en vigueur",
                (_, true) => "in force",
                (_, false) => "not in force",
            };
            let scope = match (ctx.locale, d.organization_wide) {
                (Locale::Fr, true) => "toute l'organisation",
                (Locale::Fr, false) => "cet établissement",
                (_, true) => "organization-wide",
                (_, false) => "this location",
            };
            let mut line = format!(
                "- {} ({}) · {} · {} · {} ({state}) · {scope}",
                d.name, d.id, d.kind_label, d.value_display, d.status_label
            );
            if let Some(code) = &d.code {
                line.push_str(&format!(" · code {code}"));
            }
            if let Some(from) = &d.starts_at {
                line.push_str(&format!(" · {} {from}", ctx.locale.pick("du", "from")));
            }
            if let Some(to) = &d.ends_at {
                line.push_str(&format!(" · {} {to}", ctx.locale.pick("au", "to")));
            }
            summary.line(line);
        }
        summary.narrow("active: true", "active: true");
        Ok(pager.output(DiscountsListOutput { discounts }, summary, next_cursor))
    }
}
