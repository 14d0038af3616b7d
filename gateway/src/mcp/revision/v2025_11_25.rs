//! MCP revision 2025-11-25, served on `/mcp/v1`: its protocol versions and
//! their negotiation, its header rule (an optional `MCP-Protocol-Version`),
//! its methods (`initialize`, `ping`, `tools/list`, `tools/call`,
//! `resources/list`, `resources/read`) and the `initialize` result — server
//! identity, capabilities and the server instructions (a declarative hint,
//! no tool names).

use http::HeaderMap;
use serde_json::{Value, json};

use crate::error::GatewayError;
use crate::mcp::context::Context;
use crate::mcp::params::{
    self, CallToolParams, InitializeParams, ListResourcesParams, ListToolsParams, NoParams,
    ReadResourceParams,
};
use crate::mcp::protocol::{self, BoxFuture, Protocol};
use crate::mcp::{resources, tools};
use crate::wire::jsonrpc::{self, Id};
use crate::wire::method::McpMethod;

/// Protocol revisions this endpoint speaks, newest first.
pub const SUPPORTED_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26"];

/// The revision offered when the client asks for one we do not speak.
pub const LATEST_VERSION: &str = "2025-11-25";

/// The version both sides speak: the client's when supported, else the latest.
pub fn negotiate(requested: &str) -> &'static str {
    SUPPORTED_VERSIONS
        .iter()
        .find(|v| **v == requested)
        .copied()
        .unwrap_or(LATEST_VERSION)
}

/// The `initialize` result for a client requesting `requested`, with the
/// catalogue's `instructions` when known.
pub fn initialize_result(requested: &str, instructions: Option<String>) -> Value {
    let mut result = json!({
        "protocolVersion": negotiate(requested),
        "capabilities": protocol::capabilities(json!({ "listChanged": false })),
        "serverInfo": protocol::SERVER_INFO,
    });
    if let (Some(text), Some(fields)) = (instructions, result.as_object_mut()) {
        fields.insert("instructions".to_owned(), Value::String(text));
    }
    result
}

/// This revision.
pub struct V2025_11_25;

impl Protocol for V2025_11_25 {
    fn supported_versions(&self) -> &'static [&'static str] {
        SUPPORTED_VERSIONS
    }

    /// `MCP-Protocol-Version` is optional; when sent, a version of this revision.
    fn check_headers(&self, headers: &HeaderMap) -> Result<(), GatewayError> {
        protocol::optional_version_header(headers, SUPPORTED_VERSIONS)
    }

    fn dispatch<'a>(
        &'a self,
        ctx: Context<'a>,
        id: &'a Id,
        method: McpMethod,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<Vec<u8>, GatewayError>> {
        Box::pin(dispatch(ctx, id, method, params))
    }
}

/// The revision's method set: requests other than these are not found
/// (notifications, answered 202, never reach dispatch).
async fn dispatch(
    ctx: Context<'_>,
    id: &Id,
    method: McpMethod,
    params: Option<Value>,
) -> Result<Vec<u8>, GatewayError> {
    match method {
        McpMethod::Initialize => {
            let params: InitializeParams = params::parse(id, params)?;
            let requested = params.protocol_version.valid().ok_or_else(|| {
                GatewayError::InvalidParams(
                    id.clone(),
                    "protocolVersion must be a string".to_owned(),
                )
            })?;
            let instructions = protocol::instructions(&ctx).await;
            Ok(jsonrpc::success(
                id,
                &initialize_result(&requested, instructions),
            ))
        }
        McpMethod::Ping => {
            params::parse::<NoParams>(id, params)?;
            Ok(jsonrpc::success(id, &json!({})))
        }
        McpMethod::ToolsList => {
            params::parse::<ListToolsParams>(id, params)?;
            tools::list(ctx, id, &V2025_11_25).await
        }
        McpMethod::ToolsCall => {
            let params = CallToolParams::take(id, params)?;
            tools::call(ctx, id, params, &V2025_11_25).await
        }
        McpMethod::ResourcesList => {
            params::parse::<ListResourcesParams>(id, params)?;
            resources::list(ctx, id, &V2025_11_25).await
        }
        McpMethod::ResourcesRead => {
            let params: ReadResourceParams = params::parse(id, params)?;
            resources::read(ctx, id, params, &V2025_11_25).await
        }
        McpMethod::Initialized
        | McpMethod::Cancelled
        | McpMethod::ServerDiscover
        | McpMethod::Other => Err(GatewayError::MethodNotFound(id.clone())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiates_down_and_falls_back_to_latest() {
        assert_eq!(negotiate("2025-03-26"), "2025-03-26");
        assert_eq!(negotiate("2024-11-05"), LATEST_VERSION);
        assert_eq!(negotiate("2099-01-01"), LATEST_VERSION);
    }
}
