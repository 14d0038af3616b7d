//! The one place where a `DomainError` becomes a `tonic::Status`, with the
//! shared error code, a safe message and rich details. Internal detail is
//! logged here and never sent.

use chataigne_common::ErrorCode;
use chataigne_common::codes::FieldViolation;
use tonic::Status;

use crate::domain::{DomainError, OrderStatus};
use crate::tools::ToolKind;

/// Maps an error of a read tool (analytics included: a late answer changed
/// nothing).
pub(super) fn read_error(error: DomainError) -> Status {
    to_status(error, ToolKind::Read)
}

/// Maps an error of a write tool.
pub(super) fn write_error(error: DomainError) -> Status {
    to_status(error, ToolKind::Write)
}

/// Maps `error` raised by a tool of `kind` (a write past its deadline may
/// have taken effect).
pub fn to_status(error: DomainError, kind: ToolKind) -> Status {
    to_status_naming(error, kind, None)
}

/// Like [`to_status`], with the message of an unknown or inaccessible
/// identifier naming where valid ones come from (the MCP bridge knows which
/// identifier arguments the call had).
pub fn to_status_naming(
    error: DomainError,
    kind: ToolKind,
    unknown_id_message: Option<String>,
) -> Status {
    match error {
        DomainError::InvalidArguments(violations) => {
            let code = ErrorCode::InvalidArguments;
            code.to_status(
                invalid_arguments_message(&violations),
                None,
                &violations,
                &[],
            )
        }
        DomainError::UnknownTool(_) => {
            let code = ErrorCode::InvalidArguments;
            code.to_status("Unknown tool.", None, &[], &[])
        }
        DomainError::CursorInvalid => ErrorCode::CursorInvalid.status(),
        DomainError::Forbidden => match unknown_id_message {
            Some(message) => ErrorCode::ResourceForbidden.to_status(message, None, &[], &[]),
            None => ErrorCode::ResourceForbidden.status(),
        },
        DomainError::NotFound => match unknown_id_message {
            Some(message) => ErrorCode::ResourceNotFound.to_status(message, None, &[], &[]),
            None => ErrorCode::ResourceNotFound.status(),
        },
        DomainError::ScopeRequired(scope) => {
            let code = ErrorCode::ScopeRequired;
            code.to_status(
                code.default_message(),
                None,
                &[],
                &[("scope".to_owned(), scope)],
            )
        }
        DomainError::Unauthenticated => ErrorCode::Unauthenticated.status(),
        DomainError::ExpectedStateMismatch { current } => {
            let code = ErrorCode::ExpectedStateMismatch;
            code.to_status(
                format!(
                    "The resource changed since it was read: its current state is {current}. \
                     Decide again from that state, passing it as the expected one."
                ),
                None,
                &[],
                &[("current_state".to_owned(), current)],
            )
        }
        DomainError::OrderStatusPrecondition { from, to } => {
            let code = ErrorCode::OrderStatusPreconditionFailed;
            code.to_status(
                transition_message(&from, &to),
                None,
                &[],
                &[
                    ("expected_status".to_owned(), from),
                    ("requested_status".to_owned(), to),
                ],
            )
        }
        DomainError::Dependency(dependency, detail) => {
            crate::metrics::dependency_failed(dependency);
            tracing::warn!(dependency = dependency.as_str(), %detail, "dependency failure");
            ErrorCode::DependencyUnavailable.status()
        }
        DomainError::DeadlineExceeded => match kind {
            ToolKind::Read => ErrorCode::ToolTimeout.status(),
            ToolKind::Write => ErrorCode::OutcomeUnknown.status(),
        },
        DomainError::OutputTooLarge => ErrorCode::OutputTooLarge.status(),
        DomainError::WritesDisabled => ErrorCode::WritesDisabled.status(),
        DomainError::IdempotencyMismatch => ErrorCode::IdempotencyMismatch.status(),
        DomainError::OperationInProgress { retry_after } => {
            let code = ErrorCode::OperationInProgress;
            code.to_status(code.default_message(), Some(retry_after), &[], &[])
        }
        DomainError::Internal(detail) => {
            tracing::error!(%detail, "internal error");
            ErrorCode::InternalError.status()
        }
    }
}

/// "Invalid arguments: limit must be at most 50; pass meta.next_cursor …".
/// Each violation names the field, the rule and, where there is one, the
/// next step; the values themselves are never repeated.
fn invalid_arguments_message(violations: &[FieldViolation]) -> String {
    let parts: Vec<String> = violations
        .iter()
        .map(|v| {
            if v.field.is_empty() {
                v.description.clone()
            } else {
                format!("{} {}", v.field, v.description)
            }
        })
        .collect();
    if parts.is_empty() {
        return ErrorCode::InvalidArguments.default_message().to_owned();
    }
    format!(
        "Invalid arguments: {}. Correct them and call again.",
        parts.join("; ")
    )
}

/// Why an order cannot move from `from` to `to`, with where it can go.
fn transition_message(from: &str, to: &str) -> String {
    let allowed: Vec<&str> = OrderStatus::parse(from)
        .map(|from| {
            OrderStatus::ALL
                .into_iter()
                .filter(|next| from.can_move_to(*next))
                .map(OrderStatus::as_str)
                .collect()
        })
        .unwrap_or_default();
    if allowed.is_empty() {
        format!("An order in status {from} cannot change status any more (asked: {to}).")
    } else {
        format!(
            "An order in status {from} cannot move to {to}; from {from} it can move to: {}.",
            allowed.join(", ")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chataigne_common::codes::decode_status;

    #[test]
    fn internal_detail_never_leaves_the_service() {
        let status = to_status(
            DomainError::Internal("password=hunter2 at db:5432".into()),
            ToolKind::Read,
        );
        assert!(!status.message().contains("hunter2"));
        assert_eq!(decode_status(&status).code, ErrorCode::InternalError);
    }

    #[test]
    fn deadline_depends_on_the_tool_kind() {
        let read = to_status(DomainError::DeadlineExceeded, ToolKind::Read);
        let write = to_status(DomainError::DeadlineExceeded, ToolKind::Write);
        assert_eq!(decode_status(&read).code, ErrorCode::ToolTimeout);
        assert_eq!(decode_status(&write).code, ErrorCode::OutcomeUnknown);
    }

    #[test]
    fn messages_say_the_rule_and_the_next_step() {
        let status = to_status(
            DomainError::InvalidArguments(vec![FieldViolation {
                field: "limit".into(),
                description: "must be at most 50".into(),
            }]),
            ToolKind::Read,
        );
        assert_eq!(
            status.message(),
            "Invalid arguments: limit must be at most 50. Correct them and call again."
        );
        let status = to_status(
            DomainError::ExpectedStateMismatch {
                current: "preparing".into(),
            },
            ToolKind::Write,
        );
        assert!(
            status.message().contains("its current state is preparing"),
            "{}",
            status.message()
        );
        let status = to_status(
            DomainError::OrderStatusPrecondition {
                from: "ready".into(),
                to: "accepted".into(),
            },
            ToolKind::Write,
        );
        assert_eq!(
            status.message(),
            "An order in status ready cannot move to accepted; from ready it can move to: \
             out_for_delivery, completed."
        );
    }

    #[test]
    fn illegal_order_transitions_have_their_own_code() {
        let status = to_status(
            DomainError::OrderStatusPrecondition {
                from: "received".into(),
                to: "ready".into(),
            },
            ToolKind::Write,
        );
        let decoded = decode_status(&status);
        assert_eq!(decoded.code, ErrorCode::OrderStatusPreconditionFailed);
        assert!(
            decoded
                .metadata
                .contains(&("requested_status".to_owned(), "ready".to_owned()))
        );
    }

    #[test]
    fn the_write_switch_has_its_own_code() {
        let status = to_status(DomainError::WritesDisabled, ToolKind::Write);
        let decoded = decode_status(&status);
        assert_eq!(decoded.code, ErrorCode::WritesDisabled);
        assert_eq!(status.code(), tonic::Code::Unavailable);
    }

    #[test]
    fn forbidden_and_unknown_ids_look_the_same() {
        let status = to_status(DomainError::Forbidden, ToolKind::Read);
        let decoded = decode_status(&status);
        assert_eq!(decoded.code, ErrorCode::ResourceForbidden);
        assert_eq!(
            decoded.message,
            ErrorCode::ResourceForbidden.default_message()
        );
    }
}
