//! The restaurant domain's own error codes, beyond the shared table of
//! `chataigne_common::codes`, and the keys of the facts they carry: each is
//! declared here once, encoded by `status.rs` and listed in the catalogue
//! (`ListToolsResponse.error_codes`), so that the gateway, which knows no
//! restaurant concept, answers them by name with the behaviour of the shared
//! code each one behaves as.

use chataigne_common::ErrorCode;
use chataigne_common::codes::DomainCode;
use chataigne_proto::tools::v1 as pb;

/// An order cannot move from its status to the requested one (a backward or
/// standing move): the caller re-reads the order and decides again, exactly
/// as for a stale expected state.
pub const ORDER_STATUS_PRECONDITION_FAILED: DomainCode = DomainCode {
    name: "ORDER_STATUS_PRECONDITION_FAILED",
    behaves_as: ErrorCode::ExpectedStateMismatch,
};

/// Every domain code, as the catalogue lists them.
pub const ALL: &[DomainCode] = &[ORDER_STATUS_PRECONDITION_FAILED];

/// A fact of an [`ORDER_STATUS_PRECONDITION_FAILED`] refusal, a key of its
/// `ErrorInfo.metadata` (copied into the envelope's `details`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OrderStatusDetail {
    /// The status the caller observed.
    Expected,
    /// The status the caller asked for.
    Requested,
    /// The order's status now.
    Current,
}

impl OrderStatusDetail {
    /// The key as written on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            OrderStatusDetail::Expected => "expected_status",
            OrderStatusDetail::Requested => "requested_status",
            OrderStatusDetail::Current => "current_status",
        }
    }

    /// The metadata pair `(key, value)`.
    pub fn pair(self, value: impl Into<String>) -> (String, String) {
        (self.as_str().to_owned(), value.into())
    }
}

/// The catalogue's listing of every domain code.
pub fn descriptors() -> Vec<pb::ErrorCodeDescriptor> {
    ALL.iter()
        .map(|code| pb::ErrorCodeDescriptor {
            code: code.name.to_owned(),
            behaves_as: code.behaves_as.as_str().to_owned(),
        })
        .collect()
}

/// The shared code `reason` behaves as, if it is one of these domain codes
/// (for this service's own readers of its statuses).
pub fn behaviour(reason: &str) -> Option<(std::sync::Arc<str>, ErrorCode)> {
    ALL.iter()
        .find(|code| code.name == reason)
        .map(|code| (std::sync::Arc::from(code.name), code.behaves_as))
}

/// The name of the code `status` carries, as a bounded label (metrics, the
/// call's log line): a domain code's own, else the shared code's.
pub fn label(status: &tonic::Status) -> &'static str {
    let decoded = chataigne_common::codes::decode_status_with(status, behaviour);
    ALL.iter()
        .find(|code| decoded.name.as_deref() == Some(code.name))
        .map_or(decoded.code.as_str(), |code| code.name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_codes_are_outside_the_shared_table_and_behave_as_one_of_it() {
        for code in ALL {
            assert_eq!(ErrorCode::parse(code.name), None, "{}", code.name);
            assert!(ErrorCode::ALL.contains(&code.behaves_as));
            assert_eq!(code.name, code.name.to_ascii_uppercase());
        }
        let listed = descriptors();
        assert_eq!(listed.len(), ALL.len());
        assert_eq!(listed[0].behaves_as, "MCP_EXPECTED_STATE_MISMATCH");
        let status = ORDER_STATUS_PRECONDITION_FAILED.to_status("no", None, &[], &[]);
        assert_eq!(label(&status), "ORDER_STATUS_PRECONDITION_FAILED");
        assert_eq!(label(&ErrorCode::RateLimited.status()), "MCP_RATE_LIMITED");
    }
}
