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

/// The process's ES256 operations (`crate::jws::operations`) as two
/// counters, brought up to date at each scrape.
pub struct JwsCounters {
    signatures: IntCounter,
    verifications: IntCounter,
}

impl JwsCounters {
    /// Registers `<prefix>_jws_signatures_total` and
    /// `<prefix>_jws_verifications_total`.
    pub fn register(registry: &Registry, prefix: &str) -> prometheus::Result<JwsCounters> {
        Ok(JwsCounters {
            signatures: counter(
                registry,
                &format!("{prefix}_jws_signatures_total"),
                "ES256 signatures made by this process (services sharing a process share it).",
            )?,
            verifications: counter(
                registry,
                &format!("{prefix}_jws_verifications_total"),
                "ES256 signatures verified by this process (services sharing a process share it).",
            )?,
        })
    }

    /// Catches the counters up with the process's counts.
    pub fn sync(&self) {
        let now = crate::jws::operations();
        let catch_up = |counter: &IntCounter, total: u64| {
            counter.inc_by(total.saturating_sub(counter.get()));
        };
        catch_up(&self.signatures, now.signatures);
        catch_up(&self.verifications, now.verifications);
    }
}

/// Registers a gauge without labels.
pub fn gauge(registry: &Registry, name: &str, help: &str) -> prometheus::Result<IntGauge> {
    let gauge = IntGauge::new(name, help)?;
    registry.register(Box::new(gauge.clone()))?;
    Ok(gauge)
}

/// Registers a labelled gauge.
pub fn gauge_vec(
    registry: &Registry,
    name: &str,
    help: &str,
    labels: &[&str],
) -> prometheus::Result<prometheus::IntGaugeVec> {
    let gauge = prometheus::IntGaugeVec::new(Opts::new(name, help), labels)?;
    registry.register(Box::new(gauge.clone()))?;
    Ok(gauge)
}

/// The release's version (the workspace version) and the source revision it
/// was built from (`build.rs`: `CHATAIGNE_BUILD_REVISION` at build time, e.g.
/// the commit the image build passes, else the checkout's commit from git,
/// else `unknown`).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
pub const REVISION: &str = env!("CHATAIGNE_REVISION");

/// What `--version` prints after a binary's name: the version and the
/// revision (`0.1.0 (revision 1a2b3c4)`).
pub fn version_line() -> &'static str {
    static LINE: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    LINE.get_or_init(|| format!("{VERSION} (revision {REVISION})"))
}

/// Registers what every service exposes besides its own metrics:
/// `<prefix>_build_info{version,revision} 1` and the standard `process_*`
/// metrics of this process ([`ProcessMetrics`]).
pub fn register_process_and_build_info(
    registry: &Registry,
    prefix: &str,
) -> prometheus::Result<()> {
    let build_info = prometheus::IntGaugeVec::new(
        Opts::new(
            format!("{prefix}_build_info"),
            "Always 1: the version and source revision of the running binary.",
        ),
        &["version", "revision"],
    )?;
    build_info.with_label_values(&[VERSION, REVISION]).set(1);
    registry.register(Box::new(build_info))?;
    registry.register(Box::new(ProcessMetrics::new()?))?;
    Ok(())
}

/// The standard Prometheus process metrics, read from `/proc/self` at each
/// scrape (Linux; elsewhere the families stay at zero):
/// `process_cpu_seconds_total`, `process_resident_memory_bytes`,
/// `process_virtual_memory_bytes`, `process_open_fds`, `process_max_fds`,
/// `process_threads` and `process_start_time_seconds`. (The `prometheus`
/// crate's own collector would bring `procfs` and a second `rustix` into
/// every build for the same seven numbers.)
pub struct ProcessMetrics {
    cpu: prometheus::Counter,
    resident: prometheus::Gauge,
    virtual_memory: prometheus::Gauge,
    open_fds: prometheus::Gauge,
    max_fds: prometheus::Gauge,
    threads: prometheus::Gauge,
    start_time: prometheus::Gauge,
    descs: Vec<prometheus::core::Desc>,
}

/// Clock ticks per second of the times in `/proc/<pid>/stat`: the kernel's
/// USER_HZ, 100 on every Linux ABI this runs on.
const CLOCK_TICKS: f64 = 100.0;

/// What one read of `/proc/self` gives.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
struct ProcessSample {
    cpu_seconds: f64,
    threads: f64,
    start_time_seconds: f64,
    resident_bytes: f64,
    virtual_bytes: f64,
    open_fds: f64,
    max_fds: f64,
}

impl ProcessSample {
    fn read() -> ProcessSample {
        let read = |path: &str| std::fs::read_to_string(path).unwrap_or_default();
        let mut sample = ProcessSample::default();
        let boot = read("/proc/stat")
            .lines()
            .find_map(|line| line.strip_prefix("btime ")?.trim().parse::<f64>().ok())
            .unwrap_or(0.0);
        sample.parse_stat(&read("/proc/self/stat"), boot);
        sample.parse_status(&read("/proc/self/status"));
        sample.parse_limits(&read("/proc/self/limits"));
        sample.open_fds = std::fs::read_dir("/proc/self/fd").map_or(0.0, |dir| dir.count() as f64);
        sample
    }

    /// `/proc/self/stat`: the fields after the command (which may hold
    /// spaces and parentheses), counted from 3 (`state`) as proc(5) does.
    fn parse_stat(&mut self, stat: &str, boot_time: f64) {
        let Some((_, rest)) = stat.rsplit_once(')') else {
            return;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |n: usize| {
            fields
                .get(n - 3)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        self.cpu_seconds = (field(14) + field(15)) / CLOCK_TICKS;
        self.threads = field(20);
        if boot_time > 0.0 {
            self.start_time_seconds = boot_time + field(22) / CLOCK_TICKS;
        }
    }

    /// `/proc/self/status`: VmRSS and VmSize, in kB.
    fn parse_status(&mut self, status: &str) {
        for line in status.lines() {
            let kib = |value: &str| {
                value
                    .trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<f64>()
                    .map_or(0.0, |kib| kib * 1024.0)
            };
            if let Some(value) = line.strip_prefix("VmRSS:") {
                self.resident_bytes = kib(value);
            } else if let Some(value) = line.strip_prefix("VmSize:") {
                self.virtual_bytes = kib(value);
            }
        }
    }

    /// `/proc/self/limits`: the soft limit of open files.
    fn parse_limits(&mut self, limits: &str) {
        if let Some(line) = limits
            .lines()
            .find(|line| line.starts_with("Max open files"))
        {
            self.max_fds = line
                .trim_start_matches("Max open files")
                .split_whitespace()
                .next()
                .and_then(|soft| soft.parse().ok())
                .unwrap_or(0.0);
        }
    }
}

impl ProcessMetrics {
    pub fn new() -> prometheus::Result<ProcessMetrics> {
        let gauge = |name: &str, help: &str| prometheus::Gauge::new(name, help);
        let metrics = ProcessMetrics {
            cpu: prometheus::Counter::new(
                "process_cpu_seconds_total",
                "Total user and system CPU time spent in seconds.",
            )?,
            resident: gauge(
                "process_resident_memory_bytes",
                "Resident memory size in bytes.",
            )?,
            virtual_memory: gauge(
                "process_virtual_memory_bytes",
                "Virtual memory size in bytes.",
            )?,
            open_fds: gauge("process_open_fds", "Number of open file descriptors.")?,
            max_fds: gauge(
                "process_max_fds",
                "Maximum number of open file descriptors.",
            )?,
            threads: gauge("process_threads", "Number of OS threads in the process.")?,
            start_time: gauge(
                "process_start_time_seconds",
                "Start time of the process since unix epoch in seconds.",
            )?,
            descs: Vec::new(),
        };
        let descs = metrics
            .collectors()
            .iter()
            .flat_map(|collector| collector.desc().into_iter().cloned())
            .collect();
        Ok(ProcessMetrics { descs, ..metrics })
    }

    fn collectors(&self) -> [&dyn prometheus::core::Collector; 7] {
        [
            &self.cpu,
            &self.resident,
            &self.virtual_memory,
            &self.open_fds,
            &self.max_fds,
            &self.threads,
            &self.start_time,
        ]
    }
}

impl prometheus::core::Collector for ProcessMetrics {
    fn desc(&self) -> Vec<&prometheus::core::Desc> {
        self.descs.iter().collect()
    }

    fn collect(&self) -> Vec<prometheus::proto::MetricFamily> {
        let sample = ProcessSample::read();
        // A counter only goes up: add what was spent since the last scrape.
        let spent = sample.cpu_seconds - self.cpu.get();
        if spent > 0.0 {
            self.cpu.inc_by(spent);
        }
        self.resident.set(sample.resident_bytes);
        self.virtual_memory.set(sample.virtual_bytes);
        self.open_fds.set(sample.open_fds);
        self.max_fds.set(sample.max_fds);
        self.threads.set(sample.threads);
        self.start_time.set(sample.start_time_seconds);
        self.collectors()
            .iter()
            .flat_map(|collector| collector.collect())
            .collect()
    }
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
    fn build_info_and_process_metrics_are_exposed() {
        let registry = Registry::new();
        register_process_and_build_info(&registry, "t").unwrap();
        let text = render(&registry);
        assert!(
            text.contains(&format!(
                "t_build_info{{revision=\"{REVISION}\",version=\"{VERSION}\"}} 1"
            )),
            "{text}"
        );
        for family in [
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
            "process_virtual_memory_bytes",
            "process_open_fds",
            "process_max_fds",
            "process_start_time_seconds",
            "process_threads",
        ] {
            assert!(text.contains(&format!("\n{family} ")), "{family} in {text}");
        }
        // A second service in the same process has a registry of its own.
        let other = Registry::new();
        assert!(register_process_and_build_info(&other, "u").is_ok());
        let value = |name: &str| -> f64 {
            let line = text
                .lines()
                .find(|line| line.starts_with(&format!("{name} ")))
                .unwrap_or_else(|| panic!("{name} in {text}"));
            line[name.len() + 1..].parse().unwrap()
        };
        assert!(value("process_resident_memory_bytes") > 1e6);
        assert!(value("process_virtual_memory_bytes") >= value("process_resident_memory_bytes"));
        assert!(value("process_open_fds") >= 3.0);
        assert!(value("process_max_fds") >= value("process_open_fds"));
        assert!(value("process_threads") >= 1.0);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs_f64();
        let started = value("process_start_time_seconds");
        assert!(
            started > now - 86_400.0 && started <= now + 1.0,
            "{started} vs {now}"
        );
    }

    #[test]
    fn proc_files_are_parsed_as_proc5_says() {
        let mut sample = ProcessSample::default();
        // A command with a space and a parenthesis, then fields 3 to 22.
        let stat = "4242 (my (odd) cmd) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                    250 50 0 0 20 0 7 0 12345 0 0";
        sample.parse_stat(stat, 1_700_000_000.0);
        assert_eq!(sample.cpu_seconds, 3.0);
        assert_eq!(sample.threads, 7.0);
        assert_eq!(sample.start_time_seconds, 1_700_000_123.45);
        sample.parse_status("Name:\tx\nVmSize:\t  2048 kB\nVmRSS:\t  1024 kB\n");
        assert_eq!(
            (sample.virtual_bytes, sample.resident_bytes),
            (2_097_152.0, 1_048_576.0)
        );
        sample.parse_limits(
            "Limit                     Soft Limit           Hard Limit           Units\n\
             Max open files            1024                 524288               files\n",
        );
        assert_eq!(sample.max_fds, 1024.0);
        // Unreadable files leave zeros, never a panic.
        let mut empty = ProcessSample::default();
        empty.parse_stat("", 0.0);
        empty.parse_status("");
        empty.parse_limits("");
        assert_eq!(empty, ProcessSample::default());
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
