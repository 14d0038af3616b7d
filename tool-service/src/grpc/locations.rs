//! `Locations`: typed RPCs for one location's details, order intake,
//! settings, discounts and integrations. Each runs the same tool as the MCP
//! path through the runner; this file holds the declaration and the
//! conversions.
//!
//! | RPC (`chataigne.tools.v1.`)      | kind  | scope                        | required fields                      |
//! |----------------------------------|-------|------------------------------|--------------------------------------|
//! | `Locations/GetLocation`          | read  | location.read                | location_id                          |
//! | `Locations/GetLocationSettings`  | read  | settings.read                | location_id, sections                |
//! | `Locations/GetLocationStatus`    | read  | locationStatusSettings.read  | location_id                          |
//! | `Locations/UpdateLocationStatus` | write | locationStatusSettings.write | location_id, status, expected_status |
//! | `Locations/ListDiscounts`        | read  | discounts.read               | location_id                          |
//! | `Locations/ListIntegrations`     | read  | integrations.read            | location_id                          |

use chataigne_proto::tools::v1 as pb;

use super::convert::{money, non_empty, page};
use super::fields::typed_service;
use super::locations_settings::settings;
use super::restaurant::location;
use super::venue_convert::{
    health_to_pb, intake_from_pb, location_status, reason_from_pb, section_from_pb, wire_name,
};
use crate::domain::{self, DiscountKind, DomainError};
use crate::tools::Answered;
use crate::tools::discounts_list::{DiscountsListInput, DiscountsListOutput};
use crate::tools::integrations_list::{IntegrationsListInput, IntegrationsListOutput};
use crate::tools::location_get::{LocationGetInput, LocationGetOutput};
use crate::tools::location_settings_get::{LocationSettingsGetInput, LocationSettingsGetOutput};
use crate::tools::location_status_get::{LocationStatusGetInput, LocationStatusGetOutput};
use crate::tools::location_status_update::{LocationStatusUpdateInput, LocationStatusUpdateOutput};

typed_service! {
    /// The `Locations` service.
    LocationsService serves locations_server::Locations {
        get_location: GetLocationRequest => LocationGet -> GetLocationResponse { location_id };
        get_location_settings: GetLocationSettingsRequest => LocationSettingsGet
            -> GetLocationSettingsResponse { location_id, sections };
        get_location_status: GetLocationStatusRequest => LocationStatusGet
            -> GetLocationStatusResponse { location_id };
        update_location_status: UpdateLocationStatusRequest => LocationStatusUpdate
            -> UpdateLocationStatusResponse { location_id, status, expected_status };
        list_discounts: ListDiscountsRequest => DiscountsList
            -> ListDiscountsResponse { location_id };
        list_integrations: ListIntegrationsRequest => IntegrationsList
            -> ListIntegrationsResponse { location_id };
    }
}

impl TryFrom<pb::GetLocationRequest> for LocationGetInput {
    type Error = DomainError;
    fn try_from(request: pb::GetLocationRequest) -> Result<Self, DomainError> {
        Ok(LocationGetInput {
            location_id: request.location_id,
        })
    }
}

impl From<Answered<LocationGetOutput>> for pb::GetLocationResponse {
    fn from(answer: Answered<LocationGetOutput>) -> Self {
        pb::GetLocationResponse {
            location: Some(location(answer.data.location)),
            status: Some(location_status(answer.data.status)),
            opening_hours_now: opening_now(answer.data.open_now, answer.data.next_opening_at),
        }
    }
}

impl TryFrom<pb::GetLocationSettingsRequest> for LocationSettingsGetInput {
    type Error = DomainError;
    fn try_from(request: pb::GetLocationSettingsRequest) -> Result<Self, DomainError> {
        Ok(LocationSettingsGetInput {
            location_id: request.location_id,
            sections: request
                .sections
                .iter()
                .map(|&s| section_from_pb(s))
                .collect::<Result<Vec<_>, _>>()?,
        })
    }
}

impl From<Answered<LocationSettingsGetOutput>> for pb::GetLocationSettingsResponse {
    fn from(answer: Answered<LocationSettingsGetOutput>) -> Self {
        pb::GetLocationSettingsResponse {
            settings: Some(settings(answer.data.settings)),
        }
    }
}

impl TryFrom<pb::GetLocationStatusRequest> for LocationStatusGetInput {
    type Error = DomainError;
    fn try_from(request: pb::GetLocationStatusRequest) -> Result<Self, DomainError> {
        Ok(LocationStatusGetInput {
            location_id: request.location_id,
        })
    }
}

impl From<Answered<LocationStatusGetOutput>> for pb::GetLocationStatusResponse {
    fn from(answer: Answered<LocationStatusGetOutput>) -> Self {
        pb::GetLocationStatusResponse {
            status: Some(location_status(answer.data.status)),
            opening_hours_now: opening_now(answer.data.open_now, answer.data.next_opening_at),
        }
    }
}

impl TryFrom<pb::UpdateLocationStatusRequest> for LocationStatusUpdateInput {
    type Error = DomainError;
    fn try_from(request: pb::UpdateLocationStatusRequest) -> Result<Self, DomainError> {
        Ok(LocationStatusUpdateInput {
            location_id: request.location_id,
            status: intake_from_pb("status", request.status)?,
            expected_status: intake_from_pb("expected_status", request.expected_status)?,
            paused_until: non_empty(request.paused_until),
            reason: reason_from_pb(request.reason)?,
        })
    }
}

impl From<Answered<LocationStatusUpdateOutput>> for pb::UpdateLocationStatusResponse {
    fn from(answer: Answered<LocationStatusUpdateOutput>) -> Self {
        pb::UpdateLocationStatusResponse {
            status: Some(location_status(answer.data.status)),
        }
    }
}

impl TryFrom<pb::ListDiscountsRequest> for DiscountsListInput {
    type Error = DomainError;
    fn try_from(request: pb::ListDiscountsRequest) -> Result<Self, DomainError> {
        let (limit, cursor) = page(request.page);
        Ok(DiscountsListInput {
            location_id: request.location_id,
            active: request.active,
            limit,
            cursor,
        })
    }
}

impl From<Answered<DiscountsListOutput>> for pb::ListDiscountsResponse {
    fn from(answer: Answered<DiscountsListOutput>) -> Self {
        pb::ListDiscountsResponse {
            discounts: answer.data.discounts.into_iter().map(discount).collect(),
            next_cursor: answer.next_cursor.unwrap_or_default(),
        }
    }
}

impl TryFrom<pb::ListIntegrationsRequest> for IntegrationsListInput {
    type Error = DomainError;
    fn try_from(request: pb::ListIntegrationsRequest) -> Result<Self, DomainError> {
        let (limit, cursor) = page(request.page);
        Ok(IntegrationsListInput {
            location_id: request.location_id,
            limit,
            cursor,
        })
    }
}

impl From<Answered<IntegrationsListOutput>> for pb::ListIntegrationsResponse {
    fn from(answer: Answered<IntegrationsListOutput>) -> Self {
        pb::ListIntegrationsResponse {
            integrations: answer
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
            next_cursor: answer.next_cursor.unwrap_or_default(),
        }
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

fn opening_now(open_now: Option<bool>, next_opening_at: Option<String>) -> Option<pb::OpeningNow> {
    open_now.map(|open_now| pb::OpeningNow {
        open_now,
        next_opening_at: next_opening_at.unwrap_or_default(),
    })
}
