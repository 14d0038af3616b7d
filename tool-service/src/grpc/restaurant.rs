//! `Restaurant`: the typed RPCs for internal callers. Each converts its
//! request into the tool's input, runs the same tool as the MCP path, and
//! converts the output back, so both surfaces share every rule; the runner
//! applies the deadline, the required fields and the error mapping.

use chataigne_proto::tools::v1 as pb;
use tonic::{Request, Response, Status};

use super::activity_convert::{order, order_status_from_pb};
use super::convert::{non_empty, page};
use super::runner::run;
use crate::access::Access;
use crate::domain;
use crate::store::Store;
use crate::tools::{
    LocationsListInput, OrderGetInput, OrdersListInput, OrganizationsListInput, Tools,
};

pub struct RestaurantService<S, A> {
    tools: Tools<S, A>,
}

impl<S, A> RestaurantService<S, A> {
    pub fn new(tools: Tools<S, A>) -> Self {
        RestaurantService { tools }
    }
}

#[tonic::async_trait]
impl<S: Store, A: Access> pb::restaurant_server::Restaurant for RestaurantService<S, A> {
    async fn list_organizations(
        &self,
        request: Request<pb::ListOrganizationsRequest>,
    ) -> Result<Response<pb::ListOrganizationsResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let (limit, cursor) = page(request.page);
            let output = self
                .tools
                .organizations_list(OrganizationsListInput { limit, cursor }, &ctx)
                .await?;
            Ok(pb::ListOrganizationsResponse {
                organizations: output
                    .data
                    .organizations
                    .into_iter()
                    .map(organization)
                    .collect(),
                next_cursor: output.next_cursor.unwrap_or_default(),
            })
        })
        .await
    }

    async fn list_locations(
        &self,
        request: Request<pb::ListLocationsRequest>,
    ) -> Result<Response<pb::ListLocationsResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let (limit, cursor) = page(request.page);
            let input = LocationsListInput {
                organization_id: request.organization_id,
                limit,
                cursor,
            };
            let output = self.tools.locations_list(input, &ctx).await?;
            Ok(pb::ListLocationsResponse {
                locations: output.data.locations.into_iter().map(location).collect(),
                next_cursor: output.next_cursor.unwrap_or_default(),
            })
        })
        .await
    }

    async fn list_orders(
        &self,
        request: Request<pb::ListOrdersRequest>,
    ) -> Result<Response<pb::ListOrdersResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let statuses = request
                .statuses
                .iter()
                .map(|&s| order_status_from_pb("statuses", s))
                .collect::<Result<Vec<_>, _>>()?;
            let (limit, cursor) = page(request.page);
            let input = OrdersListInput {
                location_id: non_empty(request.location_id),
                statuses,
                created_from: non_empty(request.created_from),
                created_to: non_empty(request.created_to),
                // The typed request has no order field: newest first.
                sort: None,
                limit,
                cursor,
            };
            let output = self.tools.orders_list(input, &ctx).await?;
            Ok(pb::ListOrdersResponse {
                orders: output.data.orders.into_iter().map(order).collect(),
                next_cursor: output.next_cursor.unwrap_or_default(),
            })
        })
        .await
    }

    async fn get_order(
        &self,
        request: Request<pb::GetOrderRequest>,
    ) -> Result<Response<pb::GetOrderResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let input = OrderGetInput {
                order_id: request.order_id,
            };
            let output = self.tools.order_get(input, &ctx).await?;
            Ok(pb::GetOrderResponse {
                order: Some(order(output.data.order)),
            })
        })
        .await
    }
}

fn organization(org: domain::Organization) -> pb::Organization {
    pb::Organization {
        id: org.id,
        name: org.name,
        location_count: org.location_count,
        created_at: org.created_at,
    }
}

fn location(location: domain::Location) -> pb::Location {
    pb::Location {
        id: location.id,
        name: location.name,
        organization_id: location.organization_id,
        organization_name: location.organization_name,
        timezone: location.timezone,
        currency: location.currency,
        address: Some(pb::Address {
            line1: location.address.line1,
            city: location.address.city,
            postal_code: location.address.postal_code,
            country: location.address.country,
        }),
        created_at: location.created_at,
    }
}
