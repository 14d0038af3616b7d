//! Prometheus metrics shared by the three services: registration helpers on a
//! per-instance [`Registry`] (never the process-global one, so several stacks
//! can run in one process), the standard latency buckets, text rendering,
//! database pool gauges, and the small internal HTTP server that serves
//! `/metrics` for the two backends (the gateway mounts [`response`] on its own
//! internal listener).
//!
//! Label values must stay bounded: tool names from the catalogue, codes from
//! the error table, fixed reason lists. Never arguments, tokens or ids.

use std::future::Future;
use std::sync::Arc;

use axum::Router;
use axum::response::Response;
use axum::routing::get;
use prometheus::{HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, Opts};
use tokio::net::TcpListener;

pub use prometheus::{self, Registry};

/// Latency buckets (seconds) of every request and call histogram: from a few
/// milliseconds up to the longest tool deadline (30 s for analytics).
pub const LATENCY_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
];

/// The media type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Registers a latency histogram with [`LATENCY_BUCKETS`].
pub fn histogram(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> prometheus::Result<HistogramVec> {
    let histogram = HistogramVec::new(
        HistogramOpts::new(name, help).buckets(LATENCY_BUCKETS.to_vec()),
        labels,
    )?;
    registry.register(Box::new(histogram.clone()))?;
    Ok(histogram)
}

/// Registers a labelled counter.
pub fn counter_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> prometheus::Result<IntCounterVec> {
    let counter = IntCounterVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(counter.clone()))?;
    Ok(counter)
}

/// Registers a counter without labels.
pub fn counter(registry: &Registry, name: &str, help: &str) -> prometheus::Result<IntCounter> {
    let counter = IntCounter::new(name, help)?;
    registry.register(Box::new(counter.clone()))?;
    Ok(counter)
}

/// Registers a gauge without labels.
pub fn gauge(registry: &Registry, name: &str, help: &str) -> prometheus::Result<IntGauge> {
    let gauge = IntGauge::new(name, help)?;
    registry.register(Box::new(gauge.clone()))?;
    Ok(gauge)
}

/// Everything in `registry`, in the text exposition format. A family that
/// cannot be encoded is logged and the rest is still served.
pub fn render(registry: &Registry) -> String {
    let encoder = prometheus::TextEncoder::new();
    let mut out = String::new();
    for family in registry.gather() {
        if let Err(error) = encoder.encode_utf8(std::slice::from_ref(&family), &mut out) {
            tracing::warn!(family = family.name(), %error, "metric family not rendered");
        }
    }
    out
}

/// A `200` carrying `body` as the text exposition format.
pub fn response(body: String) -> Response {
    let mut response = Response::new(axum::body::Body::from(body));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(CONTENT_TYPE),
    );
    response
}

/// Occupancy of a connection pool at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolStats {
    /// Open connections (idle or in use).
    pub size: u32,
    pub idle: u32,
    /// The configured maximum.
    pub max: u32,
}

impl PoolStats {
    pub fn of<DB: sqlx::Database>(pool: &sqlx::Pool<DB>) -> PoolStats {
        PoolStats {
            size: pool.size(),
            idle: u32::try_from(pool.num_idle()).unwrap_or(u32::MAX),
            max: pool.options().get_max_connections(),
        }
    }
}

/// `<prefix>_db_pool_connections`, `_idle_connections` and
/// `_max_connections`: in use = size − idle; saturation = size − idle
/// reaching max.
#[derive(Clone)]
pub struct PoolGauges {
    size: IntGauge,
    idle: IntGauge,
    max: IntGauge,
}

impl PoolGauges {
    pub fn register(registry: &Registry, prefix: &str) -> prometheus::Result<PoolGauges> {
        Ok(PoolGauges {
            size: gauge(
                registry,
                &format!("{prefix}_db_pool_connections"),
                "Open database connections (idle or in use).",
            )?,
            idle: gauge(
                registry,
                &format!("{prefix}_db_pool_idle_connections"),
                "Idle database connections.",
            )?,
            max: gauge(
                registry,
                &format!("{prefix}_db_pool_max_connections"),
                "Configured maximum of database connections.",
            )?,
        })
    }

    pub fn set(&self, stats: PoolStats) {
        self.size.set(i64::from(stats.size));
        self.idle.set(i64::from(stats.idle));
        self.max.set(i64::from(stats.max));
    }
}

/// What a metrics endpoint serves: the text exposition, refreshed (pool
/// gauges) at scrape time.
pub trait Exposition: Send + Sync + 'static {
    fn render(&self) -> String;
}

/// The internal metrics router: `GET /metrics` only.
pub fn router(source: Arc<dyn Exposition>) -> Router {
    Router::new().route(
        "/metrics",
        get(move || {
            let source = source.clone();
            async move { response(source.render()) }
        }),
    )
}

/// Serves [`router`] on `listener` until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    source: Arc<dyn Exposition>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "metrics listening");
    }
    axum::serve(listener, router(source))
        .with_graceful_shutdown(shutdown)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_render_with_their_labels_and_buckets() {
        let registry = Registry::new();
        let calls = histogram(&registry, "t_call_seconds", "Calls.", &["tool", "outcome"]).unwrap();
        let refusals =
            counter_vec(&registry, "t_refusals_total", "Refusals.", &["reason"]).unwrap();
        calls.with_label_values(&["a_tool", "ok"]).observe(0.02);
        refusals.with_label_values(&["token_expired"]).inc_by(2);
        let text = render(&registry);
        assert!(text.contains("# TYPE t_call_seconds histogram"), "{text}");
        assert!(
            text.contains("t_call_seconds_bucket{outcome=\"ok\",tool=\"a_tool\",le=\"0.025\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("t_call_seconds_bucket{outcome=\"ok\",tool=\"a_tool\",le=\"0.01\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("t_refusals_total{reason=\"token_expired\"} 2"),
            "{text}"
        );
    }

    #[test]
    fn a_name_registered_twice_is_refused() {
        let registry = Registry::new();
        assert!(counter(&registry, "t_total", "Once.").is_ok());
        assert!(counter(&registry, "t_total", "Twice.").is_err());
    }

    #[test]
    fn pool_gauges_follow_the_stats() {
        let registry = Registry::new();
        let gauges = PoolGauges::register(&registry, "t").unwrap();
        gauges.set(PoolStats {
            size: 4,
            idle: 1,
            max: 10,
        });
        let text = render(&registry);
        assert!(text.contains("t_db_pool_connections 4"), "{text}");
        assert!(text.contains("t_db_pool_idle_connections 1"), "{text}");
        assert!(text.contains("t_db_pool_max_connections 10"), "{text}");
    }

    #[tokio::test]
    async fn the_router_serves_the_exposition_as_text() {
        struct Fixed;
        impl Exposition for Fixed {
            fn render(&self) -> String {
                "up 1\n".to_owned()
            }
        }
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(serve(listener, Arc::new(Fixed), async move {
            let _ = stopped.await;
        }));
        let answer = tokio::task::spawn_blocking(move || {
            use std::io::{Read, Write};
            let mut stream = std::net::TcpStream::connect(addr).unwrap();
            stream
                .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .unwrap();
            let mut answer = String::new();
            stream.read_to_string(&mut answer).unwrap();
            answer
        })
        .await
        .unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains(CONTENT_TYPE), "{answer}");
        assert!(answer.ends_with("up 1\n"), "{answer}");
        let _ = stop.send(());
        assert!(server.await.unwrap().is_ok());
    }
}
