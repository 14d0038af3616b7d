//! The one table of error codes shared by every service (SPEC §6): each code's
//! category, retryability, default safe message and gRPC status code, plus the
//! encoding of a code into a `tonic::Status` with rich details and back.

use std::sync::Arc;
use std::time::Duration;

use tonic::{Code, Status};
use tonic_types::{ErrorDetails, StatusExt};

/// The `ErrorInfo.domain` of every status a Chataigne service produces.
pub const ERROR_DOMAIN: &str = "chataigne.mcp";

/// Broad classes of failure, as exposed in the error envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Category {
    Validation,
    Authentication,
    Authorization,
    NotFound,
    Conflict,
    RateLimit,
    Timeout,
    Dependency,
    Internal,
}

impl Category {
    pub fn as_str(self) -> &'static str {
        match self {
            Category::Validation => "validation",
            Category::Authentication => "authentication",
            Category::Authorization => "authorization",
            Category::NotFound => "not_found",
            Category::Conflict => "conflict",
            Category::RateLimit => "rate_limit",
            Category::Timeout => "timeout",
            Category::Dependency => "dependency",
            Category::Internal => "internal",
        }
    }
}

/// The JSON-RPC error codes of the Connected Apps platform (seed 004, "Gestion
/// des erreurs MCP") for the failures it handles itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PlatformCode {
    /// -32300 `USER_RATE_LIMITED`.
    RateLimited,
    /// -32301 `MISSING_REQUIRED_INFORMATION`: the request lacks something the
    /// model cannot supply itself.
    MissingInformation,
    /// -32302 `USER_PERMISSION_DENIED`.
    PermissionDenied,
    /// -32400 `RUNTIME_ERROR`.
    Runtime,
    /// -32500 `DEADLINE_EXCEEDED`.
    DeadlineExceeded,
    /// -32501 `RESOURCE_EXHAUSTED`.
    ResourceExhausted,
    /// -32502 `SERVICE_UNAVAILABLE`.
    ServiceUnavailable,
}

impl PlatformCode {
    /// The JSON-RPC error code.
    pub fn code(self) -> i64 {
        match self {
            PlatformCode::RateLimited => -32300,
            PlatformCode::MissingInformation => -32301,
            PlatformCode::PermissionDenied => -32302,
            PlatformCode::Runtime => -32400,
            PlatformCode::DeadlineExceeded => -32500,
            PlatformCode::ResourceExhausted => -32501,
            PlatformCode::ServiceUnavailable => -32502,
        }
    }
}

/// How the Connected Apps profile delivers a failure (seed 004): a
/// recoverable one stays a tool result whose text lets the model correct
/// itself; a fatal one is a JSON-RPC error with the platform's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Treatment {
    Recoverable,
    Fatal(PlatformCode),
}

macro_rules! error_codes {
    ($( $variant:ident => $code:literal, $category:ident, $retryable:literal, $grpc:ident, $treatment:expr, $message:literal; )*) => {
        /// Every error code a tool call can end with.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode { $( $variant, )* }

        impl ErrorCode {
            /// All codes, in table order.
            pub const ALL: &'static [ErrorCode] = &[ $( ErrorCode::$variant, )* ];

            /// The wire name, e.g. `MCP_RESOURCE_FORBIDDEN`.
            pub fn as_str(self) -> &'static str {
                match self { $( ErrorCode::$variant => $code, )* }
            }

            pub fn category(self) -> Category {
                match self { $( ErrorCode::$variant => Category::$category, )* }
            }

            /// Whether the same call may succeed later unchanged.
            pub fn retryable(self) -> bool {
                match self { $( ErrorCode::$variant => $retryable, )* }
            }

            /// The gRPC status code this error travels as.
            pub fn grpc_code(self) -> Code {
                match self { $( ErrorCode::$variant => Code::$grpc, )* }
            }

            /// Recoverable (a tool result) or fatal (a platform JSON-RPC error)
            /// for the Connected Apps profile: the one classifier of seed 004.
            pub fn treatment(self) -> Treatment {
                use PlatformCode::*;
                use Treatment::*;
                match self { $( ErrorCode::$variant => $treatment, )* }
            }

            /// A safe message that says what to do next and leaks nothing.
            pub fn default_message(self) -> &'static str {
                match self { $( ErrorCode::$variant => $message, )* }
            }

            pub fn parse(code: &str) -> Option<ErrorCode> {
                match code { $( $code => Some(ErrorCode::$variant), )* _ => None }
            }
        }
    };
}

error_codes! {
    InvalidArguments => "MCP_INVALID_ARGUMENTS", Validation, false, InvalidArgument, Recoverable,
        "Some arguments are invalid. Correct the fields listed in the error and call again.";
    Unauthenticated => "MCP_UNAUTHENTICATED", Authentication, false, Unauthenticated, Fatal(PermissionDenied),
        "The sign-in is missing or no longer valid. Sign in to Chataigne again.";
    ScopeRequired => "MCP_SCOPE_REQUIRED", Authorization, false, PermissionDenied, Fatal(PermissionDenied),
        "The signed-in user has not granted this permission to the assistant. Reconnect the app and approve the requested access.";
    ResourceForbidden => "MCP_RESOURCE_FORBIDDEN", Authorization, false, PermissionDenied, Recoverable,
        "The identifier is unknown or outside the signed-in user's access. Take identifiers from the matching list tool instead of guessing them.";
    ResourceNotFound => "MCP_RESOURCE_NOT_FOUND", NotFound, false, NotFound, Recoverable,
        "The resource was not found. Take its identifier from the matching list tool and call again.";
    CursorInvalid => "MCP_CURSOR_INVALID", Validation, false, InvalidArgument, Recoverable,
        "The cursor is invalid, expired or was issued for other filters. Call again without cursor, or pass meta.next_cursor unchanged with the same filters.";
    ExpectedStateMismatch => "MCP_EXPECTED_STATE_MISMATCH", Conflict, false, FailedPrecondition, Recoverable,
        "The resource changed since it was read. Read its current state, then decide again with that state as the expected one.";
    IdempotencyMismatch => "MCP_IDEMPOTENCY_MISMATCH", Conflict, false, AlreadyExists, Recoverable,
        "The idempotency key was already used with other arguments. Repeat the original arguments, or use a new key for a new operation.";
    OperationInProgress => "MCP_OPERATION_IN_PROGRESS", Conflict, true, Aborted, Recoverable,
        "The same operation is still running. Retry after the suggested delay with the same idempotency key.";
    WritesDisabled => "MCP_WRITES_DISABLED", Authorization, true, Unavailable, Fatal(PermissionDenied),
        "Changes are switched off by the operator for now; reads keep working. Try the change again later.";
    RateLimited => "MCP_RATE_LIMITED", RateLimit, true, ResourceExhausted, Fatal(RateLimited),
        "Too many calls. Retry after the suggested delay.";
    ToolTimeout => "MCP_TOOL_TIMEOUT", Timeout, true, DeadlineExceeded, Fatal(DeadlineExceeded),
        "The read did not finish in time. Retry, or narrow the query (a shorter period, fewer results).";
    OutcomeUnknown => "MCP_OUTCOME_UNKNOWN", Timeout, false, DeadlineExceeded, Fatal(DeadlineExceeded),
        "The change did not finish in time and may have taken effect. Read the resource's current state before any retry.";
    OutputTooLarge => "MCP_OUTPUT_TOO_LARGE", Validation, false, OutOfRange, Recoverable,
        "The result is too large. Call the tool again with a smaller limit or narrower filters, and read further pages with the cursor.";
    DependencyUnavailable => "MCP_DEPENDENCY_UNAVAILABLE", Dependency, true, Unavailable, Fatal(ServiceUnavailable),
        "A service this tool depends on is unavailable. Retry shortly.";
    Overloaded => "MCP_OVERLOADED", Dependency, true, ResourceExhausted, Fatal(ResourceExhausted),
        "The service is overloaded. Retry after the suggested delay.";
    InternalError => "MCP_INTERNAL_ERROR", Internal, true, Internal, Fatal(Runtime),
        "An unexpected error occurred. Retry once and report the request ID if it happens again.";
}

/// A field that failed validation, carried as a `BadRequest` violation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldViolation {
    pub field: String,
    pub description: String,
}

/// A code of one service's own domain, beyond the shared table: it behaves
/// exactly as the shared code `behaves_as` (category, retryability, gRPC
/// code, Connected Apps treatment) and is reported under its own `name`.
/// The service declares its codes in the catalogue it lists, so that callers
/// that know nothing of its domain accept them by name
/// ([`decode_status_with`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DomainCode {
    /// The wire name (`ErrorInfo.reason`), in capitals.
    pub name: &'static str,
    pub behaves_as: ErrorCode,
}

impl DomainCode {
    /// Encodes this code as [`ErrorCode::to_status`] does, with its own name
    /// as the reason and the gRPC code of `behaves_as`.
    pub fn to_status(
        self,
        message: impl Into<String>,
        retry_after: Option<Duration>,
        violations: &[FieldViolation],
        metadata: &[(String, String)],
    ) -> Status {
        encode(
            self.name,
            self.behaves_as.grpc_code(),
            message.into(),
            retry_after,
            violations,
            metadata,
        )
    }
}

/// What a `tonic::Status` produced by [`ErrorCode::to_status`] carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedStatus {
    /// The shared code it behaves as.
    pub code: ErrorCode,
    /// A domain code's own name ([`DomainCode`]), reported in place of
    /// `code`'s; `None` for a code of the shared table.
    pub name: Option<Arc<str>>,
    pub message: String,
    pub retry_after: Option<Duration>,
    pub violations: Vec<FieldViolation>,
    /// Extra non-sensitive facts (e.g. `current_status`) from `ErrorInfo.metadata`,
    /// keyed by [`crate::status_details::DetailKey`]; read one with
    /// [`DecodedStatus::detail`].
    pub metadata: Vec<(String, String)>,
}

/// A delay as people say it, rounded up: "1 second", "12 seconds",
/// "3 minutes" (from two minutes on).
pub fn delay_in_words(delay: Duration) -> String {
    let seconds = delay.as_millis().div_ceil(1000).max(1);
    if seconds >= 120 {
        let minutes = seconds.div_ceil(60);
        format!("{minutes} minutes")
    } else if seconds == 1 {
        "1 second".to_owned()
    } else {
        format!("{seconds} seconds")
    }
}

/// The phrase of a message that stands for its delay until it is spoken.
const SUGGESTED_DELAY: &str = "after the suggested delay";

impl DecodedStatus {
    /// A failure of `code` with its default message and no details.
    pub fn of(code: ErrorCode) -> DecodedStatus {
        DecodedStatus {
            code,
            name: None,
            message: code.default_message().to_owned(),
            retry_after: None,
            violations: Vec::new(),
            metadata: Vec::new(),
        }
    }

    /// The code as reported to callers: a domain code's own name, else the
    /// shared code's.
    pub fn code_name(&self) -> &str {
        self.name.as_deref().unwrap_or(self.code.as_str())
    }

    /// The message as the caller reads it: with a delay (`retry_after`), the
    /// delay in words ("Retry in 12 seconds."), in place of "after the
    /// suggested delay" or after the message; without one, the message.
    /// Every rendering of a failure goes through this.
    pub fn spoken_message(&self) -> String {
        let Some(delay) = self.retry_after else {
            return self.message.clone();
        };
        let words = delay_in_words(delay);
        if self.message.contains(SUGGESTED_DELAY) {
            self.message
                .replace(SUGGESTED_DELAY, &format!("in {words}"))
        } else {
            format!("{} Retry in {words}.", self.message)
        }
    }
}

impl ErrorCode {
    /// Encodes this code as a status with `ErrorInfo` (reason = the code),
    /// optional `RetryInfo` and `BadRequest` details.
    pub fn to_status(
        self,
        message: impl Into<String>,
        retry_after: Option<Duration>,
        violations: &[FieldViolation],
        metadata: &[(String, String)],
    ) -> Status {
        encode(
            self.as_str(),
            self.grpc_code(),
            message.into(),
            retry_after,
            violations,
            metadata,
        )
    }

    /// Shorthand for a status with the default message and no details.
    pub fn status(self) -> Status {
        self.to_status(self.default_message(), None, &[], &[])
    }
}

/// A status of `code` with `ErrorInfo` (`reason`, our domain, `metadata`),
/// optional `RetryInfo` and `BadRequest` details.
fn encode(
    reason: &str,
    code: Code,
    message: String,
    retry_after: Option<Duration>,
    violations: &[FieldViolation],
    metadata: &[(String, String)],
) -> Status {
    let mut details = ErrorDetails::new();
    details.set_error_info(
        reason,
        ERROR_DOMAIN,
        metadata
            .iter()
            .cloned()
            .collect::<std::collections::HashMap<String, String>>(),
    );
    if let Some(delay) = retry_after {
        details.set_retry_info(Some(delay));
    }
    for violation in violations {
        details.add_bad_request_violation(&violation.field, &violation.description);
    }
    Status::with_error_details(code, message, details)
}

/// `status` with another message: the code, metadata and details stay, and
/// the `google.rpc.Status` in the details carries the new message too (a
/// client's rich-status reader checks that both agree).
pub fn reword_status(status: &Status, message: impl Into<String>) -> Status {
    Status::with_error_details_and_metadata(
        status.code(),
        message.into(),
        status.get_error_details(),
        status.metadata().clone(),
    )
}

/// Decodes a status produced by a Chataigne service. Statuses without our
/// `ErrorInfo` (transport failures, foreign servers) are classified by their
/// gRPC code: unavailable/unknown transport errors become a dependency error.
/// A reason outside the shared table is classified the same way: a caller
/// that accepts a service's domain codes decodes with [`decode_status_with`].
pub fn decode_status(status: &Status) -> DecodedStatus {
    decode_status_with(status, |_| None)
}

/// [`decode_status`], accepting the domain codes `domain` knows: a reason
/// outside the shared table that `domain` maps to the shared code it behaves
/// as keeps its name ([`DecodedStatus::code_name`]).
pub fn decode_status_with(
    status: &Status,
    domain: impl Fn(&str) -> Option<(Arc<str>, ErrorCode)>,
) -> DecodedStatus {
    let details = status.get_error_details();
    let info = details
        .error_info()
        .filter(|info| info.domain == ERROR_DOMAIN);
    let known = info.and_then(|info| match ErrorCode::parse(&info.reason) {
        Some(code) => Some((None, code)),
        None => domain(&info.reason).map(|(name, code)| (Some(name), code)),
    });
    if let Some((name, code)) = known {
        let mut metadata: Vec<(String, String)> = info
            .map(|info| {
                info.metadata
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        metadata.sort();
        return DecodedStatus {
            code,
            name,
            message: status.message().to_owned(),
            retry_after: details.retry_info().and_then(|retry| retry.retry_delay),
            violations: details
                .bad_request()
                .map(|bad| {
                    bad.field_violations
                        .iter()
                        .map(|v| FieldViolation {
                            field: v.field.clone(),
                            description: v.description.clone(),
                        })
                        .collect()
                })
                .unwrap_or_default(),
            metadata,
        };
    }
    let code = match status.code() {
        Code::DeadlineExceeded => ErrorCode::ToolTimeout,
        Code::Unavailable | Code::Unknown | Code::Cancelled => ErrorCode::DependencyUnavailable,
        Code::ResourceExhausted => ErrorCode::Overloaded,
        Code::Unauthenticated => ErrorCode::Unauthenticated,
        _ => ErrorCode::InternalError,
    };
    DecodedStatus::of(code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips_through_a_status() {
        for &code in ErrorCode::ALL {
            let status = code.to_status(
                "msg",
                Some(Duration::from_millis(1500)),
                &[FieldViolation {
                    field: "limit".into(),
                    description: "too big".into(),
                }],
                &[crate::status_details::DetailKey::CurrentState.pair("closed")],
            );
            assert_eq!(status.code(), code.grpc_code());
            let decoded = decode_status(&status);
            assert_eq!(decoded.code, code);
            assert_eq!(decoded.message, "msg");
            assert_eq!(decoded.retry_after, Some(Duration::from_millis(1500)));
            assert_eq!(decoded.violations.len(), 1);
            assert_eq!(
                decoded.metadata,
                vec![("current_state".to_owned(), "closed".to_owned())]
            );
            assert_eq!(decoded.code_name(), code.as_str());
            assert_eq!(ErrorCode::parse(code.as_str()), Some(code));
        }
    }

    #[test]
    fn foreign_statuses_are_classified_by_grpc_code() {
        let decoded = decode_status(&Status::unavailable("connection refused to 10.0.0.1"));
        assert_eq!(decoded.code, ErrorCode::DependencyUnavailable);
        assert!(
            !decoded.message.contains("10.0.0.1"),
            "no internal detail leaks"
        );
        assert_eq!(
            decode_status(&Status::deadline_exceeded("x")).code,
            ErrorCode::ToolTimeout
        );
        assert_eq!(
            decode_status(&Status::internal("boom")).code,
            ErrorCode::InternalError
        );
    }

    #[test]
    fn a_delay_is_spoken_in_words_rounded_up() {
        assert_eq!(delay_in_words(Duration::from_millis(250)), "1 second");
        assert_eq!(delay_in_words(Duration::from_millis(1000)), "1 second");
        assert_eq!(delay_in_words(Duration::from_millis(11_200)), "12 seconds");
        assert_eq!(delay_in_words(Duration::from_secs(119)), "119 seconds");
        assert_eq!(delay_in_words(Duration::from_secs(150)), "3 minutes");
    }

    /// Every code's default text names the next step; a code that comes with
    /// a delay speaks it in words.
    #[test]
    fn every_code_names_a_next_step_and_its_delay_in_words() {
        const STEPS: [&str; 9] = [
            "Correct",
            "Sign in",
            "Reconnect",
            "Take",
            "Call",
            "Read",
            "Repeat",
            "Retry",
            "Try",
        ];
        for &code in ErrorCode::ALL {
            let message = code.default_message();
            assert!(
                STEPS.iter().any(|step| message.contains(step)),
                "{}: {message}",
                code.as_str()
            );
            let delayed = DecodedStatus {
                message: message.to_owned(),
                retry_after: Some(Duration::from_millis(11_500)),
                ..DecodedStatus::of(code)
            };
            let spoken = delayed.spoken_message();
            assert!(
                spoken.contains("in 12 seconds"),
                "{}: {spoken}",
                code.as_str()
            );
            assert!(!spoken.contains(SUGGESTED_DELAY), "{spoken}");
            let undelayed = DecodedStatus {
                retry_after: None,
                ..delayed
            };
            assert_eq!(undelayed.spoken_message(), message);
        }
    }

    #[test]
    fn a_domain_code_keeps_its_name_only_for_callers_that_declare_it() {
        let domain = DomainCode {
            name: "KITCHEN_CLOSED",
            behaves_as: ErrorCode::ExpectedStateMismatch,
        };
        let status = domain.to_status("closed", None, &[], &[]);
        assert_eq!(status.code(), Code::FailedPrecondition);
        let declared = decode_status_with(&status, |reason| {
            (reason == domain.name).then(|| (Arc::from(reason), domain.behaves_as))
        });
        assert_eq!(declared.code, ErrorCode::ExpectedStateMismatch);
        assert_eq!(declared.code_name(), "KITCHEN_CLOSED");
        assert_eq!(declared.message, "closed");
        // A caller that does not know it classifies it by its gRPC code,
        // with no message of the service's.
        let unknown = decode_status(&status);
        assert_eq!(unknown.code, ErrorCode::InternalError);
        assert_eq!(unknown.name, None);
        assert_eq!(unknown.message, ErrorCode::InternalError.default_message());
    }

    #[test]
    fn messages_are_sentences_and_codes_unique() {
        let mut seen = std::collections::HashSet::new();
        for &code in ErrorCode::ALL {
            assert!(seen.insert(code.as_str()));
            assert!(code.default_message().ends_with('.'));
        }
    }
}
