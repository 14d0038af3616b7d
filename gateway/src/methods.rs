//! Dispatch of JSON-RPC requests to the MCP methods this server implements:
//! `initialize`, `ping`, `tools/list` and `tools/call`.

use serde_json::Value;
use serde_json::value::RawValue;

use crate::auth::Principal;
use crate::endpoints::Endpoint;
use crate::error::GatewayError;
use crate::jsonrpc::Id;
use crate::request_log::RequestLog;
use crate::state::AppState;
use crate::{initialize, tools};

/// Everything a method needs about the request being served.
pub struct Context<'a> {
    pub state: &'a AppState,
    pub endpoint: &'a Endpoint,
    pub principal: &'a Principal,
    pub log: &'a mut RequestLog,
}

/// The `params` object of a method that takes one; absent means empty.
pub fn params_object(
    id: &Id,
    params: Option<Value>,
) -> Result<serde_json::Map<String, Value>, GatewayError> {
    match params {
        None => Ok(serde_json::Map::new()),
        Some(Value::Object(params)) => Ok(params),
        Some(_) => Err(GatewayError::InvalidParams(
            id.clone(),
            "params must be an object".to_owned(),
        )),
    }
}

pub fn to_raw(value: &impl serde::Serialize) -> Result<Box<RawValue>, GatewayError> {
    serde_json::value::to_raw_value(value).map_err(|_| GatewayError::Internal)
}

/// Serves one request; the result is serialized, errors carry the id.
pub async fn dispatch(
    ctx: Context<'_>,
    id: &Id,
    method: &str,
    params: Option<Value>,
) -> Result<Box<RawValue>, GatewayError> {
    match method {
        "initialize" => {
            let params = params_object(id, params)?;
            let requested = params
                .get("protocolVersion")
                .and_then(Value::as_str)
                .ok_or_else(|| {
                    GatewayError::InvalidParams(
                        id.clone(),
                        "protocolVersion must be a string".to_owned(),
                    )
                })?;
            to_raw(&initialize::result(requested))
        }
        "ping" => {
            params_object(id, params)?;
            to_raw(&serde_json::json!({}))
        }
        "tools/list" => {
            params_object(id, params)?;
            tools::list(ctx, id).await
        }
        "tools/call" => {
            let params = params_object(id, params)?;
            tools::call(ctx, id, params).await
        }
        _ => Err(GatewayError::MethodNotFound(id.clone())),
    }
}
