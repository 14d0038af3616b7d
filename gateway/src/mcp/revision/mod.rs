//! MCP protocol revisions, one per endpoint (`endpoints[].revision`). A
//! revision owns what changes between MCP releases: the protocol versions it
//! negotiates, its header rules, its method set and dispatch, and its
//! `initialize` result. Adding one is a module here and a variant below.

pub mod v2025_11_25;

use http::HeaderMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::GatewayError;
use crate::mcp::context::Context;
use crate::mcp::jsonrpc::Id;
use crate::mcp::method::McpMethod;

/// The MCP revision an endpoint speaks, named by its release date.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default, JsonSchema)]
pub enum Revision {
    /// MCP 2025-11-25 (negotiating down to 2025-06-18 and 2025-03-26).
    #[default]
    #[serde(rename = "2025-11-25")]
    V2025_11_25,
}

impl Revision {
    /// Protocol versions this revision speaks, newest first.
    pub fn supported_versions(self) -> &'static [&'static str] {
        match self {
            Revision::V2025_11_25 => v2025_11_25::SUPPORTED_VERSIONS,
        }
    }

    /// The revision's header rules, checked after the transport's own
    /// (Origin, Accept, Content-Type).
    pub fn check_headers(self, headers: &HeaderMap) -> Result<(), GatewayError> {
        match self {
            Revision::V2025_11_25 => v2025_11_25::check_headers(headers),
        }
    }

    /// Serves one request: the whole JSON-RPC response body, or an error
    /// carrying the id (a method outside the revision's set is not found).
    pub async fn dispatch(
        self,
        ctx: Context<'_>,
        id: &Id,
        method: McpMethod,
        params: Option<Value>,
    ) -> Result<Vec<u8>, GatewayError> {
        match self {
            Revision::V2025_11_25 => v2025_11_25::dispatch(ctx, id, method, params).await,
        }
    }
}

/// Name of the protocol version header (case-insensitive on the wire).
pub const PROTOCOL_VERSION_HEADER: &str = "mcp-protocol-version";

/// The `MCP-Protocol-Version` rule shared by the 2025 revisions: optional,
/// and when present one of `supported`.
pub fn optional_version_header(
    headers: &HeaderMap,
    supported: &'static [&'static str],
) -> Result<(), GatewayError> {
    match headers.get(PROTOCOL_VERSION_HEADER) {
        None => Ok(()),
        Some(value) => match value.to_str() {
            Ok(version) if supported.contains(&version.trim()) => Ok(()),
            _ => Err(GatewayError::UnsupportedProtocolVersion(supported)),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn the_default_revision_is_named_by_its_release_date() {
        assert_eq!(Revision::default(), Revision::V2025_11_25);
        assert_eq!(
            serde_json::to_value(Revision::V2025_11_25).unwrap(),
            "2025-11-25"
        );
        let parsed: Revision = serde_json::from_value("2025-11-25".into()).unwrap();
        assert_eq!(parsed, Revision::V2025_11_25);
        assert!(serde_json::from_value::<Revision>("2099-01-01".into()).is_err());
    }

    #[test]
    fn the_version_header_is_optional_but_must_be_supported() {
        let supported = Revision::V2025_11_25.supported_versions();
        let mut headers = HeaderMap::new();
        assert!(optional_version_header(&headers, supported).is_ok());
        headers.insert(
            PROTOCOL_VERSION_HEADER,
            HeaderValue::from_static(" 2025-06-18 "),
        );
        assert!(optional_version_header(&headers, supported).is_ok());
        headers.insert(
            PROTOCOL_VERSION_HEADER,
            HeaderValue::from_static("2024-11-05"),
        );
        assert!(matches!(
            optional_version_header(&headers, supported),
            Err(GatewayError::UnsupportedProtocolVersion(listed)) if listed == supported
        ));
    }
}
