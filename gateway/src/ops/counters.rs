//! The gateway's Prometheus metrics, served on the internal listener's
//! `/metrics`: build info and process metrics, public HTTP request latency
//! by method, route and status, MCP requests by method and outcome, tool-call latency by tool
//! and outcome code, authentication failures by reason, rate-limit and
//! allowlist refusals, connections closed by the connection discipline,
//! dependency errors, and the store decisions an operator
//! watches (fail-open, replays).
//!
//! Every label value is bounded: methods from a fixed list, tool names from
//! the catalogue (anything else is `unknown`), outcome codes from the error
//! table or the gateway's own outcome list, reasons from fixed lists.

use std::time::Duration;

use chataigne_common::metrics::prometheus::{self, HistogramVec, IntCounter, IntCounterVec};
use chataigne_common::metrics::{self, Registry};

/// Label of a tool name the catalogue does not hold (or the caller may not see).
pub const UNKNOWN_TOOL: &str = "unknown";

/// Why a request was refused at authentication, as the gateway counts it:
/// no bearer token, the auth-service's rate limit, or the reason the
/// auth-service gave. Anything this list does not know becomes `other`.
const AUTH_REASONS: &[&str] = &[
    "missing_token",
    "ambiguous_credentials",
    "rate_limited",
    "token_invalid",
    "token_expired",
    "audience_mismatch",
    "session_revoked",
    "user_inactive",
    "client_disabled",
    "consent_revoked",
];

/// Why the connection discipline closed a public connection. Anything else
/// becomes `other`.
const CONNECTION_REASONS: &[&str] = &[
    "connection_limit",
    "address_connection_limit",
    "header_timeout",
    "tls_handshake_failed",
];

/// A service or store the gateway depends on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dependency {
    Redis,
    AuthService,
    ToolService,
}

impl Dependency {
    pub fn label(self) -> &'static str {
        match self {
            Dependency::Redis => "redis",
            Dependency::AuthService => "auth_service",
            Dependency::ToolService => "tool_service",
        }
    }
}

/// Which rate limit refused a request.
#[derive(Debug, Clone, Copy)]
pub enum Limit<'a> {
    /// Per OAuth client × user × tool, for this catalogue tool.
    Tool(&'a str),
    /// Per client address, before authentication.
    Address,
}

/// Which store a call was served without (fail-open or bypass).
#[derive(Debug, Clone, Copy)]
pub enum Store {
    RateLimit,
}

pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    http_requests: HistogramVec,
    tool_calls: HistogramVec,
    auth_failures: IntCounterVec,
    rate_limited: IntCounterVec,
    allowlist_refusals: IntCounterVec,
    connections_closed: IntCounterVec,
    dependency_errors: IntCounterVec,
    dependency_up: prometheus::IntGaugeVec,
    store_fail_open: IntCounterVec,
    degraded: prometheus::IntGaugeVec,
    idempotency_replays: IntCounter,
}

impl Metrics {
    pub fn new() -> prometheus::Result<Metrics> {
        let registry = Registry::new();
        metrics::register_process_and_build_info(&registry, "chataigne_gateway")?;
        let metrics = Metrics {
            requests: metrics::counter_vec(
                &registry,
                "chataigne_gateway_requests_total",
                "MCP requests by JSON-RPC method and outcome.",
                &["method", "outcome"],
            )?,
            http_requests: metrics::histogram(
                &registry,
                "chataigne_gateway_http_request_duration_seconds",
                "Public HTTP requests from arrival to response headers, by method, route template and status.",
                &["method", "path", "status"],
            )?,
            tool_calls: metrics::histogram(
                &registry,
                "chataigne_gateway_tool_call_duration_seconds",
                "tools/call requests from arrival to answer, by tool and outcome code.",
                &["tool", "outcome"],
            )?,
            auth_failures: metrics::counter_vec(
                &registry,
                "chataigne_gateway_auth_failures_total",
                "Requests refused at authentication, by reason.",
                &["reason"],
            )?,
            rate_limited: metrics::counter_vec(
                &registry,
                "chataigne_gateway_rate_limited_total",
                "Calls refused by a rate limit (tool: per client x user x tool; address: pre-auth).",
                &["limit", "tool"],
            )?,
            allowlist_refusals: metrics::counter_vec(
                &registry,
                "chataigne_gateway_allowlist_refusals_total",
                "Connections and requests refused by the source-address allowlist, by reason.",
                &["reason"],
            )?,
            connections_closed: metrics::counter_vec(
                &registry,
                "chataigne_gateway_connections_closed_total",
                "Public connections closed by the connection discipline (caps, header timeout, TLS), by reason.",
                &["reason"],
            )?,
            dependency_errors: metrics::counter_vec(
                &registry,
                "chataigne_gateway_dependency_errors_total",
                "Failures of a dependency (unreachable, timed out, unavailable).",
                &["dependency"],
            )?,
            dependency_up: metrics::gauge_vec(
                &registry,
                "chataigne_gateway_dependency_up",
                "1 while the dependency answers its probe (breaker closed), 0 while calls needing it fail at once.",
                &["dependency"],
            )?,
            degraded: metrics::gauge_vec(
                &registry,
                "chataigne_gateway_degraded",
                "1 while the gateway serves calls in a degraded mode (rate_limit_store: Redis down, calls served without rate limits under rate_limits.on_store_failure = fail_open).",
                &["reason"],
            )?,
            store_fail_open: metrics::counter_vec(
                &registry,
                "chataigne_gateway_store_fail_open_total",
                "Calls served while a store was unavailable.",
                &["store"],
            )?,
            idempotency_replays: metrics::counter(
                &registry,
                "chataigne_gateway_idempotency_replays_total",
                "Idempotent writes answered from the tool-service's record (meta.replayed).",
            )?,
            registry,
        };
        // Series an operator alerts on exist from the start, at zero.
        for dependency in [
            Dependency::Redis,
            Dependency::AuthService,
            Dependency::ToolService,
        ] {
            metrics
                .dependency_errors
                .with_label_values(&[dependency.label()]);
        }
        metrics.store_fail_open.with_label_values(&["rate_limit"]);
        metrics.limits_degraded(false);
        metrics.rate_limited.with_label_values(&["address", ""]);
        for reason in CONNECTION_REASONS {
            metrics.connections_closed.with_label_values(&[reason]);
        }
        Ok(metrics)
    }

    /// One MCP request: `method` is the request log's bounded method name,
    /// `outcome` its outcome; a `tools/call` also records its latency under
    /// `tool` (a catalogue name, or `None` for an unknown one).
    ///
    /// The same facts go on the request's HTTP server span, under the MCP
    /// semantic conventions (`mcp.method.name`, `gen_ai.tool.name`,
    /// `error.type`), since this is where they are all known.
    pub fn request(&self, method: &str, tool: Option<&str>, outcome: &str, elapsed: Duration) {
        let tool = tool.unwrap_or(UNKNOWN_TOOL);
        crate::ops::http_telemetry::record_mcp(method, tool, outcome);
        self.requests.with_label_values(&[method, outcome]).inc();
        if method == "tools/call" {
            self.tool_calls
                .with_label_values(&[tool, outcome])
                .observe(elapsed.as_secs_f64());
        }
    }

    /// One public HTTP request: `method` and `path` (a route template, or
    /// `unmatched`) are bounded by [`crate::ops::http_telemetry`].
    pub fn http_request(&self, method: &str, path: &str, status: u16, elapsed: Duration) {
        self.http_requests
            .with_label_values(&[method, path, &status.to_string()])
            .observe(elapsed.as_secs_f64());
    }

    /// A request refused at authentication: `missing_token`, `rate_limited`,
    /// or the reason the auth-service gave.
    pub fn auth_failure(&self, reason: &str) {
        let reason = if AUTH_REASONS.contains(&reason) {
            reason
        } else {
            "other"
        };
        self.auth_failures.with_label_values(&[reason]).inc();
    }

    pub fn rate_limited(&self, limit: Limit<'_>) {
        let labels = match limit {
            Limit::Tool(tool) => ["tool", tool],
            Limit::Address => ["address", ""],
        };
        self.rate_limited.with_label_values(&labels).inc();
    }

    /// A request refused by the allowlist; `reason` is one of the
    /// allowlist's fixed reasons.
    pub fn allowlist_refusal(&self, reason: &'static str) {
        self.allowlist_refusals.with_label_values(&[reason]).inc();
    }

    /// A public connection closed by the connection discipline, or refused
    /// by the allowlist at accept (`address_not_allowed`,
    /// `proxy_header_invalid`, counted as allowlist refusals).
    pub fn connection_closed(&self, reason: &'static str) {
        if matches!(reason, "address_not_allowed" | "proxy_header_invalid") {
            self.allowlist_refusal(reason);
            return;
        }
        let reason = if CONNECTION_REASONS.contains(&reason) {
            reason
        } else {
            "other"
        };
        self.connections_closed.with_label_values(&[reason]).inc();
    }

    /// Whether the dependency of `breaker` answered its latest probe (the
    /// breaker closed), under the breaker's label.
    pub fn dependency_state(&self, breaker: &chataigne_common::breaker::Breaker) {
        self.dependency_up
            .with_label_values(&[breaker.label()])
            .set(i64::from(!breaker.is_open()));
    }

    /// Whether the gateway serves without its rate limits now (Redis down,
    /// limits failing open).
    pub fn limits_degraded(&self, degraded: bool) {
        self.degraded
            .with_label_values(&["rate_limit_store"])
            .set(i64::from(degraded));
    }

    pub fn dependency_error(&self, dependency: Dependency) {
        self.dependency_errors
            .with_label_values(&[dependency.label()])
            .inc();
    }

    /// A call served without `store` (Redis unavailable): counted as a
    /// fail-open and as a Redis dependency error.
    pub fn served_without(&self, store: Store) {
        let label = match store {
            Store::RateLimit => "rate_limit",
        };
        self.store_fail_open.with_label_values(&[label]).inc();
        self.dependency_error(Dependency::Redis);
    }

    pub fn idempotency_replay(&self) {
        self.idempotency_replays.inc();
    }

    /// The text exposition.
    pub fn render(&self) -> String {
        metrics::render(&self.registry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_calls_are_timed_under_the_catalogue_name_or_unknown() {
        let metrics = Metrics::new().unwrap();
        metrics.request(
            "tools/call",
            Some("chataigne_orders_list"),
            "ok",
            Duration::from_millis(30),
        );
        metrics.request("tools/call", None, "invalid_params", Duration::ZERO);
        metrics.request("ping", None, "ok", Duration::ZERO);
        let text = metrics.render();
        assert!(text.contains(
            "chataigne_gateway_tool_call_duration_seconds_count{outcome=\"ok\",tool=\"chataigne_orders_list\"} 1"
        ), "{text}");
        assert!(text.contains(
            "chataigne_gateway_tool_call_duration_seconds_count{outcome=\"invalid_params\",tool=\"unknown\"} 1"
        ), "{text}");
        assert!(
            text.contains("chataigne_gateway_requests_total{method=\"ping\",outcome=\"ok\"} 1"),
            "{text}"
        );
        assert!(
            !text.contains("tool=\"unknown\"} 2"),
            "ping is not a tool call: {text}"
        );
        assert!(
            text.contains(
                "chataigne_gateway_dependency_errors_total{dependency=\"tool_service\"} 0"
            ),
            "{text}"
        );
    }

    #[test]
    fn unknown_auth_reasons_are_folded_into_other() {
        let metrics = Metrics::new().unwrap();
        metrics.auth_failure("token_expired");
        metrics.auth_failure("missing_token");
        metrics.auth_failure("eyJhbGciOi.canary");
        let text = metrics.render();
        assert!(text.contains("chataigne_gateway_auth_failures_total{reason=\"token_expired\"} 1"));
        assert!(text.contains("chataigne_gateway_auth_failures_total{reason=\"missing_token\"} 1"));
        assert!(text.contains("chataigne_gateway_auth_failures_total{reason=\"other\"} 1"));
        assert!(!text.contains("canary"));
    }

    #[test]
    fn store_fail_opens_also_count_as_redis_errors() {
        let metrics = Metrics::new().unwrap();
        metrics.served_without(Store::RateLimit);
        metrics.served_without(Store::RateLimit);
        metrics.rate_limited(Limit::Address);
        metrics.rate_limited(Limit::Tool("chataigne_orders_list"));
        let text = metrics.render();
        assert!(text.contains("chataigne_gateway_store_fail_open_total{store=\"rate_limit\"} 2"));
        assert!(text.contains("chataigne_gateway_dependency_errors_total{dependency=\"redis\"} 2"));
        assert!(
            text.contains("chataigne_gateway_rate_limited_total{limit=\"address\",tool=\"\"} 1")
        );
        assert!(text.contains(
            "chataigne_gateway_rate_limited_total{limit=\"tool\",tool=\"chataigne_orders_list\"} 1"
        ));
    }
}
