//! The auth-service's Prometheus metrics: build info and process metrics,
//! gRPC latency by RPC and outcome
//! code, authentication and authorization failures by reason, OAuth HTTP
//! requests and their `error` codes, sign-in failures, and the database pool
//! and the process's ES256 operations read at scrape time. Served on `metrics_listen` when configured.
//!
//! Label values are bounded: RPC names, route templates, codes and reasons
//! from fixed lists. Never tokens, codes, emails or ids.

use std::sync::Arc;
use std::time::Duration;

use chataigne_common::metrics::prometheus::{self, HistogramVec, IntCounter, IntCounterVec};
use chataigne_common::metrics::{self, Exposition, PoolGauges, Registry};

use crate::core::Core;
use crate::error::AuthError;

/// Marks an OAuth error response with its `error` code, for the HTTP
/// request metrics (set by the one error mapping of the HTTP side).
#[derive(Debug, Clone, Copy)]
pub struct OAuthErrorCode(pub &'static str);

pub struct AuthMetrics {
    registry: Registry,
    rpc_duration: HistogramVec,
    failures: IntCounterVec,
    http_duration: HistogramVec,
    oauth_errors: IntCounterVec,
    sign_in_failures: IntCounter,
    connections_closed: IntCounterVec,
    pool: PoolGauges,
    /// ES256 signatures and verifications of the process, at each scrape.
    jws: metrics::JwsCounters,
}

/// Why a call was refused, as counted; `None` for failures that are not a
/// refusal of the caller (storage, internal, not found).
pub fn failure_reason(error: &AuthError) -> Option<&'static str> {
    match error {
        AuthError::Unauthenticated(failure) => Some(failure.reason()),
        AuthError::ScopeRequired { .. } => Some("scope_missing"),
        AuthError::Forbidden => Some("membership_missing"),
        AuthError::InvalidArgument { .. } => Some("invalid_request"),
        AuthError::OAuth { .. }
        | AuthError::NotFound { .. }
        | AuthError::Unavailable(_)
        | AuthError::Internal(_) => None,
    }
}

impl AuthMetrics {
    pub fn new() -> prometheus::Result<AuthMetrics> {
        let registry = Registry::new();
        metrics::register_process_and_build_info(&registry, "chataigne_auth")?;
        Ok(AuthMetrics {
            rpc_duration: metrics::histogram(
                &registry,
                "chataigne_auth_rpc_duration_seconds",
                "AuthService RPCs by method and outcome code.",
                &["rpc", "outcome"],
            )?,
            failures: metrics::counter_vec(
                &registry,
                "chataigne_auth_failures_total",
                "Authenticate, Authorize and ResolveAccess refusals by reason.",
                &["rpc", "reason"],
            )?,
            http_duration: metrics::histogram(
                &registry,
                "chataigne_auth_http_request_duration_seconds",
                "Authorization-server HTTP requests by route and status.",
                &["path", "status"],
            )?,
            oauth_errors: metrics::counter_vec(
                &registry,
                "chataigne_auth_oauth_errors_total",
                "OAuth error responses by route and OAuth error code.",
                &["endpoint", "error"],
            )?,
            sign_in_failures: metrics::counter(
                &registry,
                "chataigne_auth_sign_in_failures_total",
                "Sign-in attempts refused (unknown email or wrong password).",
            )?,
            connections_closed: metrics::counter_vec(
                &registry,
                "chataigne_auth_http_connections_closed_total",
                "HTTP connections closed by the connection discipline (caps, header timeout), by reason.",
                &["reason"],
            )?,
            pool: PoolGauges::register(&registry, "chataigne_auth")?,
            jws: metrics::JwsCounters::register(&registry, "chataigne_auth")?,
            registry,
        })
    }

    /// One gRPC call; a refusal is also counted by reason. The outcome also
    /// goes on the RPC's span (`rpc.grpc.status_code`, `error.type`).
    pub fn rpc(&self, rpc: &'static str, outcome: &str, error: Option<&AuthError>, took: Duration) {
        chataigne_common::trace_context::record_outcome(outcome);
        self.rpc_duration
            .with_label_values(&[rpc, outcome])
            .observe(took.as_secs_f64());
        if let Some(reason) = error.and_then(failure_reason) {
            self.failures.with_label_values(&[rpc, reason]).inc();
        }
    }

    /// One HTTP request on route `path` (a route template, or `unmatched`).
    pub fn http(&self, path: &str, status: u16, oauth_error: Option<&str>, took: Duration) {
        self.http_duration
            .with_label_values(&[path, &status.to_string()])
            .observe(took.as_secs_f64());
        if let Some(error) = oauth_error {
            self.oauth_errors.with_label_values(&[path, error]).inc();
        }
    }

    pub fn sign_in_failure(&self) {
        self.sign_in_failures.inc();
    }

    /// An HTTP connection closed by the connection discipline (a fixed
    /// reason of `chataigne_common::http_server`).
    pub fn connection_closed(&self, reason: &'static str) {
        self.connections_closed.with_label_values(&[reason]).inc();
    }

    /// The text exposition (pool gauges as last set).
    pub fn render(&self) -> String {
        metrics::render(&self.registry)
    }
}

/// The metrics endpoint's source: the pool gauges are read at each scrape.
pub struct Scrape {
    pub metrics: Arc<AuthMetrics>,
    pub core: Arc<Core>,
}

impl Exposition for Scrape {
    fn render(&self) -> String {
        self.metrics.pool.set(self.core.store().pool_stats());
        self.metrics.jws.sync();
        self.metrics.render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::AuthFailure;
    use crate::store::StoreError;

    #[test]
    fn refusals_are_counted_by_reason_and_other_failures_only_timed() {
        let metrics = AuthMetrics::new().unwrap();
        let expired = AuthError::Unauthenticated(AuthFailure::TokenExpired);
        metrics.rpc(
            "Authenticate",
            "MCP_UNAUTHENTICATED",
            Some(&expired),
            Duration::ZERO,
        );
        metrics.rpc(
            "Authorize",
            "MCP_RESOURCE_FORBIDDEN",
            Some(&AuthError::Forbidden),
            Duration::ZERO,
        );
        let down = AuthError::Unavailable(StoreError::Unavailable("db down".into()));
        metrics.rpc(
            "Authorize",
            "MCP_DEPENDENCY_UNAVAILABLE",
            Some(&down),
            Duration::ZERO,
        );
        metrics.rpc("ResolveAccess", "ok", None, Duration::from_millis(3));
        let text = metrics::render(&metrics.registry);
        assert!(
            text.contains(
                "chataigne_auth_failures_total{reason=\"token_expired\",rpc=\"Authenticate\"} 1"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "chataigne_auth_failures_total{reason=\"membership_missing\",rpc=\"Authorize\"} 1"
            ),
            "{text}"
        );
        assert!(!text.contains("db down"), "{text}");
        assert_eq!(
            text.matches("chataigne_auth_failures_total{").count(),
            2,
            "{text}"
        );
        assert!(text.contains(
            "chataigne_auth_rpc_duration_seconds_count{outcome=\"MCP_DEPENDENCY_UNAVAILABLE\",rpc=\"Authorize\"} 1"
        ), "{text}");
        assert!(
            text.contains(
                "chataigne_auth_rpc_duration_seconds_count{outcome=\"ok\",rpc=\"ResolveAccess\"} 1"
            ),
            "{text}"
        );
    }

    #[test]
    fn oauth_errors_are_counted_by_route_and_code() {
        let metrics = AuthMetrics::new().unwrap();
        metrics.http("/token", 400, Some("invalid_grant"), Duration::ZERO);
        metrics.http("/token", 200, None, Duration::ZERO);
        let text = metrics::render(&metrics.registry);
        assert!(
            text.contains(
                "chataigne_auth_oauth_errors_total{endpoint=\"/token\",error=\"invalid_grant\"} 1"
            ),
            "{text}"
        );
        assert!(text.contains(
            "chataigne_auth_http_request_duration_seconds_count{path=\"/token\",status=\"200\"} 1"
        ), "{text}");
    }
}
