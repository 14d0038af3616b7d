//! What every MCP revision implements and shares: the [`Protocol`] trait
//! (one implementation per module of `mcp/revision/`), the server's
//! identity, capabilities and instructions, caching hints, the shape of a
//! successful result, and the optional version header of the 2025 revisions.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use http::HeaderMap;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::backends::catalog::Tool;
use crate::error::GatewayError;
use crate::mcp::context::Context;
use crate::ops::http_telemetry::TraceParent;
use crate::wire::jsonrpc::{self, Id, Incoming};
use crate::wire::method::McpMethod;

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

/// The server instructions — what the tools give access to and on whose
/// behalf — as the tool-service's catalogue gives them; none while the
/// catalogue cannot be fetched (the answer is still served).
pub async fn instructions(ctx: &Context<'_>) -> Option<String> {
    let snapshot = ctx.state.catalog.snapshot().await.ok()?;
    snapshot.instructions().map(str::to_owned)
}

/// The MCP Apps extension (SEP-1865): tools link `ui://` resources, HTML
/// views a host renders next to the conversation.
pub const APPS_EXTENSION: &str = "io.modelcontextprotocol/ui";

/// The MIME type of an MCP Apps view.
pub const APPS_MIME_TYPE: &str = "text/html;profile=mcp-app";

/// The server's capabilities, with each revision's `listing` entry for the
/// tools and the resources (what the catalogue lists; its resources are the
/// views of the MCP Apps extension, also advertised).
pub fn capabilities(listing: Value) -> Value {
    json!({
        "tools": listing.clone(),
        "resources": listing,
        "extensions": { APPS_EXTENSION: { "mimeTypes": [APPS_MIME_TYPE] } },
    })
}

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

/// What an MCP revision decides, one implementation per module: the
/// protocol versions it speaks, its header rules (before the body, and
/// against it), how tool arguments are mirrored in headers, the fields it
/// adds around a result, and its method set. The defaults are "nothing more
/// than the shared rules".
pub trait Protocol: Sync {
    /// Protocol versions this revision speaks, newest first.
    fn supported_versions(&self) -> &'static [&'static str];

    /// The revision's header rules before the body is read, checked after
    /// the transport's own (Origin, Accept, Content-Type).
    fn check_headers(&self, _headers: &HeaderMap) -> Result<(), GatewayError> {
        Ok(())
    }

    /// The revision's rules between the headers and the message, checked as
    /// soon as the message is read, before the token: a header that
    /// disagrees with the body is refused, never trusted.
    fn check_message(
        &self,
        _headers: &HeaderMap,
        _incoming: &Incoming,
    ) -> Result<(), GatewayError> {
        Ok(())
    }

    /// Checks the `Mcp-Param-*` headers of a call to `tool` against its
    /// `arguments`, for revisions that mirror tool arguments in headers.
    fn check_tool_headers(
        &self,
        _id: &Id,
        _headers: &HeaderMap,
        _tool: &Tool,
        _arguments: Option<&Map<String, Value>>,
    ) -> Result<(), GatewayError> {
        Ok(())
    }

    /// Whether the listed tools carry their `x-mcp-header` annotations.
    fn lists_header_annotations(&self) -> bool {
        false
    }

    /// The W3C trace context a request carries in its `_meta`, for
    /// revisions that define one.
    fn trace_parent(&self, _meta: Option<&Map<String, Value>>) -> Option<TraceParent> {
        None
    }

    /// The fields the revision adds around a successful result's own.
    fn result_fields(&self, _caching: Caching) -> ResultFields {
        ResultFields::default()
    }

    /// Serves one request: the whole JSON-RPC response body, or an error
    /// carrying the id (a method outside the revision's set is not found).
    fn dispatch<'a>(
        &'a self,
        ctx: Context<'a>,
        id: &'a Id,
        method: McpMethod,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<Vec<u8>, GatewayError>>;
}

/// The boxed future of [`Protocol::dispatch`].
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What a revision adds around a result's own fields (none by default).
#[derive(Debug, Default, Serialize)]
pub struct ResultFields {
    #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
    pub result_type: Option<&'static str>,
    #[serde(rename = "ttlMs", skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    #[serde(rename = "cacheScope", skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<&'static str>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<ResultMeta>,
}

impl ResultFields {
    fn is_empty(&self) -> bool {
        self.result_type.is_none()
            && self.ttl_ms.is_none()
            && self.cache_scope.is_none()
            && self.meta.is_none()
    }
}

/// The server's identity in a result's `_meta`.
#[derive(Debug, Serialize)]
pub struct ResultMeta {
    #[serde(rename = "io.modelcontextprotocol/serverInfo")]
    pub server_info: &'static ServerInfo,
}

/// A result in a revision's shape: its added fields, in order, around the
/// method's own (`resultType` first, the caching hints and `_meta` last).
#[derive(Serialize)]
struct Shaped<'a, T: ?Sized> {
    #[serde(rename = "resultType", skip_serializing_if = "Option::is_none")]
    result_type: Option<&'static str>,
    #[serde(flatten)]
    result: &'a T,
    #[serde(rename = "ttlMs", skip_serializing_if = "Option::is_none")]
    ttl_ms: Option<u64>,
    #[serde(rename = "cacheScope", skip_serializing_if = "Option::is_none")]
    cache_scope: Option<&'static str>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<ResultMeta>,
}

/// The response body of a successful `result`, in `protocol`'s shape.
pub fn success<T: Serialize + ?Sized>(
    protocol: &dyn Protocol,
    id: &Id,
    result: &T,
    caching: Caching,
) -> Vec<u8> {
    let fields = protocol.result_fields(caching);
    if fields.is_empty() {
        return jsonrpc::success(id, result);
    }
    jsonrpc::success(
        id,
        &Shaped {
            result_type: fields.result_type,
            result,
            ttl_ms: fields.ttl_ms,
            cache_scope: fields.cache_scope,
            meta: fields.meta,
        },
    )
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
    fn the_version_header_is_optional_but_must_be_supported() {
        let supported = crate::mcp::revision::v2025_11_25::SUPPORTED_VERSIONS;
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
