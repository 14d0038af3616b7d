//! `chataigne_location_status_update` ↔ `Locations/UpdateLocationStatus`:
//! pauses or resumes a location's order intake, only if the intake is still
//! the one the caller observed (checked atomically by the store).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::location_status_get::status_text;
use super::support::settled;
use super::{
    AbsentValues, CallContext, DeadlineClass, Lifecycle, StateGuard, Tool, ToolFacts, ToolId,
    ToolKind, ToolOutput, ToolSpec, Tools, WriteEffect,
};
use crate::access::Access;
use crate::domain::{
    AbsentOperation, CurrentState, DomainError, IntakeStatus, LocationStatus, PauseReason,
    StatusChange,
};
use crate::present;
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_location_status_update",
    title: "Pause or resume a location's orders",
    description: "Pauses a location's intake of new orders, optionally until a time and with a \
reason, or resumes it. Suited to a restaurant that is overwhelmed, short-staffed, facing a \
technical problem or closing early, and to reopening. The current intake is read first and \
passed as `expected_status`; if it changed since, the call is refused with \
MCP_EXPECTED_STATE_MISMATCH carrying the current status. The check guards repeats; no idempotency key. A pause ends at `paused_until`, at most 7 days ahead, or \
else when resumed. Returns the intake after the change.",
    scope: "locationStatusSettings.write",
    kind: ToolKind::Write,
    deadline: DeadlineClass::Write,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Locations/UpdateLocationStatus",
    facts: ToolFacts {
        absent: &[AbsentValues {
            argument: "status",
            values: &["closed", "deleted", "archived", "deactivated", "disabled"],
            operation: AbsentOperation::LocationClosure,
        }],
        effect: Some(WriteEffect {
            read_with: ToolId::LocationStatusGet,
            guard: Some(StateGuard {
                what: "The location's order intake",
                argument: "expected_status",
                lifecycle: Lifecycle::Unnamed,
            }),
        }),
        ..ToolFacts::NONE
    },
};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LocationStatusUpdateInput {
    /// From chataigne_locations_list, e.g. "loc_01paris11".
    #[schemars(length(min = 1, max = 64))]
    pub location_id: String,
    /// The new intake: `accepting` (takes new orders) or `paused` (takes none).
    pub status: IntakeStatus,
    /// The `status` last read with chataigne_location_status_get or chataigne_location_get.
    pub expected_status: IntakeStatus,
    /// End of the pause, ISO 8601 date-time with offset, e.g. "2026-03-01T21:30:00+01:00", in the future; only with `paused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("format" = "date-time"))]
    pub paused_until: Option<String>,
    /// Why orders are paused; only with `paused`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<PauseReason>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct LocationStatusUpdateOutput {
    /// The intake after the change.
    pub status: LocationStatus,
}

/// `chataigne_location_status_update`, declared by [`SPEC`].
pub struct LocationStatusUpdate;

impl Tool for LocationStatusUpdate {
    type Input = LocationStatusUpdateInput;
    type Output = LocationStatusUpdateOutput;
    type Reply = ToolOutput<LocationStatusUpdateOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: LocationStatusUpdateInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<LocationStatusUpdateOutput>, DomainError> {
        let paused_until_ms = input
            .paused_until
            .as_deref()
            .map(|v| present::parse_timestamp("paused_until", v))
            .transpose()?;
        let change = StatusChange::new(
            input.status,
            input.expected_status,
            paused_until_ms,
            input.reason,
            ctx.now_ms,
        )?;
        tools
            .authorize_location(&input.location_id, SPEC.scope, ctx)
            .await?;
        let write = tools
            .store
            .update_location_status(&input.location_id, &change, ctx.now_ms)
            .await?;
        let record = settled(write, |current| {
            let current = present::location_status(current, ctx.now_ms, ctx.locale)?;
            Ok(CurrentState::Intake(current.status))
        })?;
        let status = present::location_status(record, ctx.now_ms, ctx.locale)?;
        let text = status_text(&status, ctx.locale);
        Ok(ToolOutput {
            data: LocationStatusUpdateOutput { status },
            text,
            next_cursor: None,
        })
    }
}
