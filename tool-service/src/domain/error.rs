//! The tool-service's one error enum; mapped to `tonic::Status` in `grpc::status`.

use chataigne_common::codes::FieldViolation;

use super::{Availability, IntakeStatus, OrderStatus};

#[derive(Debug, thiserror::Error)]
pub enum DomainError {
    /// Arguments failed validation.
    #[error("invalid arguments")]
    InvalidArguments(Vec<FieldViolation>),
    /// No tool of that name exists.
    #[error("unknown tool {0}")]
    UnknownTool(String),
    /// A cursor that was not issued for this tool, filters and caller, or expired.
    #[error("invalid cursor")]
    CursorInvalid,
    /// The target does not exist or the caller may not see it (indistinguishable).
    #[error("resource forbidden")]
    Forbidden,
    /// The caller is authorized for the owner but the resource does not exist.
    #[error("resource not found")]
    NotFound,
    /// The caller lacks the OAuth scope.
    #[error("scope required: {0}")]
    ScopeRequired(String),
    /// The caller's credential is missing or invalid.
    #[error("unauthenticated")]
    Unauthenticated,
    /// The observed state differs from the current one, given here.
    #[error("expected state mismatch")]
    ExpectedStateMismatch(CurrentState),
    /// The requested order status `to` does not follow the observed one
    /// `from` (forward transitions only); `current` is the order's status
    /// now, when it differs from the observed one. Nothing was written.
    #[error("order status transition not allowed")]
    OrderStatusPrecondition {
        from: OrderStatus,
        to: OrderStatus,
        current: Option<OrderStatus>,
    },
    /// An operation this server deliberately leaves out (seed 001), asked
    /// for through an argument value; nothing was written.
    #[error("operation not available through this server")]
    Unavailable(AbsentOperation),
    /// A dependency failed or timed out; the detail is for logs only.
    #[error("{0} unavailable: {1}")]
    Dependency(Dependency, String),
    /// The database statement ran past its deadline.
    #[error("deadline exceeded")]
    DeadlineExceeded,
    /// An idempotency key reused with other arguments.
    #[error("idempotency key reused with other arguments")]
    IdempotencyMismatch,
    /// The same idempotent operation is still running.
    #[error("operation in progress")]
    OperationInProgress { retry_after: std::time::Duration },
    /// Every slot of the call's deadline class stayed busy past the
    /// admission queue: the service is busy, not unavailable.
    #[error("overloaded")]
    Overloaded { retry_after: std::time::Duration },
    /// An operator switched every write tool off (the `writes` flag).
    #[error("writes disabled by the operator")]
    WritesDisabled,
    /// The structured result, `bytes` long serialized, exceeds the output
    /// bound of `limit` bytes.
    #[error("output too large")]
    OutputTooLarge { bytes: usize, limit: usize },
    /// Anything else: logged with detail, answered without.
    #[error("internal error: {0}")]
    Internal(String),
}

/// Operations deliberately absent from this server (seed 001: cancellation
/// and rejection, refunds, destructive deletion) that an argument value can
/// still name, e.g. `status: "cancelled"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AbsentOperation {
    OrderCancellation,
    Refund,
    LocationClosure,
    ItemRemoval,
}

impl AbsentOperation {
    /// What the caller is told: the operation is not available here, nothing
    /// changed, and what the server does offer instead.
    pub fn message(self) -> &'static str {
        match self {
            AbsentOperation::OrderCancellation => {
                "Cancelling or rejecting an order is not available through this server, and no \
                 combination of its tools does it; nothing was changed. \
                 chataigne_order_status_update only moves an order forward: received → \
                 accepted → preparing → ready → out_for_delivery or completed. To tell the \
                 customer, find their conversation with chataigne_conversations_list and reply \
                 with chataigne_conversation_message_send."
            }
            AbsentOperation::Refund => {
                "Refunds are not available through this server, and no combination of its \
                 tools makes one; nothing was changed. chataigne_order_status_update only \
                 moves an order forward: received → accepted → preparing → ready → \
                 out_for_delivery or completed. To tell the customer, find their conversation \
                 with chataigne_conversations_list and reply with \
                 chataigne_conversation_message_send."
            }
            AbsentOperation::LocationClosure => {
                "Closing or deleting a location is not available through this server; nothing \
                 was changed. To stop new orders for a while, call \
                 chataigne_location_status_update with status paused, optionally with \
                 paused_until."
            }
            AbsentOperation::ItemRemoval => {
                "Removing an item from the menu is not available through this server; nothing \
                 was changed. To stop it being ordered, call \
                 chataigne_catalog_item_availability_update with availability sold_out."
            }
        }
    }
}

/// What a tool call depends on, as named in logs and metric labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dependency {
    AuthService,
    Database,
}

impl Dependency {
    pub fn as_str(self) -> &'static str {
        match self {
            Dependency::AuthService => "auth_service",
            Dependency::Database => "database",
        }
    }
}

impl std::fmt::Display for Dependency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The state a guarded write found instead of the one the caller observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CurrentState {
    Order(OrderStatus),
    Intake(IntakeStatus),
    Availability(Availability),
}

impl CurrentState {
    pub fn as_str(self) -> &'static str {
        match self {
            CurrentState::Order(status) => status.as_str(),
            CurrentState::Intake(status) => status.as_str(),
            CurrentState::Availability(availability) => availability.as_str(),
        }
    }

    /// The states reachable from this one, where the resource has a
    /// lifecycle (orders); empty otherwise.
    pub fn reachable(self) -> Vec<&'static str> {
        match self {
            CurrentState::Order(status) => status
                .next_statuses()
                .into_iter()
                .map(OrderStatus::as_str)
                .collect(),
            CurrentState::Intake(_) | CurrentState::Availability(_) => Vec::new(),
        }
    }
}

impl DomainError {
    pub fn invalid(field: &str, description: impl Into<String>) -> Self {
        DomainError::InvalidArguments(vec![FieldViolation {
            field: field.to_owned(),
            description: description.into(),
        }])
    }
}
