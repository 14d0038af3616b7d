//! `Catalog`: typed RPCs over a location's catalog items, running the same
//! tools as the MCP path through the runner; this file holds the declaration
//! and the conversions.
//!
//! | RPC (`chataigne.tools.v1.`)             | kind  | scope                      | required fields                              |
//! |-----------------------------------------|-------|----------------------------|----------------------------------------------|
//! | `Catalog/ListCatalogItems`              | read  | catalog.read               | location_id                                  |
//! | `Catalog/UpdateCatalogItemAvailability` | write | catalog.updateAvailability | item_id, availability, expected_availability |

use chataigne_proto::tools::v1 as pb;

use super::convert::{money, non_empty, page};
use super::fields::typed_service;
use super::venue_convert::{availability_from_pb, availability_to_pb};
use crate::domain::{self, Availability, DomainError};
use crate::tools::Answered;
use crate::tools::catalog_item_availability_update::{
    CatalogItemAvailabilityUpdateInput, CatalogItemAvailabilityUpdateOutput,
};
use crate::tools::catalog_items_list::{CatalogItemsListInput, CatalogItemsListOutput};

typed_service! {
    /// The `Catalog` service.
    CatalogItemsService serves catalog_server::Catalog {
        list_catalog_items: ListCatalogItemsRequest => CatalogItemsList
            -> ListCatalogItemsResponse { location_id };
        update_catalog_item_availability: UpdateCatalogItemAvailabilityRequest
            => CatalogItemAvailabilityUpdate -> UpdateCatalogItemAvailabilityResponse {
                item_id, availability, expected_availability
            };
    }
}

impl TryFrom<pb::ListCatalogItemsRequest> for CatalogItemsListInput {
    type Error = DomainError;
    fn try_from(request: pb::ListCatalogItemsRequest) -> Result<Self, DomainError> {
        let (limit, cursor) = page(request.page);
        Ok(CatalogItemsListInput {
            location_id: request.location_id,
            category_id: non_empty(request.category_id),
            availability: availability_from_pb("availability", request.availability)?,
            text: non_empty(request.text),
            limit,
            cursor,
        })
    }
}

impl From<Answered<CatalogItemsListOutput>> for pb::ListCatalogItemsResponse {
    fn from(answer: Answered<CatalogItemsListOutput>) -> Self {
        pb::ListCatalogItemsResponse {
            items: answer.data.items.into_iter().map(item).collect(),
            next_cursor: answer.next_cursor.unwrap_or_default(),
        }
    }
}

/// A settable availability: `available` or `sold_out`.
fn settable(field: &str, value: i32) -> Result<Availability, DomainError> {
    availability_from_pb(field, value)?
        .ok_or_else(|| DomainError::invalid(field, "expected available or sold_out"))
}

impl TryFrom<pb::UpdateCatalogItemAvailabilityRequest> for CatalogItemAvailabilityUpdateInput {
    type Error = DomainError;
    fn try_from(request: pb::UpdateCatalogItemAvailabilityRequest) -> Result<Self, DomainError> {
        Ok(CatalogItemAvailabilityUpdateInput {
            item_id: request.item_id,
            availability: settable("availability", request.availability)?,
            expected_availability: settable(
                "expected_availability",
                request.expected_availability,
            )?,
            available_again_at: non_empty(request.available_again_at),
        })
    }
}

impl From<Answered<CatalogItemAvailabilityUpdateOutput>>
    for pb::UpdateCatalogItemAvailabilityResponse
{
    fn from(answer: Answered<CatalogItemAvailabilityUpdateOutput>) -> Self {
        pb::UpdateCatalogItemAvailabilityResponse {
            item: Some(item(answer.data.item)),
        }
    }
}

fn item(item: domain::CatalogItem) -> pb::CatalogItem {
    pb::CatalogItem {
        availability: availability_to_pb(item.availability) as i32,
        price: Some(money(item.price)),
        id: item.id,
        name: item.name,
        description: item.description,
        location_id: item.location_id,
        location_name: item.location_name,
        category_id: item.category_id,
        category_name: item.category_name,
        availability_label: item.availability_label,
        available_again_at: item.available_again_at.unwrap_or_default(),
        updated_at: item.updated_at,
    }
}
