//! `chataigne_location_status_get` ↔ `Locations/GetLocationStatus`: whether a
//! location accepts orders or is paused, until when and why.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::venue_view;
use super::{CallContext, DeadlineClass, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{DomainError, LocationStatus};
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_location_status_get",
    title: "Get a location's order intake",
    description: "Returns whether a location accepts new orders or is paused, with the pause's \
planned end (ISO 8601, location's UTC offset) and reason when set; a pause whose end has \
passed reads as accepting. Suited to checking the intake before or after a change; the \
returned `status` is the `expected_status` of chataigne_location_status_update.",
    scope: "locationStatusSettings.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Locations/GetLocationStatus",
};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LocationStatusGetInput {
    /// From chataigne_locations_list, e.g. "loc_01paris11".
    #[schemars(length(min = 1, max = 64))]
    pub location_id: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LocationStatusGetOutput {
    pub status: LocationStatus,
}

impl<S: Store, A: Access> Tools<S, A> {
    pub async fn location_status_get(
        &self,
        input: LocationStatusGetInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<LocationStatusGetOutput>, DomainError> {
        self.authorize_location(&input.location_id, SPEC.scope, ctx)
            .await?;
        let record = self
            .store
            .location_status(&input.location_id)
            .await?
            .ok_or(DomainError::NotFound)?;
        let status = venue_view::location_status(record, ctx.now_ms, ctx.locale)?;
        let text = status_text(&status, ctx.locale);
        Ok(ToolOutput {
            data: LocationStatusGetOutput { status },
            text,
            next_cursor: None,
        })
    }
}

/// One line for people: "<name>: orders paused until … (busy)".
pub(super) fn status_text(status: &LocationStatus, locale: &str) -> String {
    let mut text = format!("{} : {}", status.location_name, status.status_label);
    if locale != "fr" {
        text = format!("{}: {}", status.location_name, status.status_label);
    }
    if let Some(until) = &status.paused_until {
        text.push_str(if locale == "fr" {
            " jusqu'au "
        } else {
            " until "
        });
        text.push_str(until);
    }
    if let Some(reason) = &status.reason_label {
        text.push_str(&format!(" ({reason})"));
    }
    text
}
