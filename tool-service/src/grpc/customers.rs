//! `Customers`: typed customer reads for internal callers, running the same
//! tools as `chataigne_customers_list` and `chataigne_customer_get`.

use chataigne_proto::tools::v1 as pb;
use tonic::{Request, Response, Status};

use super::activity_convert::order;
use super::convert::{non_empty, page};
use super::runner::run;
use crate::access::Access;
use crate::domain::{self};
use crate::store::Store;
use crate::tools::Tools;
use crate::tools::customer_get::CustomerGetInput;
use crate::tools::customers_list::CustomersListInput;

pub struct CustomersService<S, A> {
    tools: Tools<S, A>,
}

impl<S, A> CustomersService<S, A> {
    pub fn new(tools: Tools<S, A>) -> Self {
        CustomersService { tools }
    }
}

fn customer(customer: domain::Customer) -> pb::Customer {
    pb::Customer {
        id: customer.id,
        name: customer.name,
        organization_id: customer.organization_id,
        organization_name: customer.organization_name,
        location_id: customer.location_id.unwrap_or_default(),
        email_masked: customer.email_masked.unwrap_or_default(),
        phone_masked: customer.phone_masked.unwrap_or_default(),
        order_count: customer.order_count,
        last_order_at: customer.last_order_at.unwrap_or_default(),
        created_at: customer.created_at,
    }
}

#[tonic::async_trait]
impl<S: Store, A: Access> pb::customers_server::Customers for CustomersService<S, A> {
    async fn list_customers(
        &self,
        request: Request<pb::ListCustomersRequest>,
    ) -> Result<Response<pb::ListCustomersResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let (limit, cursor) = page(request.page);
            let input = CustomersListInput {
                organization_id: request.organization_id,
                location_id: non_empty(request.location_id),
                name_query: non_empty(request.name_query),
                limit,
                cursor,
            };
            let output = self.tools.customers_list(input, &ctx).await?;
            Ok(pb::ListCustomersResponse {
                customers: output.data.customers.into_iter().map(customer).collect(),
                next_cursor: output.next_cursor.unwrap_or_default(),
            })
        })
        .await
    }

    async fn get_customer(
        &self,
        request: Request<pb::GetCustomerRequest>,
    ) -> Result<Response<pb::GetCustomerResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let input = CustomerGetInput {
                customer_id: request.customer_id,
            };
            let output = self.tools.customer_get(input, &ctx).await?;
            Ok(pb::GetCustomerResponse {
                customer: Some(customer(output.data.customer)),
                recent_orders: output.data.recent_orders.into_iter().map(order).collect(),
            })
        })
        .await
    }
}
