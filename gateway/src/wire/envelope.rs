//! The one place where a tool outcome becomes what a client profile expects.
//!
//! - A success is the Chataigne envelope `{data, meta}`: in `structuredContent`
//!   beside a short text (default profile; it validates against the tool's
//!   `outputSchema`), or serialized as the only text block (Connected Apps
//!   profile, which lists no `outputSchema` and reads no `structuredContent`).
//! - A failure that stays a tool result (every failure on the default
//!   profile, the recoverable ones on the Connected Apps profile) is
//!   `isError: true` with two text blocks, the actionable message and the
//!   envelope `{data:{error}, meta}` as JSON, and no `structuredContent`: an
//!   error result need not match the tool's `outputSchema`, and clients that
//!   validate structured content against it (the TypeScript SDK, the
//!   Inspector) would refuse one that does not.
//! - A fatal failure on the Connected Apps profile is a JSON-RPC error with
//!   the platform code of [`ErrorCode::treatment`] and the error object as
//!   `data`.
//!
//! A result is a borrowed shape serialized once, straight into the JSON-RPC
//! response (`jsonrpc::success`): the tool's `data` is written through as the
//! raw JSON the tool-service sent, never parsed into a `Value` or
//! re-serialized. Only a text block that holds the envelope as JSON (the
//! Connected Apps profile, a success without a summary, a failure) needs the
//! envelope serialized first, once, to be escaped into that string.

use std::borrow::Cow;

use chataigne_common::codes::{DecodedStatus, Treatment};
use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use crate::config::Profile;
use crate::wire::jsonrpc::{self, ErrorObject};

/// A tool's successful output, as the tool-service returned it.
pub struct Success {
    /// The envelope's `data`, already valid JSON.
    pub data: Box<serde_json::value::RawValue>,
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
pub enum Reply<'a> {
    /// A `CallToolResult` (possibly with `isError: true`), serialized when
    /// the response is written.
    Result(ToolResult<'a>),
    /// A JSON-RPC error (fatal failure in the Connected Apps profile).
    Error(ErrorObject),
}

#[derive(Debug, Serialize)]
struct Meta<'a> {
    request_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    next_cursor: Option<&'a str>,
    truncated: bool,
    replayed: bool,
}

#[derive(Debug, Serialize)]
struct Payload<'a> {
    data: &'a RawValue,
    meta: Meta<'a>,
}

#[derive(Serialize)]
struct Field<'a> {
    field: &'a str,
    description: &'a str,
}

/// The envelope's `data.error`.
#[derive(Serialize)]
struct ErrorBody<'a> {
    code: &'a str,
    category: &'static str,
    retryable: bool,
    message: String,
    request_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    retry_after_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fields: Option<Vec<Field<'a>>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<serde_json::Map<String, Value>>,
}

#[derive(Serialize)]
struct ErrorData<'a> {
    error: &'a ErrorBody<'a>,
}

#[derive(Serialize)]
struct ErrorMeta<'a> {
    request_id: &'a str,
}

#[derive(Serialize)]
struct ErrorPayload<'a> {
    data: ErrorData<'a>,
    meta: ErrorMeta<'a>,
}

#[derive(Debug, Serialize)]
struct TextBlock<'a> {
    r#type: &'static str,
    text: Cow<'a, str>,
}

fn text<'a>(text: impl Into<Cow<'a, str>>) -> TextBlock<'a> {
    TextBlock {
        r#type: "text",
        text: text.into(),
    }
}

/// A `CallToolResult`, borrowing the outcome it shapes.
#[derive(Debug, Serialize)]
pub struct ToolResult<'a> {
    content: Vec<TextBlock<'a>>,
    #[serde(rename = "structuredContent", skip_serializing_if = "Option::is_none")]
    structured_content: Option<Payload<'a>>,
    #[serde(rename = "isError")]
    is_error: bool,
}

/// The JSON of what only holds text and already-valid JSON (it cannot fail;
/// `null` would stand for it if it did).
fn json_text(value: &impl Serialize) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

/// Shapes a success for `profile`.
pub fn success<'a>(profile: Profile, request_id: &'a str, success: &'a Success) -> Reply<'a> {
    let payload = Payload {
        data: &success.data,
        meta: Meta {
            request_id,
            next_cursor: Some(success.next_cursor.as_str()).filter(|c| !c.is_empty()),
            truncated: success.truncated,
            replayed: success.replayed,
        },
    };
    Reply::Result(match profile {
        Profile::Default => {
            let summary = if success.text.trim().is_empty() {
                Cow::Owned(json_text(&payload))
            } else {
                Cow::Borrowed(success.text.as_str())
            };
            ToolResult {
                content: vec![text(summary)],
                structured_content: Some(payload),
                is_error: false,
            }
        }
        Profile::Google => ToolResult {
            content: vec![text(json_text(&payload))],
            structured_content: None,
            is_error: false,
        },
    })
}

fn error_body<'a>(failure: &'a DecodedStatus, request_id: &'a str) -> ErrorBody<'a> {
    ErrorBody {
        code: failure.code_name(),
        category: failure.code.category().as_str(),
        retryable: failure.code.retryable(),
        message: failure.spoken_message(),
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
    }
}

/// The `error` object of the envelope, as the `data` of a JSON-RPC error.
pub fn error_data(failure: &DecodedStatus, request_id: &str) -> Value {
    serde_json::to_value(error_body(failure, request_id)).unwrap_or(Value::Null)
}

/// The `isError` result carrying `failure`: the message, then the envelope.
fn error_result<'a>(failure: &'a DecodedStatus, request_id: &str) -> ToolResult<'a> {
    let body = error_body(failure, request_id);
    let envelope = serde_json::to_string(&ErrorPayload {
        data: ErrorData { error: &body },
        meta: ErrorMeta { request_id },
    })
    .unwrap_or_default();
    ToolResult {
        content: vec![text(body.message.clone()), text(envelope)],
        structured_content: None,
        is_error: true,
    }
}

/// The JSON-RPC error of a fatal `failure` with the platform `code`.
fn fatal(code: i64, failure: &DecodedStatus, request_id: &str) -> ErrorObject {
    ErrorObject {
        code,
        message: failure.spoken_message(),
        data: Some(error_data(failure, request_id)),
    }
}

/// Shapes a tool failure for `profile`.
pub fn failure<'a>(profile: Profile, request_id: &str, failure: &'a DecodedStatus) -> Reply<'a> {
    match (profile, failure.code.treatment()) {
        (Profile::Google, Treatment::Fatal(platform)) => {
            Reply::Error(fatal(platform.code(), failure, request_id))
        }
        (Profile::Default, _) | (Profile::Google, Treatment::Recoverable) => {
            Reply::Result(error_result(failure, request_id))
        }
    }
}

/// A failure outside a tool's result (another method, or a request refused
/// before its method ran): always a JSON-RPC error, with the platform code on
/// the Connected Apps profile and `-32603` otherwise.
pub fn method_failure(profile: Profile, request_id: &str, failure: &DecodedStatus) -> ErrorObject {
    let code = match (profile, failure.code.treatment()) {
        (Profile::Google, Treatment::Fatal(platform)) => platform.code(),
        _ => jsonrpc::INTERNAL_ERROR,
    };
    fatal(code, failure, request_id)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chataigne_common::ErrorCode;
    use std::time::Duration;

    fn decoded(code: ErrorCode) -> DecodedStatus {
        DecodedStatus {
            retry_after: Some(Duration::from_millis(1500)),
            ..DecodedStatus::of(code)
        }
    }

    fn parsed(result: &ToolResult<'_>) -> Value {
        serde_json::to_value(result).unwrap()
    }

    /// The envelope of an `isError` result: the JSON of its last text block.
    fn envelope_of(result: &Value) -> Value {
        let blocks = result["content"].as_array().unwrap();
        serde_json::from_str(blocks.last().unwrap()["text"].as_str().unwrap()).unwrap()
    }

    #[test]
    fn connected_apps_raises_exactly_the_fatal_codes() {
        for &code in ErrorCode::ALL {
            let decoded = decoded(code);
            match (
                failure(Profile::Google, "req_1", &decoded),
                code.treatment(),
            ) {
                (Reply::Error(error), Treatment::Fatal(platform)) => {
                    assert_eq!(error.code, platform.code(), "{code:?}");
                    assert!((-32502..=-32300).contains(&error.code), "{code:?}");
                    let data = error.data.as_ref().unwrap();
                    assert_eq!(data["code"], code.as_str());
                    assert_eq!(data["request_id"], "req_1");
                }
                (Reply::Result(result), Treatment::Recoverable) => {
                    let result = parsed(&result);
                    assert_eq!(result["isError"], true);
                    assert!(result.get("structuredContent").is_none());
                    assert_eq!(envelope_of(&result)["data"]["error"]["code"], code.as_str());
                }
                (reply, treatment) => panic!("{code:?}: {reply:?} for {treatment:?}"),
            }
        }
    }

    #[test]
    fn recoverable_errors_are_tool_results_a_model_can_read() {
        for code in [
            ErrorCode::InvalidArguments,
            ErrorCode::ResourceForbidden,
            ErrorCode::CursorInvalid,
            ErrorCode::ExpectedStateMismatch,
        ] {
            assert_eq!(code.treatment(), Treatment::Recoverable, "{code:?}");
        }
    }

    #[test]
    fn default_failures_carry_the_envelope_as_text_without_structured_content() {
        let limited = decoded(ErrorCode::RateLimited);
        let Reply::Result(result) = failure(Profile::Default, "req_9", &limited) else {
            panic!("default profile never raises");
        };
        let result = parsed(&result);
        assert_eq!(result["isError"], true);
        assert!(result.get("structuredContent").is_none());
        // The delay is spoken in words, in the text and the envelope alike.
        assert_eq!(
            result["content"][0]["text"],
            "Too many calls. Retry in 2 seconds."
        );
        let envelope = envelope_of(&result);
        let error = &envelope["data"]["error"];
        assert_eq!(error["message"], result["content"][0]["text"]);
        assert_eq!(error["code"], "MCP_RATE_LIMITED");
        assert_eq!(error["category"], "rate_limit");
        assert_eq!(error["retryable"], true);
        assert_eq!(error["retry_after_ms"], 1500);
        assert_eq!(error["request_id"], "req_9");
        assert_eq!(envelope["meta"]["request_id"], "req_9");
    }

    fn a_success() -> Success {
        Success {
            data: RawValue::from_string(r#"{"orders":[]}"#.to_owned()).unwrap(),
            text: "No orders match.".to_owned(),
            next_cursor: "c1".to_owned(),
            truncated: false,
            replayed: false,
        }
    }

    #[test]
    fn default_successes_are_structured_with_a_summary() {
        let outcome = a_success();
        let Reply::Result(result) = success(Profile::Default, "req_2", &outcome) else {
            panic!("a success is a result");
        };
        let result = parsed(&result);
        assert_eq!(result["isError"], false);
        assert_eq!(result["content"][0]["text"], "No orders match.");
        assert_eq!(result["structuredContent"]["data"]["orders"], json_empty());
        assert_eq!(result["structuredContent"]["meta"]["next_cursor"], "c1");
        assert_eq!(result["structuredContent"]["meta"]["request_id"], "req_2");
    }

    #[test]
    fn connected_apps_successes_are_the_payload_as_json_text() {
        let outcome = a_success();
        let Reply::Result(result) = success(Profile::Google, "req_3", &outcome) else {
            panic!("a success is a result");
        };
        let result = parsed(&result);
        assert!(result.get("structuredContent").is_none());
        let blocks = result["content"].as_array().unwrap();
        assert_eq!(blocks.len(), 1);
        let payload: Value = serde_json::from_str(blocks[0]["text"].as_str().unwrap()).unwrap();
        assert_eq!(payload["data"]["orders"], json_empty());
        assert_eq!(payload["meta"]["request_id"], "req_3");
        assert_eq!(payload["meta"]["replayed"], false);
    }

    /// The whole JSON-RPC body, written in one pass: the tool's `data`
    /// through as sent (spacing included), the envelope escaped into a text
    /// block only where a profile needs it, the same bytes for every profile
    /// as before the single-pass writer.
    #[test]
    fn responses_write_the_tool_data_through_in_one_pass() {
        let id = crate::wire::jsonrpc::Id::Number(7.into());
        let outcome = Success {
            data: RawValue::from_string(r#"{"orders": [{"note":"a \"b\"\n"}]}"#.to_owned())
                .unwrap(),
            text: "1 order.".to_owned(),
            next_cursor: String::new(),
            truncated: true,
            replayed: false,
        };
        let body = |profile, outcome: &Success| match success(profile, "req_4", outcome) {
            Reply::Result(result) => String::from_utf8(crate::wire::jsonrpc::success(&id, &result)),
            Reply::Error(error) => panic!("a success is a result: {error:?}"),
        };
        let payload = r#"{"data":{"orders": [{"note":"a \"b\"\n"}]},"meta":{"request_id":"req_4","truncated":true,"replayed":false}}"#;
        let escaped = serde_json::to_string(payload).unwrap();
        assert_eq!(
            body(Profile::Default, &outcome).unwrap(),
            format!(
                r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":"1 order."}}],"structuredContent":{payload},"isError":false}}}}"#
            )
        );
        assert_eq!(
            body(Profile::Google, &outcome).unwrap(),
            format!(
                r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":{escaped}}}],"isError":false}}}}"#
            )
        );
        let silent = Success {
            text: " ".to_owned(),
            ..outcome
        };
        assert_eq!(
            body(Profile::Default, &silent).unwrap(),
            format!(
                r#"{{"jsonrpc":"2.0","id":7,"result":{{"content":[{{"type":"text","text":{escaped}}}],"structuredContent":{payload},"isError":false}}}}"#
            ),
            "without a summary the text block repeats the envelope exactly"
        );
    }

    fn json_empty() -> Value {
        Value::Array(Vec::new())
    }
}
