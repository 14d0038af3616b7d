//! `chataigne_location_get` ↔ `Locations/GetLocation`: one location with its
//! address, timezone, currency and current order intake.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CallContext, DeadlineClass, Tool, ToolFacts, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{DomainError, Location, LocationStatus};
use crate::present;
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_location_get",
    title: "Get a location",
    description: "Returns one location (restaurant): address, IANA timezone with the local \
time now, currency, `status`, the order-taking switch (accepting or paused, with the pause's \
end and reason when set) that answers \"are we accepting orders\", and apart from it \
`open_now` by its opening hours and `next_opening_at`. Times are ISO 8601 with the location's \
UTC offset. An unknown location is refused like an inaccessible one.",
    scope: "location.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Locations/GetLocation",
    facts: ToolFacts::NONE,
};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LocationGetInput {
    /// From chataigne_locations_list, e.g. "loc_01paris11".
    #[schemars(length(min = 1, max = 64))]
    pub location_id: String,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LocationGetOutput {
    pub location: Location,
    /// The time now at the location, ISO 8601 with its UTC offset: the base for times such as "today 18:00".
    pub local_time: String,
    /// The order-taking switch: whether new orders are accepted.
    pub status: LocationStatus,
    /// Open now by its opening hours, apart from `status`; absent without opening hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_now: Option<bool>,
    /// The next opening by its opening hours, ISO 8601 with the location's UTC offset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_opening_at: Option<String>,
}

/// `chataigne_location_get`, declared by [`SPEC`].
pub struct LocationGet;

impl Tool for LocationGet {
    type Input = LocationGetInput;
    type Output = LocationGetOutput;
    type Reply = ToolOutput<LocationGetOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: LocationGetInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<LocationGetOutput>, DomainError> {
        tools
            .authorize_location(&input.location_id, SPEC.scope, ctx)
            .await?;
        let record = tools.location(&input.location_id).await?;
        let status = tools
            .store
            .location_status(&input.location_id)
            .await?
            .ok_or(DomainError::NotFound)?;
        let opening_hours_now = super::location_status_get::opening_now(
            tools,
            &input.location_id,
            &status.timezone,
            ctx.now_ms,
        )
        .await?;
        let status = present::location_status(status, ctx.now_ms, ctx.locale)?;
        let location = present::location(record);
        let local_time = present::timestamp(ctx.now_ms, &location.timezone);
        let mut text = format!(
            "{} ({}) · {}, {} {} · {} ({} {local_time}) · {} · {}",
            location.name,
            location.id,
            location.address.line1,
            location.address.postal_code,
            location.address.city,
            location.timezone,
            ctx.locale.pick("heure locale", "local time"),
            location.currency,
            status.status_label
        );
        if let Some(until) = &status.paused_until {
            text.push_str(ctx.locale.pick(" jusqu'au ", " until "));
            text.push_str(until);
        }
        if let Some(reason) = &status.reason_label {
            text.push_str(&format!(" ({reason})"));
        }
        text.push_str(&ctx.locale.pick(
            format!(
                " · organisation {} ({}) · pays {} · créé le {} · statut changé le {}",
                location.organization_name,
                location.organization_id,
                location.address.country,
                location.created_at,
                status.updated_at
            ),
            format!(
                " · organization {} ({}) · country {} · created {} · status changed {}",
                location.organization_name,
                location.organization_id,
                location.address.country,
                location.created_at,
                status.updated_at
            ),
        ));
        text.push_str(&super::location_status_get::opening_text(
            opening_hours_now.as_ref(),
            ctx.locale,
        ));
        Ok(ToolOutput {
            data: LocationGetOutput {
                location,
                local_time,
                status,
                open_now: opening_hours_now.as_ref().map(|o| o.open_now),
                next_opening_at: opening_hours_now.and_then(|o| o.next_opening_at),
            },
            text,
            next_cursor: None,
        })
    }
}
