//! `OrderUpdates`: the typed order status write for internal callers, running
//! the same tool (and so the same rules) as `chataigne_order_status_update`.

use chataigne_proto::tools::v1 as pb;
use tonic::{Request, Response, Status};

use super::activity_convert::{order, order_status_from_pb, order_status_to_pb};
use super::convert::{context, required};
use super::status::write_error;
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
        let ctx = context(&request, &request.get_ref().locale)?;
        self.tools
            .ensure_writes_enabled()
            .await
            .map_err(write_error)?;
        let request = request.into_inner();
        let input = OrderStatusUpdateInput {
            order_id: required("order_id", request.order_id).map_err(write_error)?,
            status: order_status_from_pb("status", request.status).map_err(write_error)?,
            expected_status: order_status_from_pb("expected_status", request.expected_status)
                .map_err(write_error)?,
        };
        let output = self
            .tools
            .order_status_update(input, &ctx)
            .await
            .map_err(write_error)?;
        Ok(Response::new(pb::UpdateOrderStatusResponse {
            order: Some(order(output.data.order)),
            previous_status: order_status_to_pb(output.data.previous_status) as i32,
        }))
    }
}
