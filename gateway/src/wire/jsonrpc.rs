//! JSON-RPC 2.0 wire types of the MCP endpoint, strict where MCP clients rely
//! on the exact error: one message per POST (no batches), `jsonrpc: "2.0"`,
//! ids that are strings or integers, structured params.

use serde::Serialize;
use serde_json::Value;

use crate::wire::method::McpMethod;

pub const PARSE_ERROR: i64 = -32700;
pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
/// MCP: the resource named by `resources/read` does not exist (for this caller).
pub const RESOURCE_NOT_FOUND: i64 = -32002;
/// MCP 2026-07-28 `HeaderMismatch`: a mirrored header is missing, malformed
/// or disagrees with the body.
pub const HEADER_MISMATCH: i64 = -32020;
/// MCP 2026-07-28 `UnsupportedProtocolVersion`.
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// A request id: a string or an integer, echoed exactly.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Id {
    Number(serde_json::Number),
    String(String),
}

/// One incoming message, classified.
#[derive(Debug)]
pub enum Incoming {
    /// A call expecting a response.
    Request {
        id: Id,
        method: McpMethod,
        /// The method as written on the wire (revisions that mirror it in a
        /// header compare the two).
        name: String,
        /// An object or an array (methods decide what they accept).
        params: Option<Value>,
    },
    /// A notification (no id): acknowledged with 202.
    Notification { method: McpMethod },
    /// A response from the client to a server request: acknowledged with 202.
    Response,
}

/// Why a message is not a valid JSON-RPC message; `id` when it could be read.
#[derive(Debug, Clone, PartialEq)]
pub struct Invalid {
    pub id: Option<Id>,
    pub message: &'static str,
}

fn invalid(id: Option<Id>, message: &'static str) -> Invalid {
    Invalid { id, message }
}

/// Classifies a parsed JSON document as one JSON-RPC message.
pub fn classify(document: Value) -> Result<Incoming, Invalid> {
    let mut object = match document {
        Value::Object(object) => object,
        Value::Array(_) => return Err(invalid(None, "Invalid Request: batches are not supported")),
        _ => {
            return Err(invalid(
                None,
                "Invalid Request: a JSON-RPC message must be an object",
            ));
        }
    };
    let id = match object.remove("id") {
        None => None,
        Some(Value::String(s)) => Some(Id::String(s)),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(Id::Number(n)),
        Some(_) => {
            return Err(invalid(
                None,
                "Invalid Request: id must be a string or an integer",
            ));
        }
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Err(invalid(id, "Invalid Request: jsonrpc must be \"2.0\""));
    }
    let (method, name) = match object.remove("method") {
        Some(Value::String(name)) if !name.is_empty() => (McpMethod::parse(&name), name),
        Some(_) => {
            return Err(invalid(
                id,
                "Invalid Request: method must be a non-empty string",
            ));
        }
        None if object.contains_key("result") || object.contains_key("error") => {
            return match id {
                Some(_) => Ok(Incoming::Response),
                None => Err(invalid(None, "Invalid Request: a response needs an id")),
            };
        }
        None => return Err(invalid(id, "Invalid Request: method is missing")),
    };
    let params = match object.remove("params") {
        None => None,
        Some(params @ (Value::Object(_) | Value::Array(_))) => Some(params),
        Some(_) => return Err(invalid(id, "Invalid Request: params must be structured")),
    };
    match id {
        None => Ok(Incoming::Notification { method }),
        Some(id) => Ok(Incoming::Request {
            id,
            method,
            name,
            params,
        }),
    }
}

/// A JSON-RPC error object.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ErrorObject {
    pub code: i64,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

/// The body of a success response; `result` is serialized in the same pass
/// (a `RawValue` in it is written through as it is).
#[derive(Serialize)]
struct SuccessBody<'a, T: ?Sized> {
    jsonrpc: &'static str,
    id: &'a Id,
    result: &'a T,
}

/// The body of an error response; `id` is left out when it could not be read
/// (the 2025-11-25 schema makes it optional rather than `null`).
#[derive(Serialize)]
struct ErrorBody<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<&'a Id>,
    error: &'a ErrorObject,
}

/// Serializes a success response, `result` included, in one pass.
pub fn success<T: Serialize + ?Sized>(id: &Id, result: &T) -> Vec<u8> {
    serde_json::to_vec(&SuccessBody {
        jsonrpc: "2.0",
        id,
        result,
    })
    .unwrap_or_default()
}

/// Serializes an error response.
pub fn error(id: Option<&Id>, error: &ErrorObject) -> Vec<u8> {
    serde_json::to_vec(&ErrorBody {
        jsonrpc: "2.0",
        id,
        error,
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(value: Value) -> Result<Incoming, Invalid> {
        classify(value)
    }

    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        assert!(matches!(
            message(json!({"jsonrpc":"2.0","id":7,"method":"ping"})),
            Ok(Incoming::Request {
                id: Id::Number(_),
                ..
            })
        ));
        assert!(matches!(
            message(json!({"jsonrpc":"2.0","method":"notifications/initialized"})),
            Ok(Incoming::Notification { .. })
        ));
        assert!(matches!(
            message(json!({"jsonrpc":"2.0","id":"a","result":{}})),
            Ok(Incoming::Response)
        ));
    }

    #[test]
    fn invalid_messages_are_refused() {
        for bad in [
            json!([{"jsonrpc":"2.0","id":1,"method":"ping"}]),
            json!({"jsonrpc":"1.0","id":1,"method":"ping"}),
            json!({"id":1,"method":"ping"}),
            json!({"jsonrpc":"2.0","id":null,"method":"ping"}),
            json!({"jsonrpc":"2.0","id":true,"method":"ping"}),
            json!({"jsonrpc":"2.0","id":{},"method":"ping"}),
            json!({"jsonrpc":"2.0","id":1.5,"method":"ping"}),
            json!({"jsonrpc":"2.0","id":1,"method":3}),
            json!({"jsonrpc":"2.0","id":1}),
            json!({"jsonrpc":"2.0","id":1,"method":"ping","params":3}),
            json!("ping"),
        ] {
            assert!(message(bad.clone()).is_err(), "{bad}");
        }
    }
}
