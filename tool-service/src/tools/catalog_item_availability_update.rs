//! `chataigne_catalog_item_availability_update` ↔
//! `Catalog/UpdateCatalogItemAvailability`: marks an item sold out (until
//! when) or available again, only if its availability is still the one the
//! caller observed (checked atomically by the store).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::settled;
use super::{
    AbsentValues, CallContext, DeadlineClass, Lifecycle, StateGuard, Tool, ToolFacts, ToolId,
    ToolKind, ToolOutput, ToolSpec, Tools, WriteEffect,
};
use crate::access::Access;
use crate::domain::{
    AbsentOperation, Availability, AvailabilityChange, CatalogItem, CurrentState, DomainError,
};
use crate::present;
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_catalog_item_availability_update",
    title: "Mark a catalog item sold out or available",
    description: "Marks one menu item sold out, optionally until the time it is expected back, \
or available again. Suited to a dish or product that ran out or was restocked. The item's \
current `availability` is read first and passed as `expected_availability`; if it changed \
since, the call is refused with MCP_EXPECTED_STATE_MISMATCH carrying the current availability. \
The check guards repeats; no idempotency key. Once `available_again_at` passes, \
the item counts as available. Returns the item after the change.",
    scope: "catalog.updateAvailability",
    kind: ToolKind::Write,
    deadline: DeadlineClass::Write,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Catalog/UpdateCatalogItemAvailability",
    facts: ToolFacts {
        absent: &[AbsentValues {
            argument: "availability",
            values: &["deleted", "removed", "archived", "hidden", "disabled"],
            operation: AbsentOperation::ItemRemoval,
        }],
        effect: Some(WriteEffect {
            read_with: ToolId::CatalogItemsList,
            guard: Some(StateGuard {
                what: "The item's availability",
                argument: "expected_availability",
                lifecycle: Lifecycle::Unnamed,
            }),
        }),
        ..ToolFacts::NONE
    },
};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CatalogItemAvailabilityUpdateInput {
    /// From chataigne_catalog_items_list, e.g. "itm_01paris11_004".
    #[schemars(length(min = 1, max = 64))]
    pub item_id: String,
    /// The new availability.
    pub availability: Availability,
    /// The `availability` last read with chataigne_catalog_items_list.
    pub expected_availability: Availability,
    /// When the item is expected back, ISO 8601 date-time with offset, e.g. "2026-03-01T18:00:00+01:00", in the future; only with `sold_out`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub available_again_at: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct CatalogItemAvailabilityUpdateOutput {
    /// The item after the change.
    pub item: CatalogItem,
}

/// `chataigne_catalog_item_availability_update`, declared by [`SPEC`].
pub struct CatalogItemAvailabilityUpdate;

impl Tool for CatalogItemAvailabilityUpdate {
    type Input = CatalogItemAvailabilityUpdateInput;
    type Output = CatalogItemAvailabilityUpdateOutput;
    type Reply = ToolOutput<CatalogItemAvailabilityUpdateOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: CatalogItemAvailabilityUpdateInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<CatalogItemAvailabilityUpdateOutput>, DomainError> {
        let again_at_ms = input
            .available_again_at
            .as_deref()
            .map(|v| present::parse_timestamp("available_again_at", v))
            .transpose()?;
        let change = AvailabilityChange::new(
            input.availability,
            input.expected_availability,
            again_at_ms,
            ctx.now_ms,
        )?;
        let owner = tools.store.catalog_item_owner(&input.item_id).await?;
        tools.authorize_owner(owner, SPEC.scope, ctx).await?;
        let write = tools
            .store
            .update_item_availability(&input.item_id, &change, ctx.now_ms)
            .await?;
        let record = settled(write, |current| {
            let current = present::catalog_item(current, ctx.now_ms, ctx.locale)?;
            Ok(CurrentState::Availability(current.availability))
        })?;
        let item = present::catalog_item(record, ctx.now_ms, ctx.locale)?;
        let mut text = format!(
            "{} ({}) · {} ({}) · {} ({}) · {} · {}",
            item.name,
            item.id,
            item.location_name,
            item.location_id,
            item.category_name,
            item.category_id,
            item.price.display,
            item.availability_label
        );
        if let Some(at) = &item.available_again_at {
            text.push_str(ctx.locale.pick(" · de retour le ", " · back at "));
            text.push_str(at);
        }
        Ok(ToolOutput {
            data: CatalogItemAvailabilityUpdateOutput { item },
            text,
            next_cursor: None,
        })
    }
}
