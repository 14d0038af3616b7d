//! The gateway's one error type and its one mapping to an HTTP status, headers
//! and a JSON-RPC error body. Tool failures that stay results are not errors
//! here: they are shaped by the envelope module.

use std::time::Duration;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

use chataigne_common::ErrorCode;
use chataigne_common::codes::DecodedStatus;
use chataigne_common::redis_store::RedisFailure;

use crate::reply;
use crate::wire::jsonrpc::{self, ErrorObject, Id, Invalid};

/// The JSON-RPC id and profile a refusal is answered to.
pub struct ReplyTo {
    pub id: jsonrpc::Id,
    pub profile: crate::config::Profile,
}

/// Every way a request can fail before or instead of a JSON-RPC result.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    #[error("client address not allowed")]
    AddressRefused,
    #[error("no endpoint at this path for this host")]
    NotFound,
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("Accept must include application/json and text/event-stream")]
    NotAcceptable,
    #[error("Content-Type must be application/json")]
    UnsupportedMediaType,
    #[error("origin not allowed")]
    OriginForbidden,
    /// The header names a version the endpoint's revision does not speak;
    /// carries the versions it does.
    #[error("unsupported MCP-Protocol-Version")]
    UnsupportedProtocolVersion(&'static [&'static str]),
    #[error("request body too large")]
    PayloadTooLarge,
    /// The body did not arrive whole within `connections.body_read_timeout_ms`.
    #[error("request body not received in time")]
    BodyTimeout,
    /// More than one `Authorization` header: no token is read.
    #[error("more than one Authorization header")]
    AmbiguousCredentials,
    #[error("parse error: {0}")]
    Parse(&'static str),
    #[error("{}", .0.message)]
    InvalidRequest(Invalid),
    #[error("method not found")]
    MethodNotFound(Id),
    #[error("invalid params: {1}")]
    InvalidParams(Id, String),
    /// `resources/read` of a URI the caller may not see or that does not
    /// exist (the same answer for both).
    #[error("resource not found")]
    ResourceNotFound { id: Id, uri: String },
    /// A header the revision mirrors from the body is missing, malformed or
    /// disagrees with it (MCP 2026-07-28: HTTP 400, `HeaderMismatch`).
    #[error("header mismatch: {detail}")]
    HeaderMismatch { id: Id, detail: String },
    /// The request names a protocol version the endpoint does not speak (MCP
    /// 2026-07-28: HTTP 400, `UnsupportedProtocolVersion` listing those it does).
    #[error("unsupported protocol version")]
    VersionNotSpoken {
        id: Id,
        supported: &'static [&'static str],
        requested: String,
    },
    /// The request's `_meta` lacks a field the revision requires (MCP
    /// 2026-07-28: HTTP 400, invalid params).
    #[error("invalid request metadata: {detail}")]
    InvalidMeta { id: Id, detail: String },
    /// A method the endpoint's revision does not serve (MCP 2026-07-28: HTTP
    /// 404, method not found, naming the versions it speaks).
    #[error("method not served by this revision")]
    MethodNotServed {
        id: Id,
        supported: &'static [&'static str],
        /// Whether it is a method of the handshake-era revisions
        /// (`initialize`, `ping`): the message says what to do instead.
        handshake: bool,
    },
    #[error("authentication required")]
    Unauthenticated {
        /// URL of the endpoint's protected-resource metadata.
        metadata_url: String,
        /// Whether a bearer token was presented (and refused).
        token_presented: bool,
    },
    #[error("too many authentication attempts")]
    AuthRateLimited { retry_after: Option<Duration> },
    #[error("too many requests from this address")]
    AddressRateLimited { retry_after: Duration },
    #[error("the auth-service is unavailable")]
    AuthUnavailable,
    /// The rate-limit store did not answer and the limits fail closed.
    #[error("the rate-limit store is unavailable")]
    LimitStoreUnavailable,
    /// The rate-limit store is known down (its breaker is open): the
    /// command was not sent. What a request meets is the configured policy
    /// (`access::address_limit::store_failed`).
    #[error("redis known down: breaker open")]
    StoreDown,
    /// A rate-limit store command failed or timed out.
    #[error(transparent)]
    StoreFailed(#[from] RedisFailure),
    /// A tool call's failure, from the tool-service or from the gateway's
    /// own checks around it: the call's answer, a tool result or a JSON-RPC
    /// error as the client's profile says (`wire::envelope`).
    #[error("tool call failed: {}", .0.code.as_str())]
    Tool(DecodedStatus),
    /// The auth-service shed the call (RESOURCE_EXHAUSTED).
    #[error("the auth-service is overloaded")]
    AuthOverloaded { retry_after: Option<Duration> },
    #[error("tool failure raised as a JSON-RPC error")]
    ToolFatal(Id, ErrorObject),
    /// A refusal of a request whose id was read, answered as a JSON-RPC error
    /// to that id (HTTP 200, so that clients read it as the call's answer).
    #[error("request refused: {}", .error.message)]
    Answered {
        id: Id,
        error: ErrorObject,
        retry_after: Option<Duration>,
    },
    /// A scope check inside a tool failed (MCP step-up): HTTP 403 with an
    /// `insufficient_scope` challenge; the body is the serialized JSON-RPC
    /// reply (the `MCP_SCOPE_REQUIRED` envelope) for clients that read it.
    #[error("insufficient scope")]
    InsufficientScope { body: Vec<u8>, challenge: String },
    #[error("the request did not complete in time")]
    Timeout,
    #[error("internal error")]
    Internal,
}

/// Server-defined JSON-RPC code for a request refused at the HTTP layer for
/// lack of valid credentials.
const UNAUTHENTICATED: i64 = -32001;

impl GatewayError {
    /// The shared code and message of a refusal that can be answered to the
    /// request's id; `None` for errors that keep their HTTP meaning.
    fn refusal(&self) -> Option<DecodedStatus> {
        let (code, message, retry_after) = match self {
            GatewayError::AddressRateLimited { retry_after } => (
                ErrorCode::RateLimited,
                "Too many requests from this network address. Retry after the suggested delay.",
                Some(*retry_after),
            ),
            GatewayError::AuthRateLimited { retry_after } => (
                ErrorCode::RateLimited,
                "Too many sign-in checks. Retry after the suggested delay.",
                Some(retry_after.unwrap_or(Duration::from_secs(1))),
            ),
            GatewayError::AuthUnavailable => (
                ErrorCode::DependencyUnavailable,
                "The sign-in service is unavailable. Retry shortly.",
                Some(Duration::from_secs(1)),
            ),
            GatewayError::LimitStoreUnavailable => (
                ErrorCode::DependencyUnavailable,
                "The rate-limit store is unavailable and calls are refused until it answers \
                 again. Retry shortly.",
                Some(Duration::from_secs(1)),
            ),
            GatewayError::AuthOverloaded { retry_after } => (
                ErrorCode::Overloaded,
                "The sign-in service is overloaded. Retry after the suggested delay.",
                Some(retry_after.unwrap_or(Duration::from_secs(1))),
            ),
            GatewayError::Timeout => (
                ErrorCode::ToolTimeout,
                "The request did not finish in time. Retry; if it was a change, read the \
                 resource's current state first.",
                None,
            ),
            GatewayError::Internal => (
                ErrorCode::InternalError,
                ErrorCode::InternalError.default_message(),
                None,
            ),
            GatewayError::Tool(failure) => return Some(failure.clone()),
            _ => return None,
        };
        Some(DecodedStatus {
            message: message.to_owned(),
            retry_after,
            ..DecodedStatus::of(code)
        })
    }

    /// This error as the answer to `to`: refusals become a JSON-RPC error to
    /// its id, with the profile's code; other errors are unchanged.
    pub fn answering(self, to: &ReplyTo, request_id: &str) -> GatewayError {
        match self.refusal() {
            Some(failure) => GatewayError::Answered {
                id: to.id.clone(),
                error: crate::wire::envelope::method_failure(to.profile, request_id, &failure),
                retry_after: failure.retry_after,
            },
            None => self,
        }
    }

    /// The outcome label of the request log line.
    pub fn outcome(&self) -> &'static str {
        match self {
            GatewayError::AddressRefused => "address_refused",
            GatewayError::NotFound => "not_found",
            GatewayError::MethodNotAllowed => "method_not_allowed",
            GatewayError::NotAcceptable => "not_acceptable",
            GatewayError::UnsupportedMediaType => "unsupported_media_type",
            GatewayError::OriginForbidden => "origin_forbidden",
            GatewayError::UnsupportedProtocolVersion(_) => "unsupported_protocol_version",
            GatewayError::PayloadTooLarge => "payload_too_large",
            GatewayError::BodyTimeout => "body_timeout",
            GatewayError::AmbiguousCredentials => "ambiguous_credentials",
            GatewayError::Parse(_) => "parse_error",
            GatewayError::InvalidRequest(_) => "invalid_request",
            GatewayError::MethodNotFound(_) => "method_not_found",
            GatewayError::InvalidParams(..) => "invalid_params",
            GatewayError::ResourceNotFound { .. } => "resource_not_found",
            GatewayError::HeaderMismatch { .. } => "header_mismatch",
            GatewayError::VersionNotSpoken { .. } => "unsupported_protocol_version",
            GatewayError::InvalidMeta { .. } => "invalid_params",
            GatewayError::MethodNotServed { .. } => "method_not_found",
            GatewayError::Unauthenticated { .. } => "unauthenticated",
            GatewayError::AuthRateLimited { .. } => "auth_rate_limited",
            GatewayError::AddressRateLimited { .. } => "address_rate_limited",
            GatewayError::AuthUnavailable => "auth_unavailable",
            GatewayError::LimitStoreUnavailable
            | GatewayError::StoreDown
            | GatewayError::StoreFailed(_) => "limit_store_unavailable",
            GatewayError::Tool(failure) => failure.code.as_str(),
            GatewayError::AuthOverloaded { .. } => "auth_overloaded",
            GatewayError::ToolFatal(..) => "tool_error",
            GatewayError::Answered { .. } => "refused",
            GatewayError::InsufficientScope { .. } => "insufficient_scope",
            GatewayError::Timeout => "timeout",
            GatewayError::Internal => "internal",
        }
    }
}

fn rpc_error(code: i64, message: impl Into<String>) -> ErrorObject {
    ErrorObject {
        code,
        message: message.into(),
        data: None,
    }
}

/// The bearer challenge of a 401 (RFC 6750 §3, RFC 9728 §5.1): where the
/// protected-resource metadata is and which scopes to start with (the
/// business read scopes, seed 002: write scopes are asked for only by trusted
/// clients that need them; the platform-admin ones are never suggested).
fn bearer_challenge(metadata_url: &str, token_presented: bool) -> String {
    let scope = chataigne_common::scopes::suggested()
        .collect::<Vec<_>>()
        .join(" ");
    let mut challenge = format!("Bearer resource_metadata=\"{metadata_url}\", scope=\"{scope}\"");
    if token_presented {
        challenge.push_str(", error=\"invalid_token\"");
    }
    challenge
}

/// The step-up challenge of a 403 (MCP authorization, scope challenge
/// handling): the scopes already granted plus the one the operation needs.
pub fn insufficient_scope_challenge(
    metadata_url: &str,
    granted: &[String],
    required: &str,
) -> String {
    let mut scopes: Vec<&str> = granted.iter().map(String::as_str).collect();
    if !required.is_empty() && !scopes.contains(&required) {
        scopes.push(required);
    }
    format!(
        "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{metadata_url}\", \
         error_description=\"Additional permission required\"",
        scopes.join(" ")
    )
}

impl IntoResponse for GatewayError {
    fn into_response(self) -> Response {
        let message = self.to_string();
        let (status, id, error, headers): (StatusCode, Option<Id>, ErrorObject, Vec<_>) = match self
        {
            // No detail at all for a refused network: an empty 403.
            GatewayError::AddressRefused => {
                let mut response = Response::new(Body::empty());
                *response.status_mut() = StatusCode::FORBIDDEN;
                return response;
            }
            GatewayError::NotFound => (
                StatusCode::NOT_FOUND,
                None,
                rpc_error(jsonrpc::INVALID_REQUEST, "Not Found: no MCP endpoint here"),
                vec![],
            ),
            GatewayError::MethodNotAllowed => (
                StatusCode::METHOD_NOT_ALLOWED,
                None,
                rpc_error(
                    jsonrpc::INVALID_REQUEST,
                    "Method Not Allowed: this endpoint accepts POST only",
                ),
                vec![(header::ALLOW, HeaderValue::from_static("POST"))],
            ),
            GatewayError::NotAcceptable => (
                StatusCode::NOT_ACCEPTABLE,
                None,
                rpc_error(
                    jsonrpc::INVALID_REQUEST,
                    format!("Not Acceptable: {message}"),
                ),
                vec![],
            ),
            GatewayError::UnsupportedMediaType => (
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                None,
                rpc_error(
                    jsonrpc::INVALID_REQUEST,
                    format!("Unsupported Media Type: {message}"),
                ),
                vec![],
            ),
            GatewayError::OriginForbidden => (
                StatusCode::FORBIDDEN,
                None,
                rpc_error(jsonrpc::INVALID_REQUEST, "Forbidden: origin not allowed"),
                vec![],
            ),
            GatewayError::UnsupportedProtocolVersion(supported) => (
                StatusCode::BAD_REQUEST,
                None,
                rpc_error(
                    jsonrpc::INVALID_REQUEST,
                    format!(
                        "Bad Request: unsupported MCP-Protocol-Version (supported: {})",
                        supported.join(", ")
                    ),
                ),
                vec![],
            ),
            GatewayError::PayloadTooLarge => (
                StatusCode::PAYLOAD_TOO_LARGE,
                None,
                rpc_error(
                    jsonrpc::INVALID_REQUEST,
                    "Payload Too Large: request body too large",
                ),
                vec![],
            ),
            GatewayError::BodyTimeout => (
                StatusCode::REQUEST_TIMEOUT,
                None,
                rpc_error(
                    jsonrpc::INVALID_REQUEST,
                    "Request Timeout: the request body did not arrive in time",
                ),
                // The rest of the body is never read: the connection ends.
                vec![(header::CONNECTION, HeaderValue::from_static("close"))],
            ),
            GatewayError::AmbiguousCredentials => (
                StatusCode::BAD_REQUEST,
                None,
                rpc_error(
                    jsonrpc::INVALID_REQUEST,
                    "Bad Request: send exactly one Authorization header",
                ),
                vec![],
            ),
            GatewayError::Parse(detail) => (
                StatusCode::BAD_REQUEST,
                None,
                rpc_error(jsonrpc::PARSE_ERROR, format!("Parse error: {detail}")),
                vec![],
            ),
            GatewayError::InvalidRequest(invalid) => (
                StatusCode::BAD_REQUEST,
                invalid.id,
                rpc_error(jsonrpc::INVALID_REQUEST, invalid.message),
                vec![],
            ),
            GatewayError::MethodNotFound(id) => (
                StatusCode::OK,
                Some(id),
                rpc_error(jsonrpc::METHOD_NOT_FOUND, "Method not found"),
                vec![],
            ),
            GatewayError::InvalidParams(id, detail) => (
                StatusCode::OK,
                Some(id),
                rpc_error(jsonrpc::INVALID_PARAMS, detail),
                vec![],
            ),
            GatewayError::ResourceNotFound { id, uri } => (
                StatusCode::OK,
                Some(id),
                ErrorObject {
                    code: jsonrpc::RESOURCE_NOT_FOUND,
                    message: "Resource not found".to_owned(),
                    data: Some(json!({ "uri": uri })),
                },
                vec![],
            ),
            GatewayError::HeaderMismatch { id, detail } => (
                StatusCode::BAD_REQUEST,
                Some(id),
                rpc_error(
                    jsonrpc::HEADER_MISMATCH,
                    format!("Header mismatch: {detail}"),
                ),
                vec![],
            ),
            GatewayError::VersionNotSpoken {
                id,
                supported,
                requested,
            } => (
                StatusCode::BAD_REQUEST,
                Some(id),
                ErrorObject {
                    code: jsonrpc::UNSUPPORTED_PROTOCOL_VERSION,
                    message: "Unsupported protocol version".to_owned(),
                    data: Some(json!({ "supported": supported, "requested": requested })),
                },
                vec![],
            ),
            GatewayError::InvalidMeta { id, detail } => (
                StatusCode::BAD_REQUEST,
                Some(id),
                rpc_error(jsonrpc::INVALID_PARAMS, format!("Invalid params: {detail}")),
                vec![],
            ),
            GatewayError::MethodNotServed {
                id,
                supported,
                handshake,
            } => (
                StatusCode::NOT_FOUND,
                Some(id),
                ErrorObject {
                    code: jsonrpc::METHOD_NOT_FOUND,
                    message: if handshake {
                        format!(
                            "Method not found: this endpoint speaks MCP {} only, without an \
                             initialize handshake or ping (server/discover describes it)",
                            supported.join(", ")
                        )
                    } else {
                        "Method not found".to_owned()
                    },
                    data: Some(json!({ "supported": supported })),
                },
                vec![],
            ),
            GatewayError::Unauthenticated {
                metadata_url,
                token_presented,
            } => {
                let challenge = bearer_challenge(&metadata_url, token_presented);
                let value = HeaderValue::from_str(&challenge)
                    .unwrap_or_else(|_| HeaderValue::from_static("Bearer"));
                let error = ErrorObject {
                    code: UNAUTHENTICATED,
                    message: if token_presented {
                        "Unauthorized: the access token is invalid or expired".to_owned()
                    } else {
                        "Unauthorized: a bearer access token is required".to_owned()
                    },
                    data: Some(json!({
                        "error": if token_presented { "invalid_token" } else { "unauthorized" },
                        "resource_metadata": metadata_url,
                    })),
                };
                (
                    StatusCode::UNAUTHORIZED,
                    None,
                    error,
                    vec![(header::WWW_AUTHENTICATE, value)],
                )
            }
            GatewayError::AuthRateLimited { retry_after } => {
                let secs = retry_after.map_or(1, |d| d.as_secs().max(1));
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    None,
                    rpc_error(jsonrpc::INTERNAL_ERROR, "Too many requests. Retry later."),
                    vec![(header::RETRY_AFTER, HeaderValue::from(secs))],
                )
            }
            GatewayError::AddressRateLimited { retry_after } => {
                let retry_ms = u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX);
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    None,
                    rpc_error(jsonrpc::INTERNAL_ERROR, message),
                    vec![(
                        header::RETRY_AFTER,
                        HeaderValue::from(retry_ms.div_ceil(1000).max(1)),
                    )],
                )
            }
            GatewayError::LimitStoreUnavailable
            | GatewayError::StoreDown
            | GatewayError::StoreFailed(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                rpc_error(
                    jsonrpc::INTERNAL_ERROR,
                    "The rate-limit store is unavailable. Retry shortly.",
                ),
                vec![(header::RETRY_AFTER, HeaderValue::from_static("1"))],
            ),
            GatewayError::AuthUnavailable => (
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                rpc_error(
                    jsonrpc::INTERNAL_ERROR,
                    "The authorization service is unavailable. Retry shortly.",
                ),
                vec![(header::RETRY_AFTER, HeaderValue::from_static("1"))],
            ),
            GatewayError::AuthOverloaded { retry_after } => {
                let secs = retry_after.map_or(1, |d| d.as_millis().div_ceil(1000).max(1));
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    None,
                    rpc_error(
                        jsonrpc::INTERNAL_ERROR,
                        "The authorization service is overloaded. Retry later.",
                    ),
                    vec![(
                        header::RETRY_AFTER,
                        HeaderValue::from(u64::try_from(secs).unwrap_or(u64::MAX)),
                    )],
                )
            }
            GatewayError::Answered {
                id,
                error,
                retry_after,
            } => {
                let headers = retry_after
                    .map(|delay| {
                        let secs = delay.as_millis().div_ceil(1000).max(1);
                        (
                            header::RETRY_AFTER,
                            HeaderValue::from(u64::try_from(secs).unwrap_or(u64::MAX)),
                        )
                    })
                    .into_iter()
                    .collect();
                (StatusCode::OK, Some(id), error, headers)
            }
            GatewayError::ToolFatal(id, error) => (StatusCode::OK, Some(id), error, vec![]),
            // A tool's failure is answered to its call's id by `answering`;
            // without one, it is the request's failure.
            GatewayError::Tool(failure) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                None,
                rpc_error(jsonrpc::INTERNAL_ERROR, failure.message),
                vec![],
            ),
            GatewayError::InsufficientScope { body, challenge } => {
                let mut response = reply::json(StatusCode::FORBIDDEN, body);
                let value = HeaderValue::from_str(&challenge).unwrap_or_else(|_| {
                    HeaderValue::from_static("Bearer error=\"insufficient_scope\"")
                });
                response
                    .headers_mut()
                    .insert(header::WWW_AUTHENTICATE, value);
                return response;
            }
            GatewayError::Timeout => (
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                rpc_error(
                    jsonrpc::INTERNAL_ERROR,
                    "The request did not complete in time. Retry shortly.",
                ),
                vec![],
            ),
            GatewayError::Internal => (
                StatusCode::INTERNAL_SERVER_ERROR,
                None,
                rpc_error(jsonrpc::INTERNAL_ERROR, "Internal error"),
                vec![],
            ),
        };
        let mut response = reply::json(status, jsonrpc::error(id.as_ref(), &error));
        for (name, value) in headers {
            response.headers_mut().insert(name, value);
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_missing_inside_a_tool_is_a_403_step_up_challenge() {
        let challenge = insufficient_scope_challenge(
            "https://mcp.example/.well-known/oauth-protected-resource/mcp/v1",
            &["settings.read".to_owned(), "orders.read".to_owned()],
            "deliverySettings.read",
        );
        assert_eq!(
            challenge,
            "Bearer error=\"insufficient_scope\", scope=\"settings.read orders.read deliverySettings.read\", \
             resource_metadata=\"https://mcp.example/.well-known/oauth-protected-resource/mcp/v1\", \
             error_description=\"Additional permission required\""
        );
        let response = GatewayError::InsufficientScope {
            body: b"{}".to_vec(),
            challenge,
        }
        .into_response();
        assert_eq!(response.status(), StatusCode::FORBIDDEN);
        let header = response.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap_or_default();
        assert!(header.starts_with("Bearer error=\"insufficient_scope\""));
    }

    async fn body_of(response: Response) -> serde_json::Value {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    /// Refusals decided after the message was read answer its id with the
    /// profile's code, over HTTP 200, with the Chataigne code and request id;
    /// the same refusal of a message without id keeps its HTTP status.
    #[tokio::test]
    async fn refusals_after_the_message_is_read_answer_its_id() {
        type Make = fn() -> GatewayError;
        let cases: [(Make, &str, i64, StatusCode); 7] = [
            (
                || GatewayError::AddressRateLimited {
                    retry_after: Duration::from_millis(2500),
                },
                "MCP_RATE_LIMITED",
                -32300,
                StatusCode::TOO_MANY_REQUESTS,
            ),
            (
                || GatewayError::AuthRateLimited { retry_after: None },
                "MCP_RATE_LIMITED",
                -32300,
                StatusCode::TOO_MANY_REQUESTS,
            ),
            (
                || GatewayError::AuthUnavailable,
                "MCP_DEPENDENCY_UNAVAILABLE",
                -32502,
                StatusCode::SERVICE_UNAVAILABLE,
            ),
            (
                || GatewayError::LimitStoreUnavailable,
                "MCP_DEPENDENCY_UNAVAILABLE",
                -32502,
                StatusCode::SERVICE_UNAVAILABLE,
            ),
            (
                || GatewayError::AuthOverloaded { retry_after: None },
                "MCP_OVERLOADED",
                -32501,
                StatusCode::SERVICE_UNAVAILABLE,
            ),
            (
                || GatewayError::Timeout,
                "MCP_TOOL_TIMEOUT",
                -32500,
                StatusCode::SERVICE_UNAVAILABLE,
            ),
            (
                || GatewayError::Internal,
                "MCP_INTERNAL_ERROR",
                -32400,
                StatusCode::INTERNAL_SERVER_ERROR,
            ),
        ];
        for (make, code, platform, without_id) in cases {
            let label = make().outcome();
            assert_eq!(make().into_response().status(), without_id, "{label}");
            for (profile, rpc_code) in [
                (crate::config::Profile::Google, platform),
                (crate::config::Profile::Default, jsonrpc::INTERNAL_ERROR),
            ] {
                let to = ReplyTo {
                    id: Id::Number(7.into()),
                    profile,
                };
                let response = make().answering(&to, "req_7").into_response();
                assert_eq!(response.status(), StatusCode::OK, "{label}");
                let body = body_of(response).await;
                assert_eq!(body["id"], 7, "{label}: {body}");
                assert_eq!(body["error"]["code"], rpc_code, "{label}: {body}");
                assert_eq!(body["error"]["data"]["code"], code, "{label}");
                assert_eq!(body["error"]["data"]["request_id"], "req_7", "{label}");
            }
        }
        // Errors about the HTTP exchange itself keep their status.
        let to = ReplyTo {
            id: Id::Number(7.into()),
            profile: crate::config::Profile::Google,
        };
        let response = GatewayError::PayloadTooLarge
            .answering(&to, "req_7")
            .into_response();
        assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);
    }
}
