//! `Restaurant`: the typed RPCs for internal callers over organizations,
//! locations and orders. Each runs the same tool as the MCP path through the
//! runner; this file holds only the declaration and the conversions.
//!
//! | RPC (`chataigne.tools.v1.`)    | kind | scope                     | required fields |
//! |--------------------------------|------|---------------------------|-----------------|
//! | `Restaurant/ListOrganizations` | read | businessOrganization.read | —               |
//! | `Restaurant/ListLocations`     | read | location.read             | organization_id |
//! | `Restaurant/ListOrders`        | read | orders.read               | —               |
//! | `Restaurant/GetOrder`          | read | orders.read               | order_id        |

use chataigne_proto::tools::v1 as pb;

use super::activity_convert::{order, order_status_from_pb};
use super::convert::{non_empty, page};
use super::fields::typed_service;
use crate::domain::{self, DomainError};
use crate::tools::Answered;
use crate::tools::locations_list::{LocationsListInput, LocationsListOutput};
use crate::tools::order_get::{OrderGetInput, OrderGetOutput};
use crate::tools::orders_list::{OrdersListInput, OrdersListOutput};
use crate::tools::organizations_list::{OrganizationsListInput, OrganizationsListOutput};

typed_service! {
    /// The `Restaurant` service.
    RestaurantService serves restaurant_server::Restaurant {
        list_organizations: ListOrganizationsRequest => OrganizationsList
            -> ListOrganizationsResponse {};
        list_locations: ListLocationsRequest => LocationsList
            -> ListLocationsResponse { organization_id };
        list_orders: ListOrdersRequest => OrdersList -> ListOrdersResponse {};
        get_order: GetOrderRequest => OrderGet -> GetOrderResponse { order_id };
    }
}

impl TryFrom<pb::ListOrganizationsRequest> for OrganizationsListInput {
    type Error = DomainError;
    fn try_from(request: pb::ListOrganizationsRequest) -> Result<Self, DomainError> {
        let (limit, cursor) = page(request.page);
        Ok(OrganizationsListInput { limit, cursor })
    }
}

impl From<Answered<OrganizationsListOutput>> for pb::ListOrganizationsResponse {
    fn from(answer: Answered<OrganizationsListOutput>) -> Self {
        pb::ListOrganizationsResponse {
            organizations: answer
                .data
                .organizations
                .into_iter()
                .map(organization)
                .collect(),
            next_cursor: answer.next_cursor.unwrap_or_default(),
        }
    }
}

impl TryFrom<pb::ListLocationsRequest> for LocationsListInput {
    type Error = DomainError;
    fn try_from(request: pb::ListLocationsRequest) -> Result<Self, DomainError> {
        let (limit, cursor) = page(request.page);
        Ok(LocationsListInput {
            organization_id: request.organization_id,
            limit,
            cursor,
        })
    }
}

impl From<Answered<LocationsListOutput>> for pb::ListLocationsResponse {
    fn from(answer: Answered<LocationsListOutput>) -> Self {
        pb::ListLocationsResponse {
            locations: answer.data.locations.into_iter().map(location).collect(),
            next_cursor: answer.next_cursor.unwrap_or_default(),
        }
    }
}

impl TryFrom<pb::ListOrdersRequest> for OrdersListInput {
    type Error = DomainError;
    fn try_from(request: pb::ListOrdersRequest) -> Result<Self, DomainError> {
        let statuses = request
            .statuses
            .iter()
            .map(|&s| order_status_from_pb("statuses", s))
            .collect::<Result<Vec<_>, _>>()?;
        let (limit, cursor) = page(request.page);
        Ok(OrdersListInput {
            location_id: non_empty(request.location_id),
            statuses,
            created_from: non_empty(request.created_from),
            created_to: non_empty(request.created_to),
            // The typed request has no order field: newest first.
            sort: None,
            number: non_empty(request.number),
            limit,
            cursor,
        })
    }
}

impl From<Answered<OrdersListOutput>> for pb::ListOrdersResponse {
    fn from(answer: Answered<OrdersListOutput>) -> Self {
        pb::ListOrdersResponse {
            orders: answer.data.orders.into_iter().map(order).collect(),
            next_cursor: answer.next_cursor.unwrap_or_default(),
        }
    }
}

impl TryFrom<pb::GetOrderRequest> for OrderGetInput {
    type Error = DomainError;
    fn try_from(request: pb::GetOrderRequest) -> Result<Self, DomainError> {
        Ok(OrderGetInput {
            order_id: request.order_id,
        })
    }
}

impl From<Answered<OrderGetOutput>> for pb::GetOrderResponse {
    fn from(answer: Answered<OrderGetOutput>) -> Self {
        pb::GetOrderResponse {
            order: Some(order(answer.data.order)),
        }
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

/// A location as the typed API shows it (also by `Locations/GetLocation`).
pub(super) fn location(location: domain::Location) -> pb::Location {
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
