//! The one log line per MCP request: who, what, outcome and latency, and
//! never arguments, tokens, cursors or idempotency keys.

use std::time::Instant;

/// Fields filled in while a request is served.
pub struct RequestLog {
    started: Instant,
    pub request_id: String,
    pub method: &'static str,
    pub tool: Option<String>,
    pub client_id: Option<String>,
    pub user_id: Option<String>,
    pub outcome: &'static str,
}

/// Methods logged by name; anything else is logged as `other`.
const KNOWN_METHODS: &[&str] = &[
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "notifications/initialized",
    "notifications/cancelled",
];

impl RequestLog {
    pub fn new(request_id: String) -> RequestLog {
        RequestLog {
            started: Instant::now(),
            request_id,
            method: "-",
            tool: None,
            client_id: None,
            user_id: None,
            outcome: "ok",
        }
    }

    pub fn set_method(&mut self, method: &str) {
        self.method = KNOWN_METHODS
            .iter()
            .find(|known| **known == method)
            .copied()
            .unwrap_or("other");
    }

    /// Time since the request arrived.
    pub fn elapsed(&self) -> std::time::Duration {
        self.started.elapsed()
    }

    /// Emits the line.
    pub fn emit(&self, status: u16) {
        tracing::info!(
            request_id = %self.request_id,
            method = self.method,
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
