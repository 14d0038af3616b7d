//! Telemetry start-up: structured JSON logs (or text for a person), filtered
//! by `RUST_LOG` (default `info`), and OpenTelemetry spans.
//!
//! - Every JSON line written inside a span carries the W3C `trace_id` and
//!   `span_id` of that span, so logs join traces (and, since the context
//!   travels over gRPC, the lines of the three services join each other).
//!   Spans always get OpenTelemetry ids; they are exported over OTLP (gRPC)
//!   only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set, and dropped otherwise.
//!   The exported service name is `OTEL_SERVICE_NAME`, else the service's
//!   own name; `OTEL_RESOURCE_ATTRIBUTES` adds resource attributes.
//! - Text logs carry ANSI colours only when stderr is a terminal; JSON never
//!   does.
//!
//! - With error reporting started first, `error!` events and panics also go
//!   to Sentry (see [`crate::error_reporting`]).
//!
//! Metrics are not exported over OTLP: every service serves them to
//! Prometheus on its internal `/metrics` (see [`crate::metrics`]).

use std::io::IsTerminal;
use std::sync::{Arc, OnceLock};

use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing::dispatcher::WeakDispatch;
use tracing::{Dispatch, Event, Subscriber};
use tracing_subscriber::fmt::format::{Format, Json, JsonFields, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::{EnvFilter, Layer, fmt, prelude::*};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Json,
    Text,
}

static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// Whether OTLP export is configured (`OTEL_EXPORTER_OTLP_ENDPOINT` set and
/// not blank).
fn otlp_configured() -> bool {
    std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT").is_ok_and(|endpoint| !endpoint.trim().is_empty())
}

/// The tracer provider: exporting over OTLP when configured, else a provider
/// without exporter, which still gives every span its trace and span ids.
fn provider(service: &'static str) -> SdkTracerProvider {
    let name = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| service.to_owned());
    let builder = SdkTracerProvider::builder()
        .with_resource(Resource::builder().with_service_name(name).build());
    if !otlp_configured() {
        return builder.build();
    }
    // The exporter reads the endpoint (and headers, timeout) from the
    // standard OTEL_EXPORTER_OTLP_* variables.
    match opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .build()
    {
        Ok(exporter) => builder.with_batch_exporter(exporter).build(),
        Err(error) => {
            eprintln!("OTLP exporter not started: {error}");
            builder.build()
        }
    }
}

/// Installs the global subscriber. Call once, from `main`.
pub fn init(service: &'static str, format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let provider = provider(service);
    if otlp_configured() {
        opentelemetry::global::set_tracer_provider(provider.clone());
    }
    let traces = tracing_opentelemetry::layer().with_tracer(provider.tracer(service));
    // Error reporting, when started (see `crate::error_reporting::start`).
    let reporting = sentry::Hub::current()
        .client()
        .is_some_and(|client| client.is_enabled())
        .then(crate::error_reporting::layer);
    let registry = tracing_subscriber::registry()
        .with(filter)
        .with(traces)
        .with(reporting);
    let result = match format {
        LogFormat::Json => registry.with(json_layer(std::io::stdout)).try_init(),
        LogFormat::Text => registry
            .with(
                fmt::layer()
                    .compact()
                    .with_ansi(std::io::stderr().is_terminal())
                    .with_writer(std::io::stderr),
            )
            .try_init(),
    };
    let _ = PROVIDER.set(provider);
    if result.is_ok() {
        tracing::info!(service, "telemetry started");
    }
}

/// Flushes and stops the trace exporter. Call once, after the service has
/// stopped.
pub fn shutdown() {
    if let Some(provider) = PROVIDER.get()
        && let Err(error) = provider.shutdown()
    {
        tracing::warn!(%error, "trace exporter shutdown");
    }
}

/// The JSON log layer of the services, writing one object per event to
/// `writer`: timestamp, level, the event's fields at the top level, target,
/// the span list, and `trace_id` / `span_id` of the current span when an
/// OpenTelemetry layer is installed in the same subscriber. Never ANSI.
pub fn json_layer<S, W>(writer: W) -> impl Layer<S> + Send + Sync + 'static
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    let dispatch = Arc::new(OnceLock::new());
    let format = WithTraceIds {
        inner: fmt::format()
            .json()
            .flatten_event(true)
            .with_current_span(false),
        dispatch: dispatch.clone(),
    };
    DispatchHandle(dispatch).and_then(
        fmt::layer()
            .with_ansi(false)
            .fmt_fields(JsonFields::new())
            .event_format(format)
            .with_writer(writer),
    )
}

/// Keeps a handle on the subscriber it is registered in, which reading a
/// span's OpenTelemetry context needs.
struct DispatchHandle(Arc<OnceLock<WeakDispatch>>);

impl<S: Subscriber> Layer<S> for DispatchHandle {
    fn on_register_dispatch(&self, subscriber: &Dispatch) {
        let _ = self.0.set(subscriber.downgrade());
    }
}

/// Tracing-subscriber's JSON event format with the OpenTelemetry ids of the
/// event's span first.
struct WithTraceIds {
    inner: Format<Json>,
    dispatch: Arc<OnceLock<WeakDispatch>>,
}

impl WithTraceIds {
    /// `(trace_id, span_id)` of the event's span, as lower-case hex.
    fn ids<S, N>(&self, ctx: &FmtContext<'_, S, N>, event: &Event<'_>) -> Option<(String, String)>
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
        N: for<'a> FormatFields<'a> + 'static,
    {
        let span = match event.parent() {
            Some(parent) => ctx.span(parent),
            None if event.is_contextual() => ctx.lookup_current(),
            None => None,
        }?;
        let dispatch = self.dispatch.get()?.upgrade()?;
        let context = tracing_opentelemetry::get_otel_context(&span.id(), &dispatch)?;
        let otel = context.span();
        let span_context = otel.span_context();
        span_context.is_valid().then(|| {
            (
                span_context.trace_id().to_string(),
                span_context.span_id().to_string(),
            )
        })
    }
}

impl<S, N> FormatEvent<S, N> for WithTraceIds
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let Some((trace_id, span_id)) = self.ids(ctx, event) else {
            return self.inner.format_event(ctx, writer, event);
        };
        let mut line = String::with_capacity(256);
        self.inner
            .format_event(ctx, Writer::new(&mut line), event)?;
        // The format writes one object: the ids (hex, nothing to escape)
        // become its first members.
        match line.strip_prefix('{') {
            Some(rest) => {
                let separator = if rest.starts_with('}') { "" } else { "," };
                write!(
                    writer,
                    "{{\"trace_id\":\"{trace_id}\",\"span_id\":\"{span_id}\"{separator}{rest}"
                )
            }
            None => writer.write_str(&line),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::sync::Mutex;

    use tracing_opentelemetry::OpenTelemetrySpanExt;

    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<u8>>>);

    impl Write for Capture {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Capture {
        fn lines(&self) -> Vec<serde_json::Value> {
            String::from_utf8(self.0.lock().unwrap().clone())
                .unwrap()
                .lines()
                .map(|line| serde_json::from_str(line).unwrap())
                .collect()
        }
    }

    #[test]
    fn json_lines_inside_a_span_carry_its_trace_and_span_ids() {
        let capture = Capture::default();
        let writer = capture.clone();
        let provider = SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")))
            .with(json_layer(move || writer.clone()));
        let (outer_ids, inner_ids) = tracing::subscriber::with_default(subscriber, || {
            tracing::info!("before any span");
            let outer = tracing::info_span!("outer", request_id = "req_1");
            let inner = tracing::info_span!(parent: &outer, "inner");
            outer.in_scope(|| tracing::info!(answer = 42, "in the outer span"));
            inner.in_scope(|| tracing::warn!("in the inner span"));
            tracing::info!(parent: &inner, "explicit parent");
            let ids = |span: &tracing::Span| {
                let context = span.context();
                let otel = context.span();
                let span_context = otel.span_context();
                (
                    span_context.trace_id().to_string(),
                    span_context.span_id().to_string(),
                )
            };
            (ids(&outer), ids(&inner))
        });
        let lines = capture.lines();
        assert_eq!(lines.len(), 4, "{lines:#?}");
        assert!(lines[0].get("trace_id").is_none(), "{}", lines[0]);
        assert_eq!(lines[0]["message"], "before any span");
        assert_eq!(lines[1]["trace_id"], outer_ids.0.as_str());
        assert_eq!(lines[1]["span_id"], outer_ids.1.as_str());
        assert_eq!(lines[1]["answer"], 42);
        assert_eq!(lines[1]["level"], "INFO");
        assert_eq!(lines[1]["spans"][0]["request_id"], "req_1");
        for line in &lines[2..] {
            assert_eq!(line["trace_id"], outer_ids.0.as_str(), "one trace: {line}");
            assert_eq!(line["span_id"], inner_ids.1.as_str(), "{line}");
        }
        assert_eq!(outer_ids.0.len(), 32);
        assert_eq!(outer_ids.1.len(), 16);
        assert_ne!(outer_ids.1, inner_ids.1);
    }

    #[test]
    fn without_an_opentelemetry_layer_lines_are_plain_json() {
        let capture = Capture::default();
        let writer = capture.clone();
        let subscriber = tracing_subscriber::registry().with(json_layer(move || writer.clone()));
        tracing::subscriber::with_default(subscriber, || {
            tracing::info_span!("span").in_scope(|| tracing::info!(n = 1, "hello"));
        });
        let lines = capture.lines();
        assert_eq!(lines.len(), 1);
        assert_eq!(lines[0]["n"], 1);
        assert!(lines[0].get("trace_id").is_none());
    }

    /// The child half of the two tests below: started by them with
    /// `CHATAIGNE_TELEMETRY_CHILD` set, it initialises telemetry as a
    /// service does and logs a few lines (stdout and stderr are pipes).
    #[test]
    fn child_logs_through_init() {
        let Ok(format) = std::env::var("CHATAIGNE_TELEMETRY_CHILD") else {
            return;
        };
        let format = if format == "json" {
            LogFormat::Json
        } else {
            LogFormat::Text
        };
        init("telemetry-test", format);
        let span = tracing::info_span!("request", request_id = "req_child");
        span.in_scope(|| {
            tracing::info!(status = 200, "served");
            tracing::warn!(error = %"upstream refused", "dependency failed");
            tracing::error!("something broke");
        });
        shutdown();
    }

    fn run_child(format: &str) -> std::process::Output {
        let exe = std::env::current_exe().unwrap();
        std::process::Command::new(exe)
            .args([
                "--exact",
                "telemetry::tests::child_logs_through_init",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("CHATAIGNE_TELEMETRY_CHILD", format)
            .env("RUST_LOG", "info")
            .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    }

    #[test]
    fn text_logs_are_plain_when_stderr_is_not_a_terminal() {
        let output = run_child("text");
        assert!(output.status.success(), "{output:?}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        for expected in [
            "telemetry started",
            "served",
            "dependency failed",
            "something broke",
        ] {
            assert!(stderr.contains(expected), "{expected} in {stderr}");
        }
        assert!(
            !stderr.contains('\u{1b}'),
            "no ANSI escape on a pipe: {stderr:?}"
        );
    }

    #[test]
    fn service_json_logs_carry_trace_ids_without_an_otlp_endpoint() {
        let output = run_child("json");
        assert!(output.status.success(), "{output:?}");
        let stdout = String::from_utf8(output.stdout).unwrap();
        assert!(!stdout.contains('\u{1b}'), "{stdout:?}");
        let lines: Vec<serde_json::Value> = stdout
            .lines()
            .filter(|line| line.starts_with('{'))
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let in_span: Vec<&serde_json::Value> = lines
            .iter()
            .filter(|line| line["spans"][0]["request_id"] == "req_child")
            .collect();
        assert_eq!(in_span.len(), 3, "{stdout}");
        let trace = in_span[0]["trace_id"].as_str().unwrap();
        assert_eq!(trace.len(), 32);
        assert!(trace.bytes().all(|b| b.is_ascii_hexdigit()), "{trace}");
        for line in in_span {
            assert_eq!(line["trace_id"], trace, "{line}");
            assert_eq!(line["span_id"].as_str().map(str::len), Some(16), "{line}");
        }
    }
}
