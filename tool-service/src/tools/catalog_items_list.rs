//! `chataigne_catalog_items_list` ↔ `Catalog/ListCatalogItems`: a page of one
//! location's menu items, by name, with price, category and availability.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::{Summary, paged_input};
use super::{CallContext, DeadlineClass, Tool, ToolFacts, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{Availability, CatalogFilter, CatalogItem, DomainError, Locale, PageAfter};
use crate::present;
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_catalog_items_list",
    title: "List catalog items",
    description: "Lists one location's menu items, sorted by name, with ID, price, category, \
availability (available or sold_out) and, for sold-out items, the expected return time (ISO \
8601, location's UTC offset). Suited to questions about the menu, prices or what is sold out, \
and to finding an `item_id` to update. Returns 20 by default, 50 at most, with \
`meta.next_cursor` when more exist.",
    scope: "catalog.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Catalog/ListCatalogItems",
    facts: ToolFacts {
        lists_ids: &["item_id", "category_id"],
        ..ToolFacts::NONE
    },
};

paged_input! {
    #[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub struct CatalogItemsListInput {
        /// From chataigne_locations_list, e.g. "loc_01paris11".
        #[schemars(length(min = 1, max = 64))]
        pub location_id: String,
        /// Only items of this category: the `category_id` of an item from chataigne_catalog_items_list, e.g. "cat_01paris11_02".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(length(min = 1, max = 64))]
        pub category_id: Option<String>,
        /// Only items currently `available` or `sold_out`; omitted: both.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub availability: Option<Availability>,
        /// Only items whose name contains this text, case and accents ignored, e.g. "creme brulee".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(length(max = 100))]
        pub text: Option<String>,
    }
    cursor: "`meta.next_cursor` of the previous page, with the same filters."
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CatalogItemsListOutput {
    /// Items sorted by name.
    pub items: Vec<CatalogItem>,
}

/// `chataigne_catalog_items_list`, declared by [`SPEC`].
pub struct CatalogItemsList;

impl Tool for CatalogItemsList {
    type Input = CatalogItemsListInput;
    type Output = CatalogItemsListOutput;
    type Reply = ToolOutput<CatalogItemsListOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: CatalogItemsListInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<CatalogItemsListOutput>, DomainError> {
        let name_contains = CatalogFilter::text(input.text.as_deref())?;
        let (_, principal) = tools
            .authorize_location(&input.location_id, SPEC.scope, ctx)
            .await?;
        // The normalized text is what the cursor is bound to.
        let mut bound_input = input.clone();
        bound_input.text = name_contains.clone();
        let (pager, page) = tools.page(SPEC.name, &bound_input, &principal, ctx)?;
        // Availability in force at this call's time (a passed return time
        // counts as available).
        let filter = CatalogFilter {
            location_id: input.location_id.clone(),
            category_id: input.category_id.clone(),
            availability: input.availability,
            name_contains,
            now_ms: ctx.now_ms,
        };
        let records = tools.store.list_catalog_items(&filter, &page).await?;
        let (records, next_cursor) = pager.paginate(records, &page, |r| PageAfter {
            key: r.name.clone(),
            id: r.id.clone(),
        });
        let items = records
            .into_iter()
            .map(|r| present::catalog_item(r, ctx.now_ms, ctx.locale))
            .collect::<Result<Vec<_>, _>>()?;
        let at = items
            .first()
            .map(|i| format!(" · {} ({})", i.location_name, i.location_id))
            .unwrap_or_default();
        let head = match (ctx.locale, items.len()) {
            (Locale::Fr, 0) => "Aucun article ne correspond.".to_owned(),
            (Locale::Fr, n) => format!("{n} article(s), par nom{at}."),
            (_, 0) => "No items match.".to_owned(),
            (_, n) => format!("{n} item(s), by name{at}."),
        };
        let mut summary = Summary::new(ctx.locale, head);
        for item in &items {
            let mut line = format!(
                "- {} ({}) · {} ({}) · {} · {}",
                item.name,
                item.id,
                item.category_name,
                item.category_id,
                item.price.display,
                item.availability_label
            );
            if let Some(at) = &item.available_again_at {
                line.push_str(ctx.locale.pick(" jusqu'au ", " until "));
                line.push_str(at);
            }
            if !item.description.is_empty() {
                line.push_str(" · ");
                line.push_str(&item.description);
            }
            summary.line(line);
        }
        summary.narrow(
            "un filtre category_id, availability ou text",
            "a category_id, availability or text filter",
        );
        Ok(pager.output(CatalogItemsListOutput { items }, summary, next_cursor))
    }
}
