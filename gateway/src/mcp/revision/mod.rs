//! MCP protocol revisions, one per endpoint (`endpoints[].revision`). A
//! revision owns what changes between MCP releases: the protocol versions it
//! speaks, its header rules (before the body, and against it), its method
//! set and dispatch, the shape of its results and how tool arguments are
//! mirrored in headers. Adding one is a module here and a variant below;
//! the tools, their envelopes, limits and authorization are shared.

pub mod v2025_11_25;
pub mod v2026_07_28;

use std::time::Duration;

use http::HeaderMap;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::backends::catalog::Tool;
use crate::error::GatewayError;
use crate::mcp::context::Context;
use crate::mcp::jsonrpc::{self, Id, Incoming};
use crate::mcp::method::McpMethod;

/// Who the server says it is (`initialize` result, or each result's `_meta`).
#[derive(Debug, Serialize)]
pub struct ServerInfo {
    name: &'static str,
    title: &'static str,
    version: &'static str,
}

/// The one identity of this server.
pub const SERVER_INFO: ServerInfo = ServerInfo {
    name: "chataigne-mcp",
    title: "Chataigne",
    version: env!("CARGO_PKG_VERSION"),
};

/// What the server gives access to and on whose behalf; added to the model's
/// context by clients, so it describes rather than instructs.
pub const INSTRUCTIONS: &str = "Chataigne restaurant operations: a restaurant's orders, \
catalog availability, location settings and status, customer conversations and analytics. \
Every read and action is performed on behalf of the signed-in restaurant staff member, limited \
to the organizations and locations of their memberships and to the scopes they consented to. \
Identifiers are opaque strings; amounts carry their currency and timestamps their UTC offset.";

/// How long a result may be reused and by whom, for revisions that say so.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Caching {
    /// Not a cacheable result (a tool call).
    None,
    /// Depends on the caller (its scopes): fresh for this long, for this
    /// authorization context only.
    Private(Duration),
    /// The same for every caller: fresh for this long.
    Public(Duration),
}

/// The MCP revision an endpoint speaks, named by its release date.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default, JsonSchema)]
pub enum Revision {
    /// MCP 2025-11-25 (negotiating down to 2025-06-18 and 2025-03-26).
    #[default]
    #[serde(rename = "2025-11-25")]
    V2025_11_25,
    /// MCP 2026-07-28: stateless, `server/discover`, per-request `_meta`,
    /// mirrored headers checked against the body.
    #[serde(rename = "2026-07-28")]
    V2026_07_28,
}

impl Revision {
    /// Protocol versions this revision speaks, newest first.
    pub fn supported_versions(self) -> &'static [&'static str] {
        match self {
            Revision::V2025_11_25 => v2025_11_25::SUPPORTED_VERSIONS,
            Revision::V2026_07_28 => v2026_07_28::SUPPORTED_VERSIONS,
        }
    }

    /// The revision's header rules before the body is read, checked after
    /// the transport's own (Origin, Accept, Content-Type).
    pub fn check_headers(self, headers: &HeaderMap) -> Result<(), GatewayError> {
        match self {
            Revision::V2025_11_25 => v2025_11_25::check_headers(headers),
            Revision::V2026_07_28 => Ok(()),
        }
    }

    /// The revision's rules between the headers and the message, checked as
    /// soon as the message is read, before the token: a header that
    /// disagrees with the body is refused, never trusted.
    pub fn check_message(
        self,
        headers: &HeaderMap,
        incoming: &Incoming,
    ) -> Result<(), GatewayError> {
        match self {
            Revision::V2025_11_25 => Ok(()),
            Revision::V2026_07_28 => v2026_07_28::check_message(headers, incoming),
        }
    }

    /// Checks the `Mcp-Param-*` headers of a call to `tool` against its
    /// `arguments`, for revisions that mirror tool arguments in headers.
    pub fn check_tool_headers(
        self,
        id: &Id,
        headers: &HeaderMap,
        tool: &Tool,
        arguments: Option<&Map<String, Value>>,
    ) -> Result<(), GatewayError> {
        match self {
            Revision::V2025_11_25 => Ok(()),
            Revision::V2026_07_28 => v2026_07_28::check_tool_headers(id, headers, tool, arguments),
        }
    }

    /// Whether the listed tools carry their `x-mcp-header` annotations.
    pub fn lists_header_annotations(self) -> bool {
        match self {
            Revision::V2025_11_25 => false,
            Revision::V2026_07_28 => true,
        }
    }

    /// The W3C trace context a request carries in its `_meta`, for
    /// revisions that define one.
    pub fn trace_parent(self, meta: Option<&Map<String, Value>>) -> Option<TraceParent> {
        match self {
            Revision::V2025_11_25 => None,
            Revision::V2026_07_28 => v2026_07_28::trace_parent(meta),
        }
    }

    /// The response body of a successful `result`, in the revision's shape.
    pub fn success<T: Serialize + ?Sized>(self, id: &Id, result: &T, caching: Caching) -> Vec<u8> {
        match self {
            Revision::V2025_11_25 => jsonrpc::success(id, result),
            Revision::V2026_07_28 => v2026_07_28::success(id, result, caching),
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
            Revision::V2026_07_28 => v2026_07_28::dispatch(ctx, id, method, params).await,
        }
    }
}

/// A caller's W3C trace context (`traceparent`, and `tracestate` if any),
/// as received: the tool call's span continues it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent {
    pub traceparent: String,
    pub tracestate: Option<String>,
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
        let modern: Revision = serde_json::from_value("2026-07-28".into()).unwrap();
        assert_eq!(modern, Revision::V2026_07_28);
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
