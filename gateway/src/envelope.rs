//! The one place where a tool outcome becomes what a client profile expects:
//! the Chataigne envelope `{data, meta}` for successes and failures, carried
//! in `structuredContent` (default profile) or serialized into the text block
//! with fatal failures raised as JSON-RPC errors (Connected Apps profile).

use chataigne_common::Category;
use chataigne_common::codes::DecodedStatus;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Value, json};

use crate::config::Profile;
use crate::jsonrpc::ErrorObject;

/// A tool's successful output, as the tool-service returned it.
pub struct Success {
    /// The envelope's `data`, already valid JSON.
    pub data: Box<RawValue>,
    /// Short human-readable summary.
    pub text: String,
    /// Empty when there is no next page.
    pub next_cursor: String,
    pub truncated: bool,
    /// An idempotent write answered from its stored result.
    pub replayed: bool,
}

/// What the client receives for a tool call.
#[derive(Debug)]
pub enum Reply {
    /// A `CallToolResult` (possibly with `isError: true`).
    Result(Value),
    /// A JSON-RPC error (fatal failure in the Connected Apps profile).
    Error(ErrorObject),
}

#[derive(Serialize)]
struct Meta<'a> {
    request_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<&'a str>,
    truncated: bool,
    replayed: bool,
}

#[derive(Serialize)]
struct Payload<'a> {
    data: &'a RawValue,
    meta: Meta<'a>,
}

#[derive(Serialize)]
struct Field<'a> {
    field: &'a str,
    description: &'a str,
}

#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'static str,
    category: &'static str,
    retryable: bool,
    message: &'a str,
    request_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fields: Option<Vec<Field<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<serde_json::Map<String, Value>>,
}

fn text_block(text: &str) -> Value {
    json!([{ "type": "text", "text": text }])
}

/// Shapes a success for `profile`.
pub fn success(profile: Profile, request_id: &str, success: &Success) -> Reply {
    let payload = Payload {
        data: &success.data,
        meta: Meta {
            request_id,
            next_cursor: Some(success.next_cursor.as_str()).filter(|c| !c.is_empty()),
            truncated: success.truncated,
            replayed: success.replayed,
        },
    };
    let serialized = serde_json::to_string(&payload).unwrap_or_default();
    Reply::Result(match profile {
        Profile::Default => {
            let text = if success.text.trim().is_empty() {
                serialized.as_str()
            } else {
                success.text.as_str()
            };
            json!({
                "content": text_block(text),
                "structuredContent": serde_json::to_value(&payload).unwrap_or(Value::Null),
                "isError": false,
            })
        }
        Profile::Google => json!({
            "content": text_block(&serialized),
            "isError": false,
        }),
    })
}

/// The `error` object of the envelope.
fn error_object(failure: &DecodedStatus, request_id: &str) -> Value {
    let body = ErrorBody {
        code: failure.code.as_str(),
        category: failure.code.category().as_str(),
        retryable: failure.code.retryable(),
        message: &failure.message,
        request_id,
        retry_after_ms: failure
            .retry_after
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        fields: (!failure.violations.is_empty()).then(|| {
            failure
                .violations
                .iter()
                .map(|v| Field {
                    field: &v.field,
                    description: &v.description,
                })
                .collect()
        }),
        details: (!failure.metadata.is_empty()).then(|| {
            failure
                .metadata
                .iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect()
        }),
    };
    serde_json::to_value(body).unwrap_or(Value::Null)
}

/// Connected Apps platform codes for the categories it handles itself.
fn platform_code(category: Category) -> Option<i64> {
    match category {
        Category::RateLimit => Some(-32300),
        Category::Validation => Some(-32301),
        Category::Authentication | Category::Authorization => Some(-32302),
        Category::Internal => Some(-32400),
        Category::Timeout => Some(-32500),
        Category::Dependency => Some(-32502),
        Category::NotFound | Category::Conflict => None,
    }
}

/// Shapes a failure for `profile`.
pub fn failure(profile: Profile, request_id: &str, failure: &DecodedStatus) -> Reply {
    let error = error_object(failure, request_id);
    let payload = json!({ "data": { "error": error }, "meta": { "request_id": request_id } });
    match profile {
        Profile::Default => Reply::Result(json!({
            "content": text_block(&failure.message),
            "structuredContent": payload,
            "isError": true,
        })),
        Profile::Google => match platform_code(failure.code.category()) {
            Some(code) => Reply::Error(ErrorObject {
                code,
                message: failure.message.clone(),
                data: Some(error),
            }),
            None => Reply::Result(json!({
                "content": text_block(&payload.to_string()),
                "isError": true,
            })),
        },
    }
}

/// A failure of a protocol method other than a tool call (e.g. the
/// catalogue cannot be listed): always a JSON-RPC error.
pub fn method_failure(profile: Profile, request_id: &str, failure: &DecodedStatus) -> ErrorObject {
    let code = match profile {
        Profile::Default => None,
        Profile::Google => platform_code(failure.code.category()),
    };
    ErrorObject {
        code: code.unwrap_or(crate::jsonrpc::INTERNAL_ERROR),
        message: failure.message.clone(),
        data: Some(error_object(failure, request_id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chataigne_common::ErrorCode;
    use std::time::Duration;

    fn decoded(code: ErrorCode) -> DecodedStatus {
        DecodedStatus {
            code,
            message: code.default_message().to_owned(),
            retry_after: Some(Duration::from_millis(1500)),
            violations: Vec::new(),
            metadata: Vec::new(),
        }
    }

    #[test]
    fn every_category_has_a_google_shape() {
        for &code in ErrorCode::ALL {
            match failure(Profile::Google, "req_1", &decoded(code)) {
                Reply::Error(error) => {
                    assert!((-32502..=-32300).contains(&error.code), "{code:?}");
                    assert_eq!(error.data.as_ref().unwrap()["code"], code.as_str());
                }
                Reply::Result(result) => {
                    assert_eq!(result["isError"], true);
                    assert!(matches!(
                        code.category(),
                        Category::NotFound | Category::Conflict
                    ));
                }
            }
        }
    }

    #[test]
    fn default_failures_carry_the_envelope() {
        let Reply::Result(result) =
            failure(Profile::Default, "req_9", &decoded(ErrorCode::RateLimited))
        else {
            panic!("default profile never raises");
        };
        let error = &result["structuredContent"]["data"]["error"];
        assert_eq!(error["code"], "MCP_RATE_LIMITED");
        assert_eq!(error["category"], "rate_limit");
        assert_eq!(error["retryable"], true);
        assert_eq!(error["retry_after_ms"], 1500);
        assert_eq!(result["structuredContent"]["meta"]["request_id"], "req_9");
    }
}
