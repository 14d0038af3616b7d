//! `chataigne_location_status_get` ↔ `Locations/GetLocationStatus`: whether a
//! location accepts orders or is paused, until when and why.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CallContext, DeadlineClass, Tool, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{DomainError, Locale, LocationStatus};
use crate::present;
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

/// `chataigne_location_status_get`, declared by [`SPEC`].
pub struct LocationStatusGet;

impl Tool for LocationStatusGet {
    type Input = LocationStatusGetInput;
    type Output = LocationStatusGetOutput;
    type Reply = ToolOutput<LocationStatusGetOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: LocationStatusGetInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<LocationStatusGetOutput>, DomainError> {
        tools
            .authorize_location(&input.location_id, SPEC.scope, ctx)
            .await?;
        let record = tools
            .store
            .location_status(&input.location_id)
            .await?
            .ok_or(DomainError::NotFound)?;
        let status = present::location_status(record, ctx.now_ms, ctx.locale)?;
        let text = status_text(&status, ctx.locale);
        Ok(ToolOutput {
            data: LocationStatusGetOutput { status },
            text,
            next_cursor: None,
        })
    }
}

/// One line for people: "<name>: orders paused until … (busy)".
pub(super) fn status_text(status: &LocationStatus, locale: Locale) -> String {
    let (name, id, label) = (
        &status.location_name,
        &status.location_id,
        &status.status_label,
    );
    let mut text = locale.pick(
        format!("{name} ({id}) : {label}"),
        format!("{name} ({id}): {label}"),
    );
    if let Some(until) = &status.paused_until {
        text.push_str(locale.pick(" jusqu'au ", " until "));
        text.push_str(until);
    }
    if let Some(reason) = &status.reason_label {
        text.push_str(&format!(" ({reason})"));
    }
    text.push_str(&format!(
        " · {} {}",
        locale.pick("depuis le", "since"),
        status.updated_at
    ));
    text
}
