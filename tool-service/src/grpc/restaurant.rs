//! `Restaurant`: the typed RPCs for internal callers. Each converts its
//! request into the tool's input, runs the same tool as the MCP path, and
//! converts the output back, so both surfaces share every rule.

use chataigne_proto::tools::v1 as pb;
use tonic::{Request, Response, Status};

use super::credential::credential;
use super::status::to_status;
use crate::access::Access;
use crate::domain::{self, DomainError, OrderStatus};
use crate::present::normalize_locale;
use crate::store::Store;
use crate::tools::{
    CallContext, LocationsListInput, OrderGetInput, OrdersListInput, OrganizationsListInput,
    ToolKind, Tools,
};

pub struct RestaurantService<S, A> {
    tools: Tools<S, A>,
}

impl<S, A> RestaurantService<S, A> {
    pub fn new(tools: Tools<S, A>) -> Self {
        RestaurantService { tools }
    }
}

fn context<T>(request: &Request<T>, locale: &str) -> Result<CallContext, Status> {
    Ok(CallContext {
        credential: credential(request)?,
        locale: normalize_locale(locale),
        now_ms: chrono::Utc::now().timestamp_millis(),
    })
}

fn read_error(error: DomainError) -> Status {
    to_status(error, ToolKind::Read)
}

fn non_empty(value: String) -> Option<String> {
    (!value.is_empty()).then_some(value)
}

fn page(page: Option<pb::Page>) -> (Option<u32>, Option<String>) {
    let page = page.unwrap_or_default();
    (
        (page.limit != 0).then_some(page.limit),
        non_empty(page.cursor),
    )
}

#[tonic::async_trait]
impl<S: Store, A: Access> pb::restaurant_server::Restaurant for RestaurantService<S, A> {
    async fn list_organizations(
        &self,
        request: Request<pb::ListOrganizationsRequest>,
    ) -> Result<Response<pb::ListOrganizationsResponse>, Status> {
        let ctx = context(&request, &request.get_ref().locale)?;
        let (limit, cursor) = page(request.into_inner().page);
        let output = self
            .tools
            .organizations_list(OrganizationsListInput { limit, cursor }, &ctx)
            .await
            .map_err(read_error)?;
        Ok(Response::new(pb::ListOrganizationsResponse {
            organizations: output
                .data
                .organizations
                .into_iter()
                .map(organization)
                .collect(),
            next_cursor: output.next_cursor.unwrap_or_default(),
        }))
    }

    async fn list_locations(
        &self,
        request: Request<pb::ListLocationsRequest>,
    ) -> Result<Response<pb::ListLocationsResponse>, Status> {
        let ctx = context(&request, &request.get_ref().locale)?;
        let request = request.into_inner();
        let (limit, cursor) = page(request.page);
        let output = self
            .tools
            .locations_list(
                LocationsListInput {
                    organization_id: request.organization_id,
                    limit,
                    cursor,
                },
                &ctx,
            )
            .await
            .map_err(read_error)?;
        Ok(Response::new(pb::ListLocationsResponse {
            locations: output.data.locations.into_iter().map(location).collect(),
            next_cursor: output.next_cursor.unwrap_or_default(),
        }))
    }

    async fn list_orders(
        &self,
        request: Request<pb::ListOrdersRequest>,
    ) -> Result<Response<pb::ListOrdersResponse>, Status> {
        let ctx = context(&request, &request.get_ref().locale)?;
        let request = request.into_inner();
        let statuses = request
            .statuses
            .iter()
            .map(|&s| order_status_from_pb(s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(read_error)?;
        let (limit, cursor) = page(request.page);
        let output = self
            .tools
            .orders_list(
                OrdersListInput {
                    location_id: non_empty(request.location_id),
                    statuses,
                    created_from: non_empty(request.created_from),
                    created_to: non_empty(request.created_to),
                    limit,
                    cursor,
                },
                &ctx,
            )
            .await
            .map_err(read_error)?;
        Ok(Response::new(pb::ListOrdersResponse {
            orders: output.data.orders.into_iter().map(order).collect(),
            next_cursor: output.next_cursor.unwrap_or_default(),
        }))
    }

    async fn get_order(
        &self,
        request: Request<pb::GetOrderRequest>,
    ) -> Result<Response<pb::GetOrderResponse>, Status> {
        let ctx = context(&request, &request.get_ref().locale)?;
        let request = request.into_inner();
        if request.order_id.is_empty() {
            return Err(read_error(DomainError::invalid("order_id", "is required")));
        }
        let output = self
            .tools
            .order_get(
                OrderGetInput {
                    order_id: request.order_id,
                },
                &ctx,
            )
            .await
            .map_err(read_error)?;
        Ok(Response::new(pb::GetOrderResponse {
            order: Some(order(output.data.order)),
        }))
    }
}

fn order_status_from_pb(value: i32) -> Result<OrderStatus, DomainError> {
    use pb::OrderStatus as P;
    match P::try_from(value) {
        Ok(P::Received) => Ok(OrderStatus::Received),
        Ok(P::Accepted) => Ok(OrderStatus::Accepted),
        Ok(P::Preparing) => Ok(OrderStatus::Preparing),
        Ok(P::Ready) => Ok(OrderStatus::Ready),
        Ok(P::OutForDelivery) => Ok(OrderStatus::OutForDelivery),
        Ok(P::Completed) => Ok(OrderStatus::Completed),
        Ok(P::Cancelled) => Ok(OrderStatus::Cancelled),
        Ok(P::Unspecified) | Err(_) => Err(DomainError::invalid("statuses", "unknown status")),
    }
}

fn order_status_to_pb(status: OrderStatus) -> pb::OrderStatus {
    use pb::OrderStatus as P;
    match status {
        OrderStatus::Received => P::Received,
        OrderStatus::Accepted => P::Accepted,
        OrderStatus::Preparing => P::Preparing,
        OrderStatus::Ready => P::Ready,
        OrderStatus::OutForDelivery => P::OutForDelivery,
        OrderStatus::Completed => P::Completed,
        OrderStatus::Cancelled => P::Cancelled,
    }
}

fn money(money: domain::Money) -> pb::Money {
    pb::Money {
        amount_minor: money.amount_minor,
        currency: money.currency,
        display: money.display,
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

fn order(order: domain::Order) -> pb::Order {
    pb::Order {
        id: order.id,
        number: order.number,
        location_id: order.location_id,
        location_name: order.location_name,
        customer_id: order.customer_id,
        customer_name: order.customer_name,
        status: order_status_to_pb(order.status) as i32,
        fulfillment: match order.fulfillment {
            domain::Fulfillment::Pickup => pb::FulfillmentType::Pickup,
            domain::Fulfillment::Delivery => pb::FulfillmentType::Delivery,
            domain::Fulfillment::DineIn => pb::FulfillmentType::DineIn,
        } as i32,
        total: Some(money(order.total)),
        lines: order
            .lines
            .into_iter()
            .map(|line| pb::OrderLine {
                item_id: line.item_id,
                item_name: line.item_name,
                quantity: line.quantity,
                unit_price: Some(money(line.unit_price)),
                line_total: Some(money(line.line_total)),
            })
            .collect(),
        created_at: order.created_at,
        updated_at: order.updated_at,
    }
}
