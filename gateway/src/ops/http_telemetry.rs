//! Telemetry vocabulary of the public requests, shared by the layers that
//! record it: bounded HTTP method and protocol labels, the MCP attributes
//! of the request span ([`record_mcp`]) and a caller's trace context
//! ([`TraceParent`]). The span itself and the HTTP metrics are the public
//! stack's middleware (`edge/trace.rs`).

use http::{Method, Version};

/// A caller's W3C trace context (`traceparent`, and `tracestate` if any),
/// as received: the spans of the work it asked for continue it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent {
    pub traceparent: String,
    pub tracestate: Option<String>,
}

/// The `path` label (and `http.route`) of a request no route matched.
pub const UNMATCHED: &str = "unmatched";

/// The method as a bounded label: the standard methods by name, anything
/// else `_OTHER` (as the HTTP semantic conventions say).
pub fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        Method::PATCH => "PATCH",
        Method::CONNECT => "CONNECT",
        Method::TRACE => "TRACE",
        _ => "_OTHER",
    }
}

pub fn protocol_version(version: Version) -> &'static str {
    match version {
        Version::HTTP_09 => "0.9",
        Version::HTTP_10 => "1.0",
        Version::HTTP_11 => "1.1",
        Version::HTTP_2 => "2",
        Version::HTTP_3 => "3",
        _ => "_OTHER",
    }
}

/// Records on the current request span what the MCP message was: its
/// (bounded) method, the tool label of a `tools/call` (a catalogue name, or
/// `unknown`; ignored for other methods), and the outcome as `error.type` when it is not `ok`.
pub fn record_mcp(method: &str, tool: &str, outcome: &str) {
    let span = tracing::Span::current();
    if method != "-" {
        span.record("mcp.method.name", method);
    }
    if method == "tools/call" {
        span.record("gen_ai.tool.name", tool);
        span.record("gen_ai.operation.name", "execute_tool");
    }
    if outcome != "ok" {
        span.record("error.type", outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_outside_the_standard_set_are_folded() {
        assert_eq!(method_label(&Method::POST), "POST");
        assert_eq!(
            method_label(&Method::from_bytes(b"CANARYMETHOD").unwrap()),
            "_OTHER"
        );
        assert_eq!(protocol_version(Version::HTTP_2), "2");
    }
}
