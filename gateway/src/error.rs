//! The gateway's one error type and its one mapping to an HTTP status, headers
//! and a JSON-RPC error body. Tool failures that stay results are not errors
//! here: they are shaped by the envelope module.

use std::time::Duration;

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde_json::json;

use crate::config::Profile;
use crate::jsonrpc::{self, ErrorObject, Id, Invalid};
use crate::reply;

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
    #[error("unsupported MCP-Protocol-Version")]
    UnsupportedProtocolVersion,
    #[error("request body too large")]
    PayloadTooLarge,
    #[error("parse error: {0}")]
    Parse(&'static str),
    #[error("{}", .0.message)]
    InvalidRequest(Invalid),
    #[error("method not found")]
    MethodNotFound(Id),
    #[error("invalid params: {1}")]
    InvalidParams(Id, String),
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
    AddressRateLimited {
        profile: Profile,
        retry_after: Duration,
    },
    #[error("the auth-service is unavailable")]
    AuthUnavailable { profile: Profile },
    #[error("tool failure raised as a JSON-RPC error")]
    ToolFatal(Id, ErrorObject),
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
/// Connected Apps platform code for an unavailable dependency.
const PLATFORM_SERVICE_UNAVAILABLE: i64 = -32502;
/// Connected Apps platform code for a rate-limited request.
const PLATFORM_RATE_LIMITED: i64 = -32300;

impl GatewayError {
    /// The outcome label of the request log line.
    pub fn outcome(&self) -> &'static str {
        match self {
            GatewayError::AddressRefused => "address_refused",
            GatewayError::NotFound => "not_found",
            GatewayError::MethodNotAllowed => "method_not_allowed",
            GatewayError::NotAcceptable => "not_acceptable",
            GatewayError::UnsupportedMediaType => "unsupported_media_type",
            GatewayError::OriginForbidden => "origin_forbidden",
            GatewayError::UnsupportedProtocolVersion => "unsupported_protocol_version",
            GatewayError::PayloadTooLarge => "payload_too_large",
            GatewayError::Parse(_) => "parse_error",
            GatewayError::InvalidRequest(_) => "invalid_request",
            GatewayError::MethodNotFound(_) => "method_not_found",
            GatewayError::InvalidParams(..) => "invalid_params",
            GatewayError::Unauthenticated { .. } => "unauthenticated",
            GatewayError::AuthRateLimited { .. } => "auth_rate_limited",
            GatewayError::AddressRateLimited { .. } => "address_rate_limited",
            GatewayError::AuthUnavailable { .. } => "auth_unavailable",
            GatewayError::ToolFatal(..) => "tool_error",
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
/// protected-resource metadata is and which scopes the endpoint's tools need
/// (business scopes; the platform-admin ones are not suggested to clients).
fn bearer_challenge(metadata_url: &str, token_presented: bool) -> String {
    let scope = chataigne_common::scopes::BUSINESS_SCOPES.join(" ");
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
            GatewayError::UnsupportedProtocolVersion => (
                StatusCode::BAD_REQUEST,
                None,
                rpc_error(
                    jsonrpc::INVALID_REQUEST,
                    format!(
                        "Bad Request: unsupported MCP-Protocol-Version (supported: {})",
                        crate::initialize::SUPPORTED_VERSIONS.join(", ")
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
            GatewayError::AddressRateLimited {
                profile,
                retry_after,
            } => {
                let code = match profile {
                    Profile::Default => jsonrpc::INTERNAL_ERROR,
                    Profile::Google => PLATFORM_RATE_LIMITED,
                };
                let retry_ms = u64::try_from(retry_after.as_millis()).unwrap_or(u64::MAX);
                let error = ErrorObject {
                    code,
                    message: "Too many requests. Retry after the suggested delay.".to_owned(),
                    data: Some(json!({
                        "code": chataigne_common::ErrorCode::RateLimited.as_str(),
                        "category": "rate_limit",
                        "retryable": true,
                        "retry_after_ms": retry_ms,
                    })),
                };
                (
                    StatusCode::TOO_MANY_REQUESTS,
                    None,
                    error,
                    vec![(
                        header::RETRY_AFTER,
                        HeaderValue::from(retry_ms.div_ceil(1000).max(1)),
                    )],
                )
            }
            GatewayError::AuthUnavailable { profile } => {
                let code = match profile {
                    Profile::Default => jsonrpc::INTERNAL_ERROR,
                    Profile::Google => PLATFORM_SERVICE_UNAVAILABLE,
                };
                (
                    StatusCode::SERVICE_UNAVAILABLE,
                    None,
                    rpc_error(
                        code,
                        "The authorization service is unavailable. Retry shortly.",
                    ),
                    vec![(header::RETRY_AFTER, HeaderValue::from_static("1"))],
                )
            }
            GatewayError::ToolFatal(id, error) => (StatusCode::OK, Some(id), error, vec![]),
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
}
