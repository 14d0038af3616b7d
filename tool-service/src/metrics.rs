//! The tool-service's Prometheus metrics: build info and process metrics,
//! latency of every tool call by
//! tool, surface (`mcp` for `ToolCatalog.CallTool`, `grpc` for the typed
//! RPC) and outcome code; latency of the catalogue listing by outcome code;
//! dependency errors (auth-service, database); the
//! database pool and the process's ES256 operations read at scrape time. The same layer writes the one log line
//! of each typed RPC and of each listing.
//!
//! A tower layer on the gRPC server times the typed RPCs (the tool is found
//! from the RPC path in the catalogue) and the catalogue listing, and makes the instance's metrics
//! reachable, for the duration of each call, to the two places that know
//! more than the path: `CallTool` (the tool name and its outcome) and the one
//! mapping of domain errors (which dependency failed). Outside a call those
//! hooks do nothing. Label values are catalogue names and error-table codes
//! only; an unknown tool name is `unknown`. The layer also records each
//! RPC's status on its span (`rpc.grpc.status_code`, `error.type`).

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use chataigne_common::metrics::prometheus::{self, HistogramVec, IntCounterVec};
use chataigne_common::metrics::{self, Exposition, PoolGauges, PoolStats, Registry};

use crate::domain::Dependency;
use crate::tools::CatalogEntry;

/// Label of a tool name that is not in the catalogue.
pub const UNKNOWN_TOOL: &str = "unknown";

/// The path of the catalogue listing, measured by the layer beside the
/// typed RPCs.
pub const LIST_TOOLS: &str = "/chataigne.tools.v1.ToolCatalog/ListTools";

pub struct ToolMetrics {
    registry: Registry,
    calls: HistogramVec,
    /// `ToolCatalog.ListTools` by outcome code.
    listings: HistogramVec,
    dependency_errors: IntCounterVec,
    /// 1 while the dependency answers its health probe, 0 while it does not.
    dependency_up: prometheus::IntGaugeVec,
    pool: PoolGauges,
    /// ES256 verifications (and signatures) of the process, at each scrape.
    jws: metrics::JwsCounters,
    /// `/<package>.<Service>/<Method>` of each typed RPC → its tool.
    typed: HashMap<String, &'static str>,
    pool_stats: Box<dyn Fn() -> PoolStats + Send + Sync>,
}

impl ToolMetrics {
    /// The metrics of a service with this catalogue, reading the pool with
    /// `pool_stats` at each scrape.
    pub fn new(
        catalog: &[CatalogEntry],
        pool_stats: Box<dyn Fn() -> PoolStats + Send + Sync>,
    ) -> prometheus::Result<ToolMetrics> {
        let registry = Registry::new();
        metrics::register_process_and_build_info(&registry, "chataigne_tools")?;
        let metrics = ToolMetrics {
            calls: metrics::histogram(
                &registry,
                "chataigne_tools_tool_call_duration_seconds",
                "Tool calls by tool, surface (mcp: CallTool, grpc: typed RPC) and outcome code.",
                &["tool", "surface", "outcome"],
            )?,
            listings: metrics::histogram(
                &registry,
                "chataigne_tools_catalog_listing_duration_seconds",
                "Catalogue listings (ToolCatalog.ListTools) by outcome code.",
                &["outcome"],
            )?,
            dependency_errors: metrics::counter_vec(
                &registry,
                "chataigne_tools_dependency_errors_total",
                "Calls failed by a dependency (auth_service, database).",
                &["dependency"],
            )?,
            dependency_up: metrics::gauge_vec(
                &registry,
                "chataigne_tools_dependency_up",
                "1 while the dependency answers its health probe (database, auth_service), 0 while it does not.",
                &["dependency"],
            )?,
            pool: PoolGauges::register(&registry, "chataigne_tools")?,
            typed: catalog
                .iter()
                .map(|entry| (format!("/{}", entry.spec.rpc), entry.spec.name))
                .collect(),
            pool_stats,
            jws: metrics::JwsCounters::register(&registry, "chataigne_tools")?,
            registry,
        };
        for dependency in [Dependency::AuthService, Dependency::Database] {
            metrics
                .dependency_errors
                .with_label_values(&[dependency.as_str()]);
        }
        metrics.dependency_state(Dependency::Database, true);
        Ok(metrics)
    }

    /// The database pool's use now.
    pub fn pool_stats(&self) -> PoolStats {
        (self.pool_stats)()
    }

    /// Records whether `dependency` answered its latest health probe.
    pub fn dependency_state(&self, dependency: Dependency, up: bool) {
        self.dependency_up
            .with_label_values(&[dependency.as_str()])
            .set(i64::from(up));
    }

    fn observe(&self, tool: &str, surface: &str, outcome: &str, took: Duration) {
        self.calls
            .with_label_values(&[tool, surface, outcome])
            .observe(took.as_secs_f64());
    }
}

impl Exposition for ToolMetrics {
    fn render(&self) -> String {
        self.pool.set((self.pool_stats)());
        self.jws.sync();
        metrics::render(&self.registry)
    }
}

tokio::task_local! {
    /// The metrics of the instance serving the current call.
    static CURRENT: Arc<ToolMetrics>;
}

/// Records a `CallTool` of `tool` (`None`: not in the catalogue).
pub fn mcp_call(tool: Option<&'static str>, outcome: &str, took: Duration) {
    let _ = CURRENT.try_with(|metrics| {
        metrics.observe(tool.unwrap_or(UNKNOWN_TOOL), "mcp", outcome, took);
    });
}

/// Counts a failure of `dependency`.
pub fn dependency_failed(dependency: Dependency) {
    let _ = CURRENT.try_with(|metrics| {
        metrics
            .dependency_errors
            .with_label_values(&[dependency.as_str()])
            .inc();
    });
}

/// The outcome code of a unary gRPC response: `ok`, or the error-table code
/// of the trailers-only error status in its headers (a domain code by its own name).
fn outcome(headers: &http::HeaderMap) -> &'static str {
    match tonic::Status::from_header_map(headers) {
        None => "ok",
        Some(status) if status.code() == tonic::Code::Ok => "ok",
        Some(status) => crate::grpc::domain_codes::label(&status),
    }
}

/// The layer of the gRPC server.
#[derive(Clone)]
pub struct MetricsLayer(pub Arc<ToolMetrics>);

impl<S> tower::Layer<S> for MetricsLayer {
    type Service = Measured<S>;

    fn layer(&self, inner: S) -> Measured<S> {
        Measured {
            inner,
            metrics: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Measured<S> {
    inner: S,
    metrics: Arc<ToolMetrics>,
}

impl<S, B, R> tower::Service<http::Request<B>> for Measured<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    R: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let started = Instant::now();
        let path = request.uri().path();
        let tool = self.metrics.typed.get(path).copied();
        let listing = path == LIST_TOOLS;
        let metrics = self.metrics.clone();
        let call = CURRENT.sync_scope(metrics.clone(), || self.inner.call(request));
        Box::pin(async move {
            let response = CURRENT.scope(metrics.clone(), call).await;
            if let Ok(response) = &response {
                // On the RPC's span (entered while this future runs).
                chataigne_common::trace_context::record_outcome(outcome(response.headers()));
            }
            if let (true, Ok(response)) = (listing, &response) {
                let took = started.elapsed();
                let outcome = outcome(response.headers());
                metrics
                    .listings
                    .with_label_values(&[outcome])
                    .observe(took.as_secs_f64());
                tracing::info!(
                    surface = "mcp",
                    outcome,
                    latency_ms = took.as_millis() as u64,
                    "catalogue listed"
                );
            }
            if let (Some(tool), Ok(response)) = (tool, &response) {
                let took = started.elapsed();
                let outcome = outcome(response.headers());
                metrics.observe(tool, "grpc", outcome, took);
                // One line per typed RPC (CallTool logs its own): facts only.
                tracing::info!(
                    surface = "grpc",
                    tool,
                    outcome,
                    latency_ms = took.as_millis() as u64,
                    "typed rpc"
                );
            }
            response
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chataigne_common::ErrorCode;

    fn metrics() -> Arc<ToolMetrics> {
        let catalog = crate::tools::build_catalog().unwrap();
        Arc::new(ToolMetrics::new(&catalog, Box::new(PoolStats::default)).unwrap())
    }

    #[test]
    fn typed_rpc_paths_map_to_their_tools() {
        let metrics = metrics();
        assert_eq!(
            metrics
                .typed
                .get("/chataigne.tools.v1.Restaurant/GetOrder")
                .copied(),
            Some("chataigne_order_get")
        );
        assert!(
            !metrics
                .typed
                .contains_key("/chataigne.tools.v1.ToolCatalog/CallTool")
        );
    }

    #[test]
    fn error_statuses_in_headers_give_their_code() {
        let status = ErrorCode::ResourceForbidden.status();
        let response = status.into_http::<()>();
        assert_eq!(outcome(response.headers()), "MCP_RESOURCE_FORBIDDEN");
        assert_eq!(outcome(&http::HeaderMap::new()), "ok");
    }

    #[tokio::test]
    async fn hooks_count_only_inside_a_call() {
        let metrics = metrics();
        mcp_call(Some("chataigne_orders_list"), "ok", Duration::ZERO);
        CURRENT
            .scope(metrics.clone(), async {
                mcp_call(None, "MCP_INVALID_ARGUMENTS", Duration::ZERO);
                dependency_failed(Dependency::AuthService);
                dependency_failed(Dependency::Database);
            })
            .await;
        let text = metrics.render();
        assert!(text.contains(
            "chataigne_tools_tool_call_duration_seconds_count{outcome=\"MCP_INVALID_ARGUMENTS\",surface=\"mcp\",tool=\"unknown\"} 1"
        ), "{text}");
        assert!(!text.contains("chataigne_orders_list"), "{text}");
        assert!(
            text.contains("chataigne_tools_dependency_errors_total{dependency=\"auth_service\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("chataigne_tools_dependency_errors_total{dependency=\"database\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("chataigne_tools_db_pool_max_connections 0"),
            "{text}"
        );
    }
}
