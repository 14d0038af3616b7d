//! `Locations`: typed RPCs for one location's details, order intake,
//! settings, discounts and integrations. Each converts its request into the
//! tool's input, runs the same tool as the MCP path and converts the output.

use chataigne_proto::tools::v1 as pb;
use tonic::{Request, Response, Status};

use super::convert::{context, money, non_empty, page, required};
use super::locations_settings::settings;
use super::status::{read_error, write_error};
use super::venue_convert::{
    health_to_pb, intake_from_pb, location_status, reason_from_pb, section_from_pb, wire_name,
};
use crate::access::Access;
use crate::domain::{self, DiscountKind};
use crate::store::Store;
use crate::tools::Tools;
use crate::tools::discounts_list::DiscountsListInput;
use crate::tools::integrations_list::IntegrationsListInput;
use crate::tools::location_get::LocationGetInput;
use crate::tools::location_settings_get::LocationSettingsGetInput;
use crate::tools::location_status_get::LocationStatusGetInput;
use crate::tools::location_status_update::LocationStatusUpdateInput;

pub struct LocationsService<S, A> {
    tools: Tools<S, A>,
}

impl<S, A> LocationsService<S, A> {
    pub fn new(tools: Tools<S, A>) -> Self {
        LocationsService { tools }
    }
}

#[tonic::async_trait]
impl<S: Store, A: Access> pb::locations_server::Locations for LocationsService<S, A> {
    async fn get_location(
        &self,
        request: Request<pb::GetLocationRequest>,
    ) -> Result<Response<pb::GetLocationResponse>, Status> {
        let ctx = context(&request, &request.get_ref().locale)?;
        let request = request.into_inner();
        let input = LocationGetInput {
            location_id: required("location_id", request.location_id).map_err(read_error)?,
        };
        let output = self
            .tools
            .location_get(input, &ctx)
            .await
            .map_err(read_error)?;
        let location = output.data.location;
        Ok(Response::new(pb::GetLocationResponse {
            location: Some(pb::Location {
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
            }),
            status: Some(location_status(output.data.status)),
        }))
    }

    async fn get_location_settings(
        &self,
        request: Request<pb::GetLocationSettingsRequest>,
    ) -> Result<Response<pb::GetLocationSettingsResponse>, Status> {
        let ctx = context(&request, &request.get_ref().locale)?;
        let request = request.into_inner();
        let input = LocationSettingsGetInput {
            location_id: required("location_id", request.location_id).map_err(read_error)?,
            sections: request
                .sections
                .iter()
                .map(|&s| section_from_pb(s))
                .collect::<Result<Vec<_>, _>>()
                .map_err(read_error)?,
        };
        let output = self
            .tools
            .location_settings_get(input, &ctx)
            .await
            .map_err(read_error)?;
        Ok(Response::new(pb::GetLocationSettingsResponse {
            settings: Some(settings(output.data.settings)),
        }))
    }

    async fn get_location_status(
        &self,
        request: Request<pb::GetLocationStatusRequest>,
    ) -> Result<Response<pb::GetLocationStatusResponse>, Status> {
        let ctx = context(&request, &request.get_ref().locale)?;
        let request = request.into_inner();
        let input = LocationStatusGetInput {
            location_id: required("location_id", request.location_id).map_err(read_error)?,
        };
        let output = self
            .tools
            .location_status_get(input, &ctx)
            .await
            .map_err(read_error)?;
        Ok(Response::new(pb::GetLocationStatusResponse {
            status: Some(location_status(output.data.status)),
        }))
    }

    async fn update_location_status(
        &self,
        request: Request<pb::UpdateLocationStatusRequest>,
    ) -> Result<Response<pb::UpdateLocationStatusResponse>, Status> {
        let ctx = context(&request, &request.get_ref().locale)?;
        self.tools
            .ensure_writes_enabled()
            .await
            .map_err(write_error)?;
        let request = request.into_inner();
        let input = LocationStatusUpdateInput {
            location_id: required("location_id", request.location_id).map_err(write_error)?,
            status: intake_from_pb("status", request.status).map_err(write_error)?,
            expected_status: intake_from_pb("expected_status", request.expected_status)
                .map_err(write_error)?,
            paused_until: non_empty(request.paused_until),
            reason: reason_from_pb(request.reason).map_err(write_error)?,
        };
        let output = self
            .tools
            .location_status_update(input, &ctx)
            .await
            .map_err(write_error)?;
        Ok(Response::new(pb::UpdateLocationStatusResponse {
            status: Some(location_status(output.data.status)),
        }))
    }

    async fn list_discounts(
        &self,
        request: Request<pb::ListDiscountsRequest>,
    ) -> Result<Response<pb::ListDiscountsResponse>, Status> {
        let ctx = context(&request, &request.get_ref().locale)?;
        let request = request.into_inner();
        let (limit, cursor) = page(request.page);
        let input = DiscountsListInput {
            location_id: required("location_id", request.location_id).map_err(read_error)?,
            active: request.active,
            limit,
            cursor,
        };
        let output = self
            .tools
            .discounts_list(input, &ctx)
            .await
            .map_err(read_error)?;
        Ok(Response::new(pb::ListDiscountsResponse {
            discounts: output.data.discounts.into_iter().map(discount).collect(),
            next_cursor: output.next_cursor.unwrap_or_default(),
        }))
    }

    async fn list_integrations(
        &self,
        request: Request<pb::ListIntegrationsRequest>,
    ) -> Result<Response<pb::ListIntegrationsResponse>, Status> {
        let ctx = context(&request, &request.get_ref().locale)?;
        let request = request.into_inner();
        let (limit, cursor) = page(request.page);
        let input = IntegrationsListInput {
            location_id: required("location_id", request.location_id).map_err(read_error)?,
            limit,
            cursor,
        };
        let output = self
            .tools
            .integrations_list(input, &ctx)
            .await
            .map_err(read_error)?;
        Ok(Response::new(pb::ListIntegrationsResponse {
            integrations: output
                .data
                .integrations
                .into_iter()
                .map(|i| pb::Integration {
                    kind: wire_name(&i.kind),
                    health: health_to_pb(i.health) as i32,
                    id: i.id,
                    name: i.name,
                    health_label: i.health_label,
                    organization_wide: i.organization_wide,
                    last_sync_at: i.last_sync_at.unwrap_or_default(),
                })
                .collect(),
            next_cursor: output.next_cursor.unwrap_or_default(),
        }))
    }
}

fn discount(discount: domain::Discount) -> pb::Discount {
    pb::Discount {
        kind: match discount.kind {
            DiscountKind::Percent => pb::DiscountKind::Percent,
            DiscountKind::Amount => pb::DiscountKind::Amount,
        } as i32,
        status: wire_name(&discount.status),
        id: discount.id,
        name: discount.name,
        code: discount.code.unwrap_or_default(),
        percent_basis_points: discount.percent_basis_points.unwrap_or_default(),
        amount_off: discount.amount_off.map(money),
        value_display: discount.value_display,
        in_force: discount.in_force,
        organization_wide: discount.organization_wide,
        starts_at: discount.starts_at.unwrap_or_default(),
        ends_at: discount.ends_at.unwrap_or_default(),
    }
}
