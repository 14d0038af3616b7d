//! The one place where a `DomainError` becomes a `tonic::Status`, with the
//! shared error code, a safe message and rich details. Internal detail is
//! logged here and never sent.

use chataigne_common::ErrorCode;
use tonic::Status;

use crate::domain::DomainError;
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
    match error {
        DomainError::InvalidArguments(violations) => {
            let code = ErrorCode::InvalidArguments;
            code.to_status(code.default_message(), None, &violations, &[])
        }
        DomainError::UnknownTool(_) => {
            let code = ErrorCode::InvalidArguments;
            code.to_status("Unknown tool.", None, &[], &[])
        }
        DomainError::CursorInvalid => ErrorCode::CursorInvalid.status(),
        DomainError::Forbidden => ErrorCode::ResourceForbidden.status(),
        DomainError::NotFound => ErrorCode::ResourceNotFound.status(),
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
                code.default_message(),
                None,
                &[],
                &[("current_state".to_owned(), current)],
            )
        }
        DomainError::OrderStatusPrecondition { from, to } => {
            let code = ErrorCode::OrderStatusPreconditionFailed;
            code.to_status(
                code.default_message(),
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
