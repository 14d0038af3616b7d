//! The one place where a `DomainError` becomes a `tonic::Status`, with the
//! shared error code, a safe message and rich details. Internal detail is
//! logged here and never sent.

use chataigne_common::ErrorCode;
use chataigne_common::codes::FieldViolation;
use chataigne_common::status_details::DetailKey;
use tonic::Status;

use super::domain_codes::{self, OrderStatusDetail};
use crate::domain::{AbsentOperation, CurrentState, DomainError, OrderStatus};
use crate::tools::{CallSite, Lifecycle, StateGuard, ToolKind, ToolSpec};

/// Maps `error` of a typed RPC of `kind`: the codes and details of
/// [`to_status`], with a message written for gRPC callers (the request's
/// fields, the credentials' scopes, the RPCs), never the texts addressed to a
/// model through MCP.
pub(super) fn typed_status(error: DomainError, kind: ToolKind) -> Status {
    let message = typed_message(&error, kind);
    chataigne_common::codes::reword_status(&to_status(error, kind), message)
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
                &[DetailKey::UnavailableOperation.pair(format!("{operation:?}"))],
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
            code.to_status(message, None, &[], &[DetailKey::Scope.pair(scope)])
        }
        DomainError::Unauthenticated => ErrorCode::Unauthenticated.status(),
        DomainError::ExpectedStateMismatch(state) => {
            let code = ErrorCode::ExpectedStateMismatch;
            code.to_status(
                mismatch_message(site.map(|site| site.tool), state),
                None,
                &[],
                &[DetailKey::CurrentState.pair(state.as_str())],
            )
        }
        DomainError::OrderStatusPrecondition { from, to, current } => {
            let code = domain_codes::ORDER_STATUS_PRECONDITION_FAILED;
            let message = transition_message(from, to, current);
            let (from, to, current) =
                (from.as_str(), to.as_str(), current.unwrap_or(from).as_str());
            code.to_status(
                message,
                None,
                &[],
                &[
                    OrderStatusDetail::Expected.pair(from),
                    OrderStatusDetail::Requested.pair(to),
                    OrderStatusDetail::Current.pair(current),
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
                    site.and_then(|site| crate::tools::write_read(site.tool))
                        .unwrap_or("the matching read tool")
                ),
                None,
                &[],
                &[],
            ),
            (ToolKind::Read, None) => ErrorCode::ToolTimeout.status(),
            (ToolKind::Write, None) => ErrorCode::OutcomeUnknown.status(),
        },
        DomainError::OutputTooLarge { bytes, limit } => match site {
            Some(site) => ErrorCode::OutputTooLarge.to_status(
                output_too_large_message(site, bytes, limit),
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
                    "The same operation is still running. Call {tool} again after the \
                     suggested delay, with the same arguments and idempotency_key."
                ),
                None => code.default_message().to_owned(),
            };
            code.to_status(message, Some(retry_after), &[], &[])
        }
        DomainError::Overloaded { retry_after } => {
            let code = ErrorCode::Overloaded;
            let message = match tool {
                Some(tool) => format!(
                    "The service is busy with other calls of this kind. Call {tool} again \
                     after retry_after_ms with the same arguments."
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

/// "The result is 210 KiB, over the 128 KiB limit. Call … again with limit
/// 12 …": the size, the limit, and the page size that would fit, from the
/// call's `limit` (its default when absent) scaled down by the overshoot.
fn output_too_large_message(site: CallSite<'_>, bytes: usize, limit: usize) -> String {
    let tool = site.tool.name;
    let kib = |n: usize| n.div_ceil(1024);
    let mut message = format!(
        "The result is {} KiB, over the {} KiB limit of a tool result. Call {tool} again",
        kib(bytes),
        kib(limit)
    );
    let asked = site
        .arguments
        .get("limit")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(u64::from(crate::tools::DEFAULT_LIMIT));
    let fits = (asked as usize).saturating_mul(limit) / bytes.max(1);
    if fits >= 1 && (fits as u64) < asked {
        message.push_str(&format!(" with limit {fits} or less, or"));
    }
    message.push_str(
        " with narrower filters (one location, a shorter period), and read further pages with \
         meta.next_cursor.",
    );
    message
}

/// The message of a typed RPC's status: what failed in the request's terms
/// and what the caller can do; no tool names, no assistant, no consent.
fn typed_message(error: &DomainError, kind: ToolKind) -> String {
    match error {
        DomainError::InvalidArguments(violations) => {
            let parts = violation_texts(violations, "field ");
            if parts.is_empty() {
                "the request is invalid".to_owned()
            } else {
                parts.join("; ")
            }
        }
        DomainError::Unavailable(operation) => match operation {
            AbsentOperation::OrderCancellation => {
                "cancelling or rejecting an order is not available; UpdateOrderStatus only \
                 moves an order forward"
            }
            AbsentOperation::Refund => "refunds are not available; nothing was changed",
            AbsentOperation::LocationClosure => {
                "closing or deleting a location is not available; UpdateLocationStatus can \
                 pause its order intake"
            }
            AbsentOperation::ItemRemoval => {
                "removing a catalog item is not available; UpdateCatalogItemAvailability can \
                 mark it sold_out"
            }
        }
        .to_owned(),
        DomainError::UnknownTool(_) => "no such operation".to_owned(),
        DomainError::CursorInvalid => "the page cursor is invalid, expired or was issued for \
                                       other filters; repeat the request without a cursor, or \
                                       pass next_cursor unchanged with the same filters"
            .to_owned(),
        DomainError::Forbidden => {
            "the identifier is unknown or outside the caller's access".to_owned()
        }
        DomainError::NotFound => "the resource was not found".to_owned(),
        DomainError::ScopeRequired(scope) => {
            format!("the call's credentials lack scope {scope}")
        }
        DomainError::Unauthenticated => {
            "the call's credentials are missing, invalid or expired".to_owned()
        }
        DomainError::ExpectedStateMismatch(state) => format!(
            "the resource changed since it was read: its current state is {}; read it \
             again and send that state as the expected one",
            state.as_str()
        ),
        DomainError::OrderStatusPrecondition { from, to, current } => {
            typed_transition_message(*from, *to, *current)
        }
        DomainError::Dependency(..) => {
            "a service this one depends on is unavailable; retry shortly".to_owned()
        }
        DomainError::DeadlineExceeded => match kind {
            ToolKind::Read => "the deadline expired before the read finished".to_owned(),
            ToolKind::Write => "the deadline expired before the change finished and it may \
                                have taken effect; read the current state before retrying"
                .to_owned(),
        },
        DomainError::OutputTooLarge { .. } => {
            "the response would be too large; request a smaller page or narrower filters".to_owned()
        }
        DomainError::WritesDisabled => {
            "writes are switched off by the operator; reads keep working".to_owned()
        }
        DomainError::IdempotencyMismatch => "this idempotency_key was already used with other \
                                             fields; repeat the original request, or use a new \
                                             idempotency_key for a new operation"
            .to_owned(),
        DomainError::OperationInProgress { .. } => "the same operation is still running; retry \
                                                    after the RetryInfo delay with the same \
                                                    idempotency_key"
            .to_owned(),
        DomainError::Overloaded { .. } => "the service is busy with other calls of this kind; \
                                           retry after the RetryInfo delay"
            .to_owned(),
        DomainError::Internal(_) => {
            "internal error; retry once, and report the call if it fails again".to_owned()
        }
    }
}

/// [`transition_message`] for gRPC callers: the statuses the order can move
/// to, without the MCP tool's name.
fn typed_transition_message(
    from: OrderStatus,
    to: OrderStatus,
    current: Option<OrderStatus>,
) -> String {
    let allowed = CurrentState::Order(current.unwrap_or(from)).reachable();
    let now = current.unwrap_or(from).as_str();
    let (from, to) = (from.as_str(), to.as_str());
    let mut message = format!("an order in status {from} cannot move to {to}");
    if current.is_some() {
        message.push_str(&format!("; its current status is {now}"));
    }
    if allowed.is_empty() {
        message.push_str(&format!("; from {now} it cannot change status any more"));
    } else {
        message.push_str(&format!(
            "; from {now} it can move to: {}",
            allowed.join(", ")
        ));
    }
    message
}

/// "The order changed since it was read: its current state is accepted. …",
/// with the read tool, the argument to pass it in and, for orders, where it
/// can move from there.
fn mismatch_message(tool: Option<&ToolSpec>, state: CurrentState) -> String {
    let (current, allowed) = (state.as_str(), state.reachable());
    let source = tool.and_then(crate::tools::state_source);
    let Some((
        StateGuard {
            what,
            argument: field,
            lifecycle,
        },
        reload,
    )) = source
    else {
        return format!(
            "The resource changed since it was read: its current state is {current}. Decide \
             again from that state, passing it as the expected one."
        );
    };
    let mut message = format!(
        "{what} changed since it was read: its current state is {current}. Reload it with \
         {}, then decide again with {field} {current}",
        reload.name
    );
    if lifecycle == Lifecycle::Named {
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

/// Each violation as "{prefix}{field} {rule}", or its rule alone when it
/// names no field.
fn violation_texts(violations: &[FieldViolation], prefix: &str) -> Vec<String> {
    violations
        .iter()
        .map(|v| {
            if v.field.is_empty() {
                v.description.clone()
            } else {
                format!("{prefix}{} {}", v.field, v.description)
            }
        })
        .collect()
}

/// "Invalid arguments: limit must be at most 50; pass meta.next_cursor …".
/// Each violation names the field, the rule and, where there is one, the
/// next step; the values themselves are never repeated.
fn invalid_arguments_message(violations: &[FieldViolation]) -> String {
    let parts = violation_texts(violations, "");
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
fn transition_message(from: OrderStatus, to: OrderStatus, current: Option<OrderStatus>) -> String {
    let allowed = CurrentState::Order(current.unwrap_or(from)).reachable();
    let now = current.unwrap_or(from).as_str();
    let finished_already = from.next_statuses().is_empty();
    let (from, to) = (from.as_str(), to.as_str());
    let mut message = match finished_already {
        true => {
            format!("An order in status {from} cannot change status any more (asked: {to}).")
        }
        _ => format!("An order in status {from} cannot move to {to}: statuses only move forward."),
    };
    if current.is_some() {
        message.push_str(&format!(
            " The order also changed since it was read: its current status is {now}."
        ));
    }
    let finished = " Read it with chataigne_order_get, or find the orders still in progress \
                    with chataigne_orders_list and statuses received, accepted, preparing, \
                    ready, out_for_delivery.";
    match allowed.as_slice() {
        [] if current.is_some() => {
            message.push_str(" It cannot change status any more; nothing was changed.");
            message.push_str(finished);
        }
        [] => {
            message.push_str(" Nothing was changed.");
            message.push_str(finished);
        }
        [only] => message.push_str(&format!(
            " From {now} it can move to: {only}; call chataigne_order_status_update with \
             status {only} and expected_status {now}."
        )),
        _ => message.push_str(&format!(
            " From {now} it can move to: {}; call chataigne_order_status_update with one of \
             them as status (the steps between are taken too) and expected_status {now}.",
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
            DomainError::ExpectedStateMismatch(CurrentState::Order(OrderStatus::Preparing)),
            ToolKind::Write,
        );
        assert!(
            status.message().contains("its current state is preparing"),
            "{}",
            status.message()
        );
        let status = to_status(
            DomainError::OrderStatusPrecondition {
                from: OrderStatus::Ready,
                to: OrderStatus::Accepted,
                current: None,
            },
            ToolKind::Write,
        );
        assert_eq!(
            status.message(),
            "An order in status ready cannot move to accepted: statuses only move forward. \
             From ready it can move to: out_for_delivery, completed; call \
             chataigne_order_status_update with one of them as status (the steps between are \
             taken too) and expected_status ready."
        );
        let stale = to_status(
            DomainError::OrderStatusPrecondition {
                from: OrderStatus::Accepted,
                to: OrderStatus::Received,
                current: Some(OrderStatus::Received),
            },
            ToolKind::Write,
        );
        assert_eq!(
            stale.message(),
            "An order in status accepted cannot move to received: statuses only move forward. \
             The order also changed since it was read: its current status is received. From \
             received it can move to: accepted, preparing, ready, out_for_delivery, completed; \
             call chataigne_order_status_update with one of them as status (the steps between \
             are taken too) and expected_status received."
        );
        let done = to_status(
            DomainError::OrderStatusPrecondition {
                from: OrderStatus::Completed,
                to: OrderStatus::Ready,
                current: None,
            },
            ToolKind::Write,
        );
        assert_eq!(
            done.message(),
            "An order in status completed cannot change status any more (asked: ready). \
             Nothing was changed. Read it with chataigne_order_get, or find the orders still in \
             progress with chataigne_orders_list and statuses received, accepted, preparing, \
             ready, out_for_delivery."
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
                DomainError::ExpectedStateMismatch(CurrentState::Order(OrderStatus::Accepted)),
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
                    from: OrderStatus::Ready,
                    to: OrderStatus::Accepted,
                    current: None,
                },
                ToolKind::Write,
                ORDER,
                &[
                    "can move to: out_for_delivery, completed",
                    ORDER,
                    "expected_status ready",
                ],
            ),
            (
                DomainError::OrderStatusPrecondition {
                    from: OrderStatus::Completed,
                    to: OrderStatus::Ready,
                    current: None,
                },
                ToolKind::Write,
                ORDER,
                &["chataigne_order_get", "chataigne_orders_list"],
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
                &[
                    "after the suggested delay",
                    "chataigne_conversation_message_send",
                ],
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
                // 200 KiB for the default page of 20: 12 would fit.
                DomainError::OutputTooLarge {
                    bytes: 200 * 1024,
                    limit: 128 * 1024,
                },
                ToolKind::Read,
                LIST,
                &[
                    "The result is 200 KiB, over the 128 KiB limit",
                    "Call chataigne_orders_list again with limit 12 or less",
                    "narrower filters",
                    "meta.next_cursor",
                ],
            ),
            (
                DomainError::Internal("boom".into()),
                ToolKind::Read,
                LIST,
                &[LIST, "request_id"],
            ),
            (
                DomainError::Overloaded {
                    retry_after: Duration::from_secs(1),
                },
                ToolKind::Read,
                LIST,
                &[LIST, "retry_after_ms"],
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
    fn an_exhausted_class_is_overloaded_with_a_retry_hint_not_a_dependency_failure() {
        let status = to_status(
            DomainError::Overloaded {
                retry_after: std::time::Duration::from_secs(1),
            },
            ToolKind::Read,
        );
        let decoded = decode_status(&status);
        assert_eq!(decoded.code, ErrorCode::Overloaded);
        assert!(decoded.code.retryable());
        assert_eq!(decoded.retry_after, Some(std::time::Duration::from_secs(1)));
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
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
        // The refusal names a next step: telling the customer.
        assert!(
            status
                .message()
                .contains("reply with chataigne_conversation_message_send"),
            "{}",
            status.message()
        );
    }

    #[test]
    fn illegal_order_transitions_have_their_own_code() {
        let status = to_status(
            DomainError::OrderStatusPrecondition {
                from: OrderStatus::Received,
                to: OrderStatus::Ready,
                current: None,
            },
            ToolKind::Write,
        );
        let decoded = chataigne_common::codes::decode_status_with(&status, domain_codes::behaviour);
        assert_eq!(decoded.code_name(), "ORDER_STATUS_PRECONDITION_FAILED");
        assert_eq!(decoded.code, ErrorCode::ExpectedStateMismatch);
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

    /// What an MCP caller reads (a model, an assistant, its tools and
    /// consent) never reaches a typed RPC's status, whose codes and details
    /// stay those of the shared table.
    #[test]
    fn typed_statuses_keep_the_codes_and_details_in_grpc_wording() {
        use std::time::Duration;
        const MCP_WORDING: &[&str] = &[
            "chataigne_",
            "Reconnect",
            "consent",
            "assistant",
            "input schema",
            "meta.next_cursor",
            "tool",
            "Sign in",
            "signed-in",
        ];
        let violation = FieldViolation {
            field: "organization_id".into(),
            description: "is required".into(),
        };
        let cases: Vec<(DomainError, ToolKind, &str)> = vec![
            (
                DomainError::InvalidArguments(vec![violation.clone()]),
                ToolKind::Read,
                "field organization_id is required",
            ),
            (
                DomainError::ScopeRequired("orders.read".into()),
                ToolKind::Read,
                "the call's credentials lack scope orders.read",
            ),
            (DomainError::Unauthenticated, ToolKind::Read, "credentials"),
            (DomainError::Forbidden, ToolKind::Read, "caller's access"),
            (DomainError::NotFound, ToolKind::Read, "not found"),
            (DomainError::CursorInvalid, ToolKind::Read, "cursor"),
            (
                DomainError::ExpectedStateMismatch(CurrentState::Intake(
                    crate::domain::IntakeStatus::Paused,
                )),
                ToolKind::Write,
                "current state is paused",
            ),
            (
                DomainError::OrderStatusPrecondition {
                    from: OrderStatus::Received,
                    to: OrderStatus::Ready,
                    current: None,
                },
                ToolKind::Write,
                "from received it can move to: accepted",
            ),
            (
                DomainError::Dependency(crate::domain::Dependency::Database, "db:5432".into()),
                ToolKind::Read,
                "retry shortly",
            ),
            (DomainError::DeadlineExceeded, ToolKind::Read, "deadline"),
            (
                DomainError::DeadlineExceeded,
                ToolKind::Write,
                "may have taken effect",
            ),
            (
                DomainError::OutputTooLarge { bytes: 2, limit: 1 },
                ToolKind::Read,
                "smaller page",
            ),
            (DomainError::WritesDisabled, ToolKind::Write, "switched off"),
            (
                DomainError::IdempotencyMismatch,
                ToolKind::Write,
                "idempotency_key",
            ),
            (
                DomainError::OperationInProgress {
                    retry_after: Duration::from_secs(1),
                },
                ToolKind::Write,
                "RetryInfo",
            ),
            (
                DomainError::Unavailable(AbsentOperation::OrderCancellation),
                ToolKind::Write,
                "not available",
            ),
            (
                DomainError::Internal("secret".into()),
                ToolKind::Read,
                "internal error",
            ),
        ];
        for (error, kind, needle) in cases {
            let label = format!("{error:?}");
            let typed = typed_status(error, kind);
            let decoded =
                chataigne_common::codes::decode_status_with(&typed, domain_codes::behaviour);
            assert!(
                typed.message().contains(needle),
                "{label}: {}",
                typed.message()
            );
            for word in MCP_WORDING {
                assert!(
                    !typed.message().contains(word),
                    "{label}: {:?} has MCP wording {word:?}",
                    typed.message()
                );
            }
            assert_eq!(decoded.message, typed.message());
            // The rich status in the details repeats the same code and message.
            let rich = <tonic_types::pb::Status as prost::Message>::decode(typed.details())
                .expect("a google.rpc.Status in the details");
            assert_eq!(rich.message, typed.message(), "{label}");
            assert_eq!(rich.code, typed.code() as i32, "{label}");
            if label.starts_with("InvalidArguments") {
                assert_eq!(typed.code(), tonic::Code::InvalidArgument);
                assert_eq!(decoded.violations, vec![violation.clone()]);
            }
        }
        let refused = typed_status(
            DomainError::ScopeRequired("orders.read".into()),
            ToolKind::Read,
        );
        let decoded = decode_status(&refused);
        assert_eq!(decoded.code, ErrorCode::ScopeRequired);
        assert_eq!(refused.code(), tonic::Code::PermissionDenied);
        assert!(
            decoded
                .metadata
                .contains(&("scope".to_owned(), "orders.read".to_owned()))
        );
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
