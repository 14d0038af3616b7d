//! `Catalog`: typed RPCs over a location's catalog items, running the same
//! tools as the MCP path.

use chataigne_proto::tools::v1 as pb;
use tonic::{Request, Response, Status};

use super::convert::{money, non_empty, page};
use super::runner::run;
use super::venue_convert::{availability_from_pb, availability_to_pb};
use crate::access::Access;
use crate::domain::{self, DomainError};
use crate::store::Store;
use crate::tools::Tools;
use crate::tools::catalog_item_availability_update::CatalogItemAvailabilityUpdateInput;
use crate::tools::catalog_items_list::CatalogItemsListInput;

pub struct CatalogItemsService<S, A> {
    tools: Tools<S, A>,
}

impl<S, A> CatalogItemsService<S, A> {
    pub fn new(tools: Tools<S, A>) -> Self {
        CatalogItemsService { tools }
    }
}

#[tonic::async_trait]
impl<S: Store, A: Access> pb::catalog_server::Catalog for CatalogItemsService<S, A> {
    async fn list_catalog_items(
        &self,
        request: Request<pb::ListCatalogItemsRequest>,
    ) -> Result<Response<pb::ListCatalogItemsResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let (limit, cursor) = page(request.page);
            let input = CatalogItemsListInput {
                location_id: request.location_id,
                category_id: non_empty(request.category_id),
                availability: availability_from_pb("availability", request.availability)?,
                text: non_empty(request.text),
                limit,
                cursor,
            };
            let output = self.tools.catalog_items_list(input, &ctx).await?;
            Ok(pb::ListCatalogItemsResponse {
                items: output.data.items.into_iter().map(item).collect(),
                next_cursor: output.next_cursor.unwrap_or_default(),
            })
        })
        .await
    }

    async fn update_catalog_item_availability(
        &self,
        request: Request<pb::UpdateCatalogItemAvailabilityRequest>,
    ) -> Result<Response<pb::UpdateCatalogItemAvailabilityResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let set = |field: &str, value: i32| {
                availability_from_pb(field, value)?
                    .ok_or_else(|| DomainError::invalid(field, "expected available or sold_out"))
            };
            let input = CatalogItemAvailabilityUpdateInput {
                item_id: request.item_id,
                availability: set("availability", request.availability)?,
                expected_availability: set("expected_availability", request.expected_availability)?,
                available_again_at: non_empty(request.available_again_at),
            };
            let output = self
                .tools
                .catalog_item_availability_update(input, &ctx)
                .await?;
            Ok(pb::UpdateCatalogItemAvailabilityResponse {
                item: Some(item(output.data.item)),
            })
        })
        .await
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
