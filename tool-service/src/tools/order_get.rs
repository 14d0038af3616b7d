//! `chataigne_order_get` ↔ `Restaurant/GetOrder`: one order with its lines.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CallContext, DeadlineClass, Tool, ToolFacts, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{DomainError, Order};
use crate::present;
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_order_get",
    title: "Get an order",
    description: "Returns one order with its lines (item, quantity, unit price, line total), \
status, fulfillment, customer, total and timestamps (ISO 8601, location's UTC offset). \
Suited to the content or state of a specific order. An unknown order is refused like an \
inaccessible one.",
    scope: "orders.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Restaurant/GetOrder",
    facts: ToolFacts::NONE,
};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderGetInput {
    /// From chataigne_orders_list or chataigne_customer_get, e.g. "ord_01paris11_20261206_024".
    #[schemars(length(min = 1, max = 64))]
    pub order_id: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OrderGetOutput {
    pub order: Order,
}

/// `chataigne_order_get`, declared by [`SPEC`].
pub struct OrderGet;

impl Tool for OrderGet {
    type Input = OrderGetInput;
    type Output = OrderGetOutput;
    type Reply = ToolOutput<OrderGetOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: OrderGetInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<OrderGetOutput>, DomainError> {
        let owner = tools.store.order_owner(&input.order_id).await?;
        tools.authorize_owner(owner, SPEC.scope, ctx).await?;
        let (record, lines) = tools
            .store
            .get_order(&input.order_id)
            .await?
            .ok_or(DomainError::NotFound)?;
        let order = present::order(record, lines, ctx.locale)?;
        let mut text = format!(
            "{} {} ({}) · {} ({}) · {} ({}) · {} · {} · {} · {} {} · {} {}",
            ctx.locale.pick("Commande", "Order"),
            order.number,
            order.id,
            order.location_name,
            order.location_id,
            order.customer_name,
            order.customer_id,
            order.status_label,
            order.fulfillment_label,
            order.total.display,
            ctx.locale.pick("passée le", "placed"),
            order.created_at,
            ctx.locale.pick("mise à jour le", "updated"),
            order.updated_at
        );
        for line in &order.lines {
            text.push_str(&format!(
                "\n- {} × {} ({}) · {} × {} = {}",
                line.quantity,
                line.item_name,
                line.item_id,
                line.quantity,
                line.unit_price.display,
                line.line_total.display
            ));
        }
        Ok(ToolOutput {
            data: OrderGetOutput { order },
            text,
            next_cursor: None,
        })
    }
}
