//! A location's order intake: accepting orders or paused (until when, why),
//! the rules of a status change, and the effective status once a pause ends.

use serde::{Deserialize, Serialize};

use super::DomainError;

/// The longest pause with an end time: seven days.
pub const MAX_PAUSE_MS: i64 = 7 * 86_400_000;

/// Whether the location takes new orders.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IntakeStatus {
    Accepting,
    Paused,
}

impl IntakeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            IntakeStatus::Accepting => "accepting",
            IntakeStatus::Paused => "paused",
        }
    }

    pub fn parse(value: &str) -> Option<IntakeStatus> {
        [IntakeStatus::Accepting, IntakeStatus::Paused]
            .into_iter()
            .find(|s| s.as_str() == value)
    }

    /// The status in force at `now_ms`: a pause whose end has passed is over.
    pub fn effective(stored: IntakeStatus, paused_until_ms: Option<i64>, now_ms: i64) -> Self {
        match (stored, paused_until_ms) {
            (IntakeStatus::Paused, Some(until)) if until <= now_ms => IntakeStatus::Accepting,
            (status, _) => status,
        }
    }
}

/// Why orders are paused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PauseReason {
    Busy,
    StaffShortage,
    TechnicalIssue,
    ClosedEarly,
    Other,
}

impl PauseReason {
    pub const ALL: [PauseReason; 5] = [
        PauseReason::Busy,
        PauseReason::StaffShortage,
        PauseReason::TechnicalIssue,
        PauseReason::ClosedEarly,
        PauseReason::Other,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PauseReason::Busy => "busy",
            PauseReason::StaffShortage => "staff_shortage",
            PauseReason::TechnicalIssue => "technical_issue",
            PauseReason::ClosedEarly => "closed_early",
            PauseReason::Other => "other",
        }
    }

    pub fn parse(value: &str) -> Option<PauseReason> {
        PauseReason::ALL.into_iter().find(|r| r.as_str() == value)
    }
}

/// A validated status change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusChange {
    pub status: IntakeStatus,
    pub expected: IntakeStatus,
    pub paused_until_ms: Option<i64>,
    pub reason: Option<PauseReason>,
}

impl StatusChange {
    /// Checks the rules: an end time and a reason only with `paused`; the end
    /// in the future and at most seven days ahead.
    pub fn new(
        status: IntakeStatus,
        expected: IntakeStatus,
        paused_until_ms: Option<i64>,
        reason: Option<PauseReason>,
        now_ms: i64,
    ) -> Result<StatusChange, DomainError> {
        if status == IntakeStatus::Accepting {
            if paused_until_ms.is_some() {
                return Err(DomainError::invalid(
                    "paused_until",
                    "only allowed with status paused",
                ));
            }
            if reason.is_some() {
                return Err(DomainError::invalid(
                    "reason",
                    "only allowed with status paused",
                ));
            }
        }
        if let Some(until) = paused_until_ms {
            if until <= now_ms {
                return Err(DomainError::invalid(
                    "paused_until",
                    "must be in the future",
                ));
            }
            if until - now_ms > MAX_PAUSE_MS {
                return Err(DomainError::invalid(
                    "paused_until",
                    "must be at most 7 days ahead",
                ));
            }
        }
        Ok(StatusChange {
            status,
            expected,
            paused_until_ms,
            reason,
        })
    }
}

/// A location's current order intake, for people and programs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct LocationStatus {
    /// Location ID, e.g. "loc_01paris11".
    pub location_id: String,
    pub location_name: String,
    /// `accepting` (new orders are taken) or `paused` (no new orders).
    pub status: IntakeStatus,
    /// The status in the caller's language, e.g. "orders paused".
    pub status_label: String,
    /// End of the pause, ISO 8601 with the location's UTC offset; absent when
    /// accepting or when the pause has no planned end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused_until: Option<String>,
    /// Why orders are paused; absent when accepting or not given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<PauseReason>,
    /// The reason in the caller's language.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason_label: Option<String>,
    /// Last change of the status, ISO 8601 with the location's UTC offset.
    pub updated_at: String,
}

#[cfg(test)]
mod tests {
    use super::IntakeStatus::*;
    use super::*;

    const NOW: i64 = 1_750_000_000_000;

    #[test]
    fn an_ended_pause_is_accepting() {
        assert_eq!(
            IntakeStatus::effective(Paused, Some(NOW - 1), NOW),
            Accepting
        );
        assert_eq!(IntakeStatus::effective(Paused, Some(NOW + 1), NOW), Paused);
        assert_eq!(IntakeStatus::effective(Paused, None, NOW), Paused);
        assert_eq!(IntakeStatus::effective(Accepting, None, NOW), Accepting);
    }

    #[test]
    fn pause_end_and_reason_rules() {
        let hour = 3_600_000;
        assert!(StatusChange::new(Paused, Accepting, Some(NOW + hour), None, NOW).is_ok());
        assert!(StatusChange::new(Paused, Accepting, None, Some(PauseReason::Busy), NOW).is_ok());
        assert!(StatusChange::new(Paused, Accepting, Some(NOW), None, NOW).is_err());
        assert!(StatusChange::new(Paused, Accepting, Some(NOW + MAX_PAUSE_MS), None, NOW).is_ok());
        assert!(
            StatusChange::new(Paused, Accepting, Some(NOW + MAX_PAUSE_MS + 1), None, NOW).is_err()
        );
        assert!(StatusChange::new(Accepting, Paused, Some(NOW + hour), None, NOW).is_err());
        assert!(StatusChange::new(Accepting, Paused, None, Some(PauseReason::Other), NOW).is_err());
        assert!(StatusChange::new(Accepting, Paused, None, None, NOW).is_ok());
    }
}
