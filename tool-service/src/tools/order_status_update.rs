//! `chataigne_order_status_update` ↔ `OrderUpdates/UpdateOrderStatus`: moves
//! an order forward in its lifecycle, one or several steps in one call (one
//! confirmation per intent: received → ready), only from the status the
//! caller observed; each step passed through is recorded in the order's
//! history.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{
    AbsentValues, CallContext, DeadlineClass, Lifecycle, StateGuard, Tool, ToolFacts, ToolId,
    ToolKind, ToolOutput, ToolSpec, Tools, WriteEffect,
};
use crate::access::Access;
use crate::domain::{AbsentOperation, CurrentState, DomainError, Locale, Order, OrderStatus};
use crate::present;
use crate::store::{GuardedWrite, Store};

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_order_status_update",
    title: "Update an order's status",
    description: "Moves one order forward, one or several steps in one call: received → \
accepted → preparing → ready → out_for_delivery or completed, and out_for_delivery → completed; \
cancellations and refunds are not available through this server. The current status is read \
first and passed as `expected_status`. A status not ahead of it is refused with \
ORDER_STATUS_PRECONDITION_FAILED listing the statuses allowed, an order that changed since with \
MCP_EXPECTED_STATE_MISMATCH carrying the current status. The check guards repeats; no idempotency key. Returns the order (without lines) and the previous \
status.",
    scope: "orders.write",
    kind: ToolKind::Write,
    deadline: DeadlineClass::Write,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.OrderUpdates/UpdateOrderStatus",
    facts: ToolFacts {
        absent: &[
            AbsentValues {
                argument: "status",
                values: &[
                    "cancelled",
                    "canceled",
                    "cancel",
                    "cancellation",
                    "rejected",
                    "reject",
                    "declined",
                    "decline",
                ],
                operation: AbsentOperation::OrderCancellation,
            },
            AbsentValues {
                argument: "status",
                values: &["refunded", "refund", "partially_refunded"],
                operation: AbsentOperation::Refund,
            },
        ],
        effect: Some(WriteEffect {
            read_with: ToolId::OrderGet,
            guard: Some(StateGuard {
                what: "The order",
                argument: "expected_status",
                lifecycle: Lifecycle::Named,
            }),
        }),
        ..ToolFacts::NONE
    },
};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OrderStatusUpdateInput {
    /// From chataigne_orders_list or chataigne_order_get, e.g. "ord_01paris11_20260301_004".
    #[schemars(length(min = 1, max = 64))]
    pub order_id: String,
    /// The new status, any status ahead of `expected_status`.
    pub status: OrderStatus,
    /// The `status` last read with chataigne_orders_list or chataigne_order_get.
    pub expected_status: OrderStatus,
}

/// The values each status argument offers (the listed schema's enums): the
/// statuses an order can move to, and those it can still move from. Others
/// are answered by the tool itself with the statuses allowed.
pub fn offered() -> Vec<(&'static str, Vec<&'static str>)> {
    let names =
        |statuses: Vec<OrderStatus>| statuses.into_iter().map(OrderStatus::as_str).collect();
    vec![
        ("status", names(OrderStatus::targets())),
        ("expected_status", names(OrderStatus::movable())),
    ]
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct OrderStatusUpdateOutput {
    /// The order after the change (without lines).
    pub order: Order,
    /// The status before the change.
    pub previous_status: OrderStatus,
    pub previous_status_label: String,
    /// The statuses passed through, in order, the new one last (recorded in
    /// the order's history): for the typed API; the text shows them.
    #[serde(skip)]
    #[schemars(skip)]
    pub steps: Vec<OrderStatus>,
}

/// `chataigne_order_status_update`, declared by [`SPEC`].
pub struct OrderStatusUpdate;

impl Tool for OrderStatusUpdate {
    type Input = OrderStatusUpdateInput;
    type Output = OrderStatusUpdateOutput;
    type Reply = ToolOutput<OrderStatusUpdateOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: OrderStatusUpdateInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<OrderStatusUpdateOutput>, DomainError> {
        let owner = tools.store.order_owner(&input.order_id).await?;
        tools.authorize_owner(owner, SPEC.scope, ctx).await?;
        if input.status == OrderStatus::Cancelled {
            return Err(DomainError::Unavailable(AbsentOperation::OrderCancellation));
        }
        let Some(steps) = input.expected_status.steps_to(input.status) else {
            // Nothing to write: the refusal says where the order can go from
            // its current status, and whether it changed since it was read.
            let (current, _) = tools
                .store
                .get_order(&input.order_id)
                .await?
                .ok_or(DomainError::NotFound)?;
            let current = OrderStatus::parse(&current.status).ok_or_else(|| {
                DomainError::Internal(format!("unknown order status {}", current.status))
            })?;
            return Err(DomainError::OrderStatusPrecondition {
                from: input.expected_status,
                to: input.status,
                current: (current != input.expected_status).then_some(current),
            });
        };
        let record = match tools
            .store
            .update_order_status(&input.order_id, input.expected_status, &steps, ctx.now_ms)
            .await?
        {
            GuardedWrite::Updated(record) => record,
            GuardedWrite::Mismatch(current) => {
                let current = OrderStatus::parse(&current.status).ok_or_else(|| {
                    DomainError::Internal(format!("unknown order status {}", current.status))
                })?;
                return Err(mismatch(current));
            }
            GuardedWrite::Missing => return Err(DomainError::NotFound),
        };
        let order = present::order(record, Vec::new(), ctx.locale)?;
        let walk = std::iter::once(input.expected_status)
            .chain(steps.iter().copied())
            .map(|status| status.label(ctx.locale))
            .collect::<Vec<_>>()
            .join(" → ");
        let text = if ctx.locale == Locale::Fr {
            format!(
                "Commande {} ({}, {}) : {}.",
                order.number, order.id, order.location_name, walk
            )
        } else {
            format!(
                "Order {} ({}, {}): {}.",
                order.number, order.id, order.location_name, walk
            )
        };
        Ok(ToolOutput {
            data: OrderStatusUpdateOutput {
                order,
                previous_status: input.expected_status,
                previous_status_label: input.expected_status.label(ctx.locale).to_owned(),
                steps,
            },
            text,
            next_cursor: None,
        })
    }
}

/// The order changed since it was read: it is `current` now.
fn mismatch(current: OrderStatus) -> DomainError {
    DomainError::ExpectedStateMismatch(CurrentState::Order(current))
}
