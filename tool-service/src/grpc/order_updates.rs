//! `OrderUpdates`: the typed order status write for internal callers, running
//! the same tool (and so the same rules) as `chataigne_order_status_update`
//! through the runner; this file holds the declaration and the conversions.
//!
//! | RPC (`chataigne.tools.v1.`)      | kind  | scope        | required fields                   |
//! |----------------------------------|-------|--------------|-----------------------------------|
//! | `OrderUpdates/UpdateOrderStatus` | write | orders.write | order_id, status, expected_status |

use chataigne_proto::tools::v1 as pb;

use super::activity_convert::{order, order_status_from_pb, order_status_to_pb};
use super::fields::typed_service;
use crate::domain::DomainError;
use crate::tools::Answered;
use crate::tools::order_status_update::{OrderStatusUpdateInput, OrderStatusUpdateOutput};

typed_service! {
    /// The `OrderUpdates` service.
    OrderUpdatesService serves order_updates_server::OrderUpdates {
        update_order_status: UpdateOrderStatusRequest => OrderStatusUpdate
            -> UpdateOrderStatusResponse { order_id, status, expected_status };
    }
}

impl TryFrom<pb::UpdateOrderStatusRequest> for OrderStatusUpdateInput {
    type Error = DomainError;
    fn try_from(request: pb::UpdateOrderStatusRequest) -> Result<Self, DomainError> {
        Ok(OrderStatusUpdateInput {
            order_id: request.order_id,
            status: order_status_from_pb("status", request.status)?,
            expected_status: order_status_from_pb("expected_status", request.expected_status)?,
        })
    }
}

impl From<Answered<OrderStatusUpdateOutput>> for pb::UpdateOrderStatusResponse {
    fn from(answer: Answered<OrderStatusUpdateOutput>) -> Self {
        pb::UpdateOrderStatusResponse {
            order: Some(order(answer.data.order)),
            previous_status: order_status_to_pb(answer.data.previous_status) as i32,
            steps: answer
                .data
                .steps
                .into_iter()
                .map(|status| order_status_to_pb(status) as i32)
                .collect(),
        }
    }
}
