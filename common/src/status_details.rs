//! The keys of the facts a refusal carries in its `ErrorInfo.metadata`
//! (written by the services that refuse, read by the gateway and typed
//! callers): each shared key is spelled here once. A service's domain codes
//! carry keys of their own, spelled beside them; the gateway copies every
//! pair into the `details` of its error envelope without reading them.

use crate::codes::DecodedStatus;

/// A key of `ErrorInfo.metadata` in a status built by
/// [`crate::ErrorCode::to_status`]. The spelling is part of the wire
/// contract: the gateway copies these pairs into the `details` of its MCP
/// error envelope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DetailKey {
    /// The OAuth scope the refused call needs (`MCP_SCOPE_REQUIRED`).
    Scope,
    /// Why the auth-service refused a credential (`MCP_UNAUTHENTICATED`).
    Reason,
    /// The state the resource is in now (`MCP_EXPECTED_STATE_MISMATCH`).
    CurrentState,
    /// The operation this server leaves out that an argument value named.
    UnavailableOperation,
}

impl DetailKey {
    /// Every key, in declaration order.
    pub const ALL: &'static [DetailKey] = &[
        DetailKey::Scope,
        DetailKey::Reason,
        DetailKey::CurrentState,
        DetailKey::UnavailableOperation,
    ];

    /// The key as written on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            DetailKey::Scope => "scope",
            DetailKey::Reason => "reason",
            DetailKey::CurrentState => "current_state",
            DetailKey::UnavailableOperation => "unavailable_operation",
        }
    }

    /// The metadata pair `(key, value)` that [`crate::ErrorCode::to_status`] takes.
    pub fn pair(self, value: impl Into<String>) -> (String, String) {
        (self.as_str().to_owned(), value.into())
    }
}

impl std::fmt::Display for DetailKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl DecodedStatus {
    /// The value of `key` in the status's metadata, if it carries one.
    pub fn detail(&self, key: DetailKey) -> Option<&str> {
        self.metadata
            .iter()
            .find(|(name, _)| name == key.as_str())
            .map(|(_, value)| value.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorCode;
    use crate::codes::decode_status;

    #[test]
    fn keys_are_spelled_as_on_the_wire_and_are_distinct() {
        let spelled: Vec<&str> = DetailKey::ALL.iter().map(|key| key.as_str()).collect();
        assert_eq!(
            spelled,
            ["scope", "reason", "current_state", "unavailable_operation",]
        );
        assert_eq!(DetailKey::Scope.to_string(), "scope");
    }

    #[test]
    fn a_written_detail_is_read_back_by_its_key() {
        let status = ErrorCode::ScopeRequired.to_status(
            "needs a scope",
            None,
            &[],
            &[DetailKey::Scope.pair("orders.write")],
        );
        let decoded = decode_status(&status);
        assert_eq!(decoded.detail(DetailKey::Scope), Some("orders.write"));
        assert_eq!(decoded.detail(DetailKey::Reason), None);
        assert_eq!(
            decoded.metadata,
            vec![("scope".to_owned(), "orders.write".to_owned())]
        );
    }
}
