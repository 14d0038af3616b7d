//! The one log line per MCP request: who, what, outcome and latency, and
//! never arguments, tokens, cursors or idempotency keys.

use std::time::Instant;

use crate::wire::method::McpMethod;

/// Fields filled in while a request is served.
pub struct RequestLog {
    started: Instant,
    pub request_id: String,
    /// The JSON-RPC method, once the message is read.
    pub method: Option<McpMethod>,
    pub tool: Option<String>,
    pub client_id: Option<String>,
    pub user_id: Option<String>,
    pub outcome: &'static str,
}

impl RequestLog {
    pub fn new(request_id: String) -> RequestLog {
        RequestLog {
            started: Instant::now(),
            request_id,
            method: None,
            tool: None,
            client_id: None,
            user_id: None,
            outcome: "ok",
        }
    }

    /// The method as logged: its name, `other` when unknown, `-` when the
    /// message was never read.
    pub fn method_name(&self) -> &'static str {
        self.method.map_or("-", McpMethod::name)
    }

    /// Time since the request arrived.
    pub fn elapsed(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// Emits the line.
    pub fn emit(&self, status: u16) {
        tracing::info!(
            request_id = %self.request_id,
            method = self.method_name(),
            tool = self.tool.as_deref().unwrap_or("-"),
            client_id = self.client_id.as_deref().unwrap_or("-"),
            user_id = self.user_id.as_deref().unwrap_or("-"),
            outcome = self.outcome,
            status,
            latency_ms = self.started.elapsed().as_secs_f64() * 1000.0,
            "mcp request"
        );
    }
}
