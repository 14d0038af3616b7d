//! The one place where a `DomainError` becomes a `tonic::Status`, with the
//! shared error code, a safe message and rich details. Internal detail is
//! logged here and never sent.

use chataigne_common::ErrorCode;
use chataigne_common::codes::FieldViolation;
use tonic::Status;

use crate::domain::{AbsentOperation, DomainError, OrderStatus};
use crate::tools::{CallSite, ToolKind};

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
    to_status_at(error, kind, None)
}

/// Like [`to_status`], for a call of the MCP bridge: the message names the
/// next call in the model's terms (the tool to call again, the read tool
/// that shows the current state, where a valid identifier comes from).
/// Typed gRPC callers get the same codes with the default messages.
pub fn to_status_at(error: DomainError, kind: ToolKind, site: Option<CallSite<'_>>) -> Status {
    let tool = site.map(|site| site.tool.name);
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
        DomainError::Unavailable(operation) => {
            let code = ErrorCode::InvalidArguments;
            let field = match operation {
                AbsentOperation::ItemRemoval => "availability",
                _ => "status",
            };
            code.to_status(
                operation.message(),
                None,
                &[FieldViolation {
                    field: field.to_owned(),
                    description: "names an operation that is not available through this server"
                        .to_owned(),
                }],
                &[("unavailable_operation".to_owned(), format!("{operation:?}"))],
            )
        }
        DomainError::UnknownTool(_) => {
            let code = ErrorCode::InvalidArguments;
            code.to_status("Unknown tool.", None, &[], &[])
        }
        DomainError::CursorInvalid => match tool {
            Some(tool) => ErrorCode::CursorInvalid.to_status(
                format!(
                    "The cursor is invalid, expired or was issued for other filters. Call {tool} \
                     again without cursor to start from the first page, or pass \
                     meta.next_cursor unchanged with the same filters."
                ),
                None,
                &[],
                &[],
            ),
            None => ErrorCode::CursorInvalid.status(),
        },
        DomainError::Forbidden => {
            match site.and_then(|site| crate::tools::unknown_id_message(site.arguments)) {
                Some(message) => ErrorCode::ResourceForbidden.to_status(message, None, &[], &[]),
                None => ErrorCode::ResourceForbidden.status(),
            }
        }
        DomainError::NotFound => {
            match site.and_then(|site| crate::tools::unknown_id_message(site.arguments)) {
                Some(message) => ErrorCode::ResourceNotFound.to_status(message, None, &[], &[]),
                None => ErrorCode::ResourceNotFound.status(),
            }
        }
        DomainError::ScopeRequired(scope) => {
            let code = ErrorCode::ScopeRequired;
            let message = match tool {
                Some(tool) => format!(
                    "The signed-in user has not granted the assistant the permission {scope} \
                     that {tool} needs here. Reconnect the app and approve that access, then \
                     call {tool} again."
                ),
                None => code.default_message().to_owned(),
            };
            code.to_status(message, None, &[], &[("scope".to_owned(), scope)])
        }
        DomainError::Unauthenticated => ErrorCode::Unauthenticated.status(),
        DomainError::ExpectedStateMismatch { current, allowed } => {
            let code = ErrorCode::ExpectedStateMismatch;
            code.to_status(
                mismatch_message(tool, &current, &allowed),
                None,
                &[],
                &[("current_state".to_owned(), current)],
            )
        }
        DomainError::OrderStatusPrecondition { from, to, current } => {
            let code = ErrorCode::OrderStatusPreconditionFailed;
            let message = transition_message(&from, &to, current.as_deref());
            let current = current.unwrap_or_else(|| from.clone());
            code.to_status(
                message,
                None,
                &[],
                &[
                    ("expected_status".to_owned(), from),
                    ("requested_status".to_owned(), to),
                    ("current_status".to_owned(), current),
                ],
            )
        }
        DomainError::Dependency(dependency, detail) => {
            crate::metrics::dependency_failed(dependency);
            tracing::warn!(dependency = dependency.as_str(), %detail, "dependency failure");
            match tool {
                Some(tool) => ErrorCode::DependencyUnavailable.to_status(
                    format!(
                        "A service {tool} depends on is unavailable. Call {tool} again in a few \
                         seconds."
                    ),
                    None,
                    &[],
                    &[],
                ),
                None => ErrorCode::DependencyUnavailable.status(),
            }
        }
        DomainError::DeadlineExceeded => match (kind, tool) {
            (ToolKind::Read, Some(tool)) => ErrorCode::ToolTimeout.to_status(
                format!(
                    "The read did not finish in time. Call {tool} again, or narrow it (fewer \
                     days, one location, a smaller limit)."
                ),
                None,
                &[],
                &[],
            ),
            (ToolKind::Write, Some(tool)) => ErrorCode::OutcomeUnknown.to_status(
                format!(
                    "The change did not finish in time and may have taken effect. Read the \
                     current state with {} before calling {tool} again.",
                    crate::tools::write_read(tool).unwrap_or("the matching read tool")
                ),
                None,
                &[],
                &[],
            ),
            (ToolKind::Read, None) => ErrorCode::ToolTimeout.status(),
            (ToolKind::Write, None) => ErrorCode::OutcomeUnknown.status(),
        },
        DomainError::OutputTooLarge => match tool {
            Some(tool) => ErrorCode::OutputTooLarge.to_status(
                format!(
                    "The result is too large. Call {tool} again with a smaller limit or \
                     narrower filters, and read further pages with meta.next_cursor."
                ),
                None,
                &[],
                &[],
            ),
            None => ErrorCode::OutputTooLarge.status(),
        },
        DomainError::WritesDisabled => ErrorCode::WritesDisabled.status(),
        DomainError::IdempotencyMismatch => match tool {
            Some(tool) => ErrorCode::IdempotencyMismatch.to_status(
                format!(
                    "This idempotency_key was already used with other arguments. Call {tool} \
                     with the original arguments to get the first result, or with a new \
                     idempotency_key for a new operation."
                ),
                None,
                &[],
                &[],
            ),
            None => ErrorCode::IdempotencyMismatch.status(),
        },
        DomainError::OperationInProgress { retry_after } => {
            let code = ErrorCode::OperationInProgress;
            let message = match tool {
                Some(tool) => format!(
                    "The same operation is still running. Call {tool} again after \
                     retry_after_ms with the same arguments and idempotency_key."
                ),
                None => code.default_message().to_owned(),
            };
            code.to_status(message, Some(retry_after), &[], &[])
        }
        DomainError::Internal(detail) => {
            tracing::error!(%detail, "internal error");
            match tool {
                Some(tool) => ErrorCode::InternalError.to_status(
                    format!(
                        "An unexpected error occurred. Call {tool} once more; if it fails \
                         again, report the request_id."
                    ),
                    None,
                    &[],
                    &[],
                ),
                None => ErrorCode::InternalError.status(),
            }
        }
    }
}

/// "The order changed since it was read: its current state is accepted. …",
/// with the read tool, the argument to pass it in and, for orders, where it
/// can move from there.
fn mismatch_message(tool: Option<&str>, current: &str, allowed: &[&str]) -> String {
    let source = tool.and_then(crate::tools::state_source);
    let Some((what, reload, field)) = source else {
        return format!(
            "The resource changed since it was read: its current state is {current}. Decide \
             again from that state, passing it as the expected one."
        );
    };
    let mut message = format!(
        "{what} changed since it was read: its current state is {current}. Reload it with \
         {reload}, then decide again with {field} {current}"
    );
    if tool == Some("chataigne_order_status_update") {
        if allowed.is_empty() {
            message.push_str("; from there it cannot change status any more");
        } else {
            message.push_str(&format!(
                "; from {current} it can move to: {}",
                allowed.join(", ")
            ));
        }
    }
    message.push('.');
    message
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

/// Why an order cannot move from the observed status `from` to `to`, with
/// the statuses it can move to from its current one (`current` when it
/// changed since it was read) and the call that does it.
fn transition_message(from: &str, to: &str, current: Option<&str>) -> String {
    let now = current.unwrap_or(from);
    let allowed: Vec<&str> = OrderStatus::parse(now)
        .map(|status| {
            status
                .next_statuses()
                .into_iter()
                .map(OrderStatus::as_str)
                .collect()
        })
        .unwrap_or_default();
    let mut message = match OrderStatus::parse(from).map(OrderStatus::next_statuses) {
        Some(next) if next.is_empty() => {
            format!("An order in status {from} cannot change status any more (asked: {to}).")
        }
        _ => format!(
            "An order in status {from} cannot move to {to}: statuses only move forward, one \
             step at a time."
        ),
    };
    if current.is_some() {
        message.push_str(&format!(
            " The order also changed since it was read: its current status is {now}."
        ));
    }
    match allowed.as_slice() {
        [] if current.is_some() => {
            message.push_str(" It cannot change status any more; nothing was changed.");
        }
        [] => message.push_str(" Nothing was changed."),
        [only] => message.push_str(&format!(
            " From {now} it can move to: {only}; call chataigne_order_status_update with \
             status {only} and expected_status {now}."
        )),
        _ => message.push_str(&format!(
            " From {now} it can move to: {}; pass one of them as status, with expected_status \
             {now}.",
            allowed.join(", ")
        )),
    }
    message
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
                allowed: vec!["ready"],
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
                current: None,
            },
            ToolKind::Write,
        );
        assert_eq!(
            status.message(),
            "An order in status ready cannot move to accepted: statuses only move forward, one \
             step at a time. From ready it can move to: out_for_delivery, completed; pass one of \
             them as status, with expected_status ready."
        );
        let stale = to_status(
            DomainError::OrderStatusPrecondition {
                from: "accepted".into(),
                to: "received".into(),
                current: Some("received".into()),
            },
            ToolKind::Write,
        );
        assert_eq!(
            stale.message(),
            "An order in status accepted cannot move to received: statuses only move forward, \
             one step at a time. The order also changed since it was read: its current status \
             is received. From received it can move to: accepted; call \
             chataigne_order_status_update with status accepted and expected_status received."
        );
        let done = to_status(
            DomainError::OrderStatusPrecondition {
                from: "completed".into(),
                to: "ready".into(),
                current: None,
            },
            ToolKind::Write,
        );
        assert_eq!(
            done.message(),
            "An order in status completed cannot change status any more (asked: ready). \
             Nothing was changed."
        );
    }

    fn site<'a>(tool: &'static str, arguments: &'a serde_json::Value) -> CallSite<'a> {
        let spec = crate::tools::ToolId::by_name(tool).map(crate::tools::ToolId::spec);
        CallSite {
            tool: spec.unwrap_or_else(|| panic!("{tool} is a tool")),
            arguments,
        }
    }

    /// Every code of seed 001's table the tool-service raises, from an MCP
    /// call: the message names what went wrong and the next call.
    #[test]
    fn every_seed_code_names_the_next_call_in_its_message() {
        use std::time::Duration;
        let args = serde_json::json!({"order_id": "ord_x", "status": "ready",
                                      "expected_status": "preparing"});
        const ORDER: &str = "chataigne_order_status_update";
        const LIST: &str = "chataigne_orders_list";
        let cases: Vec<(DomainError, ToolKind, &str, &[&str])> = vec![
            (
                DomainError::ScopeRequired("orders.write".into()),
                ToolKind::Write,
                ORDER,
                &["orders.write", "Reconnect", ORDER],
            ),
            (
                DomainError::Forbidden,
                ToolKind::Write,
                ORDER,
                &["chataigne_orders_list"],
            ),
            (
                DomainError::NotFound,
                ToolKind::Write,
                ORDER,
                &["chataigne_orders_list"],
            ),
            (
                DomainError::CursorInvalid,
                ToolKind::Read,
                LIST,
                &[LIST, "without cursor"],
            ),
            (
                DomainError::ExpectedStateMismatch {
                    current: "accepted".into(),
                    allowed: vec!["preparing"],
                },
                ToolKind::Write,
                ORDER,
                &[
                    "its current state is accepted",
                    "chataigne_order_get",
                    "expected_status accepted",
                    "can move to: preparing",
                ],
            ),
            (
                DomainError::OrderStatusPrecondition {
                    from: "received".into(),
                    to: "ready".into(),
                    current: None,
                },
                ToolKind::Write,
                ORDER,
                &["can move to: accepted", ORDER, "expected_status received"],
            ),
            (
                DomainError::IdempotencyMismatch,
                ToolKind::Write,
                "chataigne_conversation_message_send",
                &["chataigne_conversation_message_send", "new idempotency_key"],
            ),
            (
                DomainError::OperationInProgress {
                    retry_after: Duration::from_secs(1),
                },
                ToolKind::Write,
                "chataigne_conversation_message_send",
                &["retry_after_ms", "chataigne_conversation_message_send"],
            ),
            (
                DomainError::DeadlineExceeded,
                ToolKind::Read,
                LIST,
                &[LIST, "narrow"],
            ),
            (
                DomainError::DeadlineExceeded,
                ToolKind::Write,
                ORDER,
                &["may have taken effect", "chataigne_order_get"],
            ),
            (
                DomainError::OutputTooLarge,
                ToolKind::Read,
                LIST,
                &[LIST, "smaller limit"],
            ),
            (
                DomainError::Internal("boom".into()),
                ToolKind::Read,
                LIST,
                &[LIST, "request_id"],
            ),
        ];
        for (error, kind, tool, needles) in cases {
            let label = format!("{error:?}");
            let status = to_status_at(error, kind, Some(site(tool, &args)));
            for needle in needles {
                assert!(
                    status.message().contains(needle),
                    "{label}: {:?} lacks {needle:?}",
                    status.message()
                );
            }
        }
    }

    #[test]
    fn an_absent_operation_is_refused_as_unavailable_not_as_a_precondition() {
        let status = to_status(
            DomainError::Unavailable(AbsentOperation::OrderCancellation),
            ToolKind::Write,
        );
        let decoded = decode_status(&status);
        assert_eq!(decoded.code, ErrorCode::InvalidArguments);
        assert!(
            status
                .message()
                .contains("not available through this server"),
            "{}",
            status.message()
        );
        assert!(!status.message().contains("current status"));
    }

    #[test]
    fn illegal_order_transitions_have_their_own_code() {
        let status = to_status(
            DomainError::OrderStatusPrecondition {
                from: "received".into(),
                to: "ready".into(),
                current: None,
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
        assert!(
            status
                .message()
                .contains("From received it can move to: accepted"),
            "{}",
            status.message()
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
