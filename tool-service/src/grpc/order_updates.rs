//! `OrderUpdates`: the typed order status write for internal callers, running
//! the same tool (and so the same rules) as `chataigne_order_status_update`.

use chataigne_proto::tools::v1 as pb;
use tonic::{Request, Response, Status};

use super::activity_convert::{order, order_status_from_pb, order_status_to_pb};
use super::runner::run;
use crate::access::Access;
use crate::store::Store;
use crate::tools::Tools;
use crate::tools::order_status_update::OrderStatusUpdateInput;

pub struct OrderUpdatesService<S, A> {
    tools: Tools<S, A>,
}

impl<S, A> OrderUpdatesService<S, A> {
    pub fn new(tools: Tools<S, A>) -> Self {
        OrderUpdatesService { tools }
    }
}

#[tonic::async_trait]
impl<S: Store, A: Access> pb::order_updates_server::OrderUpdates for OrderUpdatesService<S, A> {
    async fn update_order_status(
        &self,
        request: Request<pb::UpdateOrderStatusRequest>,
    ) -> Result<Response<pb::UpdateOrderStatusResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let input = OrderStatusUpdateInput {
                order_id: request.order_id,
                status: order_status_from_pb("status", request.status)?,
                expected_status: order_status_from_pb("expected_status", request.expected_status)?,
            };
            let output = self.tools.order_status_update(input, &ctx).await?;
            Ok(pb::UpdateOrderStatusResponse {
                order: Some(order(output.data.order)),
                previous_status: order_status_to_pb(output.data.previous_status) as i32,
            })
        })
        .await
    }
}
