//! `chataigne_location_status_get` ↔ `Locations/GetLocationStatus`: whether a
//! location accepts orders or is paused, until when and why, and apart from
//! that, whether it is open now by its opening hours.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CallContext, DeadlineClass, Tool, ToolFacts, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{DomainError, Locale, LocationStatus, OpeningNow, SettingsSection};
use crate::present;
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_location_status_get",
    title: "Get a location's order intake",
    description: "Returns a location's `status`, the order-taking switch that answers \
\"are we accepting orders\": accepting or paused, with the pause's end (ISO 8601, location's \
UTC offset) and reason when set; a pause whose end has passed reads as accepting. Apart from \
it, `open_now` by its opening hours and `next_opening_at`. `status` is the `expected_status` \
of chataigne_location_status_update.",
    scope: "locationStatusSettings.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Locations/GetLocationStatus",
    facts: ToolFacts::NONE,
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
    /// The order-taking switch: whether new orders are accepted.
    pub status: LocationStatus,
    /// Open now by its opening hours, apart from `status`; absent without opening hours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_now: Option<bool>,
    /// The next opening by its opening hours, ISO 8601 with the location's UTC offset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_opening_at: Option<String>,
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
        let opening_hours_now =
            opening_now(tools, &input.location_id, &record.timezone, ctx.now_ms).await?;
        let status = present::location_status(record, ctx.now_ms, ctx.locale)?;
        let mut text = status_text(&status, ctx.locale);
        text.push_str(&opening_text(opening_hours_now.as_ref(), ctx.locale));
        Ok(ToolOutput {
            data: LocationStatusGetOutput {
                status,
                open_now: opening_hours_now.as_ref().map(|o| o.open_now),
                next_opening_at: opening_hours_now.and_then(|o| o.next_opening_at),
            },
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

/// Whether the location is open at `now_ms` by its opening hours.
pub(super) async fn opening_now<S: Store, A: Access>(
    tools: &Tools<S, A>,
    location_id: &str,
    timezone: &str,
    now_ms: i64,
) -> Result<Option<OpeningNow>, DomainError> {
    let records = tools
        .store
        .location_settings(location_id, &[SettingsSection::OpeningHours])
        .await?;
    present::opening_now(&records, timezone, now_ms)
}

/// " · closed now by its opening hours; opens 2026-12-08T12:00:00+01:00",
/// after the order-taking line; empty without hours.
pub(super) fn opening_text(opening: Option<&OpeningNow>, locale: Locale) -> String {
    let Some(opening) = opening else {
        return String::new();
    };
    let mut text = if opening.open_now {
        locale
            .pick(
                " · ouvert maintenant selon ses horaires",
                " · open now by its opening hours",
            )
            .to_owned()
    } else {
        locale
            .pick(
                " · fermé maintenant selon ses horaires",
                " · closed now by its opening hours",
            )
            .to_owned()
    };
    if let Some(closes) = &opening.closes_at {
        text.push_str(locale.pick(", jusqu'à ", " until "));
        text.push_str(closes);
    }
    if let Some(next) = &opening.next_opening_at {
        text.push_str(locale.pick(" ; prochaine ouverture ", "; next opening "));
        text.push_str(next);
    }
    text
}
