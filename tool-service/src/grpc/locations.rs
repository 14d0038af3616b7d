//! `Locations`: typed RPCs for one location's details, order intake,
//! settings, discounts and integrations. Each converts its request into the
//! tool's input, runs the same tool as the MCP path and converts the output.

use chataigne_proto::tools::v1 as pb;
use tonic::{Request, Response, Status};

use super::convert::{money, non_empty, page};
use super::locations_settings::settings;
use super::runner::run;
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
        run(&self.tools, request, |request, ctx| async move {
            let input = LocationGetInput {
                location_id: request.location_id,
            };
            let output = self.tools.location_get(input, &ctx).await?;
            let location = output.data.location;
            Ok(pb::GetLocationResponse {
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
            })
        })
        .await
    }

    async fn get_location_settings(
        &self,
        request: Request<pb::GetLocationSettingsRequest>,
    ) -> Result<Response<pb::GetLocationSettingsResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let input = LocationSettingsGetInput {
                location_id: request.location_id,
                sections: request
                    .sections
                    .iter()
                    .map(|&s| section_from_pb(s))
                    .collect::<Result<Vec<_>, _>>()?,
            };
            let output = self.tools.location_settings_get(input, &ctx).await?;
            Ok(pb::GetLocationSettingsResponse {
                settings: Some(settings(output.data.settings)),
            })
        })
        .await
    }

    async fn get_location_status(
        &self,
        request: Request<pb::GetLocationStatusRequest>,
    ) -> Result<Response<pb::GetLocationStatusResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let input = LocationStatusGetInput {
                location_id: request.location_id,
            };
            let output = self.tools.location_status_get(input, &ctx).await?;
            Ok(pb::GetLocationStatusResponse {
                status: Some(location_status(output.data.status)),
            })
        })
        .await
    }

    async fn update_location_status(
        &self,
        request: Request<pb::UpdateLocationStatusRequest>,
    ) -> Result<Response<pb::UpdateLocationStatusResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let input = LocationStatusUpdateInput {
                location_id: request.location_id,
                status: intake_from_pb("status", request.status)?,
                expected_status: intake_from_pb("expected_status", request.expected_status)?,
                paused_until: non_empty(request.paused_until),
                reason: reason_from_pb(request.reason)?,
            };
            let output = self.tools.location_status_update(input, &ctx).await?;
            Ok(pb::UpdateLocationStatusResponse {
                status: Some(location_status(output.data.status)),
            })
        })
        .await
    }

    async fn list_discounts(
        &self,
        request: Request<pb::ListDiscountsRequest>,
    ) -> Result<Response<pb::ListDiscountsResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let (limit, cursor) = page(request.page);
            let input = DiscountsListInput {
                location_id: request.location_id,
                active: request.active,
                limit,
                cursor,
            };
            let output = self.tools.discounts_list(input, &ctx).await?;
            Ok(pb::ListDiscountsResponse {
                discounts: output.data.discounts.into_iter().map(discount).collect(),
                next_cursor: output.next_cursor.unwrap_or_default(),
            })
        })
        .await
    }

    async fn list_integrations(
        &self,
        request: Request<pb::ListIntegrationsRequest>,
    ) -> Result<Response<pb::ListIntegrationsResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let (limit, cursor) = page(request.page);
            let input = IntegrationsListInput {
                location_id: request.location_id,
                limit,
                cursor,
            };
            let output = self.tools.integrations_list(input, &ctx).await?;
            Ok(pb::ListIntegrationsResponse {
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
            })
        })
        .await
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
