//! Error reporting to Sentry (or any Sentry-compatible endpoint), privacy
//! first.
//!
//! Off unless `sentry.dsn` (`CHATAIGNE_SENTRY__DSN`, a secret) is set. Once
//! [`start`]ed, every `error!` event and every panic becomes a Sentry event
//! tagged with the service, the release (`chataigne@<version>+<revision>`),
//! the configured environment, and — when the event happens inside a
//! request — its `request_id` and the W3C trace id of its span (also the
//! event's `trace` context), so an on-call engineer goes from the event to
//! the request's logs and trace. `warn!` events become breadcrumbs.
//!
//! What leaves is decided by an allowlist, in two places every event goes
//! through:
//!
//! - [`layer`] builds events and breadcrumbs from tracing events with only
//!   the fields named in [`ALLOWED_FIELDS`] (short scalar values), never the
//!   others (tool arguments, message texts, queries, idempotency keys,
//!   cursors, tokens, passwords, error details);
//! - [`scrub`], the client's `before_send`, rebuilds every event (the
//!   panic integration's too) from its safe parts: level, logger, the free
//!   text up to its first `: ` (where interpolated detail begins), allowed
//!   tags and extras, the `trace` context, exception types and stack frames
//!   without variables or source lines, breadcrumbs likewise. No user, no
//!   request (body, cookies, query string, headers), no other context.
//!
//! Events travel over the workspace's own HTTP client (reqwest with rustls)
//! on one background thread, bounded: when the endpoint is slow, events are
//! dropped rather than queued without limit.

use std::borrow::Cow;
use std::str::FromStr;
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use opentelemetry::trace::TraceContextExt;
use schemars::JsonSchema;
use secrecy::{ExposeSecret, SecretString};
use sentry::protocol::{
    Breadcrumb, Context, Event, Exception, Frame, Mechanism, Stacktrace, TraceContext, Value,
};
use sentry::types::Dsn;
use sentry::{ClientOptions, Envelope, Level as SentryLevel, Transport};
use serde::{Deserialize, Serialize};
use tracing::dispatcher::WeakDispatch;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Dispatch, Level, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context as LayerContext;
use tracing_subscriber::registry::LookupSpan;

use crate::config::ConfigError;
use crate::metrics::{REVISION, VERSION};

/// The fields of a tracing event (or breadcrumb) that may leave the
/// process: names, codes and states, never data a caller gave.
pub const ALLOWED_FIELDS: &[&str] = &[
    "tool",
    "code",
    "outcome",
    "status",
    "service",
    "dependency",
    "breaker",
    "kind",
    "class",
    "state",
    "rpc",
];

/// Tags an event may carry (set by this module).
const ALLOWED_TAGS: &[&str] = &["service", "request_id", "trace_id"];

/// Longest string value kept for an allowed field or tag; longer ones are
/// dropped (a name or code is short).
const MAX_VALUE_CHARS: usize = 64;

/// Longest free text (message, exception value) kept.
const MAX_TEXT_CHARS: usize = 200;

/// Events waiting for the transport; beyond, new ones are dropped.
const QUEUE: usize = 64;

/// Bound of one delivery.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// Error reporting (configuration section `sentry`).
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SentryConfig {
    /// Sentry DSN (`https://<key>@<host>/<project>`) errors and panics are
    /// reported to; a secret. Unset: no error reporting.
    #[serde(serialize_with = "crate::secrets::serialize_optional_secret")]
    #[schemars(with = "Option<String>", extend("x-secret" = true))]
    pub dsn: Option<SecretString>,
    /// The environment events are tagged with (e.g. `production`, `staging`).
    pub environment: String,
}

impl Default for SentryConfig {
    fn default() -> Self {
        SentryConfig {
            dsn: None,
            environment: "production".to_owned(),
        }
    }
}

impl SentryConfig {
    /// The parsed DSN: `None` when unset or blank; an error naming the
    /// setting (never its value) when it is not a DSN.
    fn dsn(&self) -> Result<Option<Dsn>, ConfigError> {
        let Some(dsn) = &self.dsn else {
            return Ok(None);
        };
        let dsn = dsn.expose_secret().trim();
        if dsn.is_empty() {
            return Ok(None);
        }
        Dsn::from_str(dsn).map(Some).map_err(|_| {
            ConfigError::Invalid(format!(
                "sentry.dsn ({}) is not a Sentry DSN",
                crate::config::env_var("sentry.dsn")
            ))
        })
    }

    /// Checks the DSN parses (start-up validation).
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.dsn().map(|_| ())
    }
}

/// The release events carry: `chataigne@<version>+<revision>`.
pub fn release() -> String {
    format!("chataigne@{VERSION}+{REVISION}")
}

/// Error reporting while held: flushes pending events when dropped (call
/// [`Reporting::flush`] to wait for them explicitly).
#[must_use = "error reporting stops when this is dropped"]
pub struct Reporting {
    guard: Option<sentry::ClientInitGuard>,
}

impl Reporting {
    /// Whether a DSN is configured (events are sent).
    pub fn is_enabled(&self) -> bool {
        self.guard.as_ref().is_some_and(|guard| guard.is_enabled())
    }

    /// Waits up to `timeout` for the events captured so far to be sent.
    pub fn flush(&self, timeout: Duration) -> bool {
        match &self.guard {
            Some(guard) => guard.flush(Some(timeout)),
            None => true,
        }
    }
}

/// Starts error reporting for `service` from its configuration, before
/// telemetry is initialised (whose subscriber then includes [`layer`]):
/// binds the client, installs the panic hook. Without a DSN, does nothing.
pub fn start(service: &'static str, config: &SentryConfig) -> Result<Reporting, ConfigError> {
    let Some(dsn) = config.dsn()? else {
        return Ok(Reporting { guard: None });
    };
    let mut options = ClientOptions::default();
    options.dsn = Some(dsn);
    options.release = Some(Cow::Owned(release()));
    options.environment = Some(Cow::Owned(config.environment.clone()));
    options.server_name = None;
    options.send_default_pii = false;
    options.attach_stacktrace = false;
    options.max_breadcrumbs = 30;
    options.before_send = Some(Arc::new(move |event| Some(scrub(service, event))));
    options.before_breadcrumb = Some(Arc::new(|breadcrumb| Some(scrub_breadcrumb(breadcrumb))));
    options.transport = Some(Arc::new(|options: &ClientOptions| {
        Arc::new(HttpTransport::new(options)) as Arc<dyn Transport>
    }));
    Ok(Reporting {
        guard: Some(sentry::init(options)),
    })
}

/// The tracing layer reporting `error!` events (and keeping `warn!` ones
/// as breadcrumbs), with the request id and trace id of the span they
/// happen in. Inert while no client is started.
pub fn layer<S>() -> impl Layer<S> + Send + Sync + 'static
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    ReportingLayer {
        dispatch: Arc::new(OnceLock::new()),
    }
}

/// A span's `request_id`, kept in its extensions.
struct SpanRequestId(String);

/// Reads a `request_id` field.
#[derive(Default)]
struct RequestIdVisitor(Option<String>);

impl Visit for RequestIdVisitor {
    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "request_id" {
            self.0 = Some(value.to_owned());
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "request_id" {
            self.0 = Some(format!("{value:?}"));
        }
    }
}

/// The message and the allowed fields of an event.
#[derive(Default)]
struct AllowedFields {
    message: Option<String>,
    kept: std::collections::BTreeMap<String, Value>,
}

impl AllowedFields {
    fn keep(&mut self, field: &Field, value: Value) {
        if ALLOWED_FIELDS.contains(&field.name()) {
            self.kept.insert(field.name().to_owned(), value);
        }
    }
    fn keep_text(&mut self, field: &Field, text: String) {
        if field.name() == "message" {
            self.message = Some(free_text(&text));
        } else if text.chars().count() <= MAX_VALUE_CHARS {
            self.keep(field, Value::String(text));
        }
    }
}

impl Visit for AllowedFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.keep_text(field, value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        // Only format what may be kept: a value is never rendered otherwise.
        if field.name() == "message" || ALLOWED_FIELDS.contains(&field.name()) {
            self.keep_text(field, format!("{value:?}"));
        }
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.keep(field, Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.keep(field, Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.keep(field, Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.keep(field, Value::from(value));
    }
}

/// Free text as it may leave: up to its first `: ` (where interpolated
/// detail conventionally begins), at most [`MAX_TEXT_CHARS`] characters.
fn free_text(text: &str) -> String {
    let head = text
        .split(": ")
        .next()
        .unwrap_or_default()
        .trim_end_matches(':')
        .trim_end();
    head.chars().take(MAX_TEXT_CHARS).collect()
}

struct ReportingLayer {
    dispatch: Arc<OnceLock<WeakDispatch>>,
}

/// The request id and the trace context of the span `id` (or its nearest
/// ancestor carrying a request id).
fn span_ids<S>(
    id: &Id,
    ctx: &LayerContext<'_, S>,
    dispatch: Option<&Dispatch>,
) -> (Option<String>, Option<TraceContext>)
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let request_id = ctx.span_scope(id).and_then(|scope| {
        scope.into_iter().find_map(|span| {
            span.extensions()
                .get::<SpanRequestId>()
                .map(|id| id.0.clone())
        })
    });
    let trace = dispatch
        .and_then(|dispatch| tracing_opentelemetry::get_otel_context(id, dispatch))
        .and_then(|context| {
            let span = context.span();
            let span_context = span.span_context();
            if !span_context.is_valid() {
                return None;
            }
            Some(TraceContext {
                trace_id: span_context.trace_id().to_string().parse().ok()?,
                span_id: span_context.span_id().to_string().parse().ok()?,
                ..TraceContext::default()
            })
        });
    (request_id, trace)
}

impl<S> Layer<S> for ReportingLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_register_dispatch(&self, subscriber: &Dispatch) {
        let _ = self.dispatch.set(subscriber.downgrade());
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: LayerContext<'_, S>) {
        let mut visitor = RequestIdVisitor::default();
        attrs.record(&mut visitor);
        if let (Some(request_id), Some(span)) = (visitor.0, ctx.span(id)) {
            span.extensions_mut().insert(SpanRequestId(request_id));
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: LayerContext<'_, S>) {
        let mut visitor = RequestIdVisitor::default();
        values.record(&mut visitor);
        if let (Some(request_id), Some(span)) = (visitor.0, ctx.span(id)) {
            span.extensions_mut().replace(SpanRequestId(request_id));
        }
    }

    fn on_event(&self, event: &tracing::Event<'_>, ctx: LayerContext<'_, S>) {
        let level = *event.metadata().level();
        if level > Level::WARN || sentry::Hub::current().client().is_none() {
            return;
        }
        let mut fields = AllowedFields::default();
        event.record(&mut fields);
        if level == Level::WARN {
            sentry::add_breadcrumb(Breadcrumb {
                ty: "log".to_owned(),
                category: Some(event.metadata().target().to_owned()),
                level: SentryLevel::Warning,
                message: fields.message,
                data: fields.kept.into_iter().collect(),
                ..Breadcrumb::default()
            });
            return;
        }
        let dispatch = self.dispatch.get().and_then(WeakDispatch::upgrade);
        let (request_id, trace) = match ctx.event_span(event) {
            Some(span) => span_ids(&span.id(), &ctx, dispatch.as_ref()),
            None => (None, None),
        };
        let mut report = Event {
            level: SentryLevel::Error,
            logger: Some(event.metadata().target().to_owned()),
            message: fields.message,
            extra: fields.kept.into_iter().collect(),
            ..Event::default()
        };
        if let Some(request_id) = request_id {
            report.tags.insert("request_id".to_owned(), request_id);
        }
        if let Some(trace) = trace {
            report
                .tags
                .insert("trace_id".to_owned(), trace.trace_id.to_string());
            report.contexts.insert("trace".to_owned(), trace.into());
        }
        sentry::capture_event(report);
    }
}

/// The ids of the current span, outside an event's dispatch (a panic hook):
/// its request id and trace context.
fn current_span_ids() -> (Option<String>, Option<TraceContext>) {
    let current = tracing::Span::current();
    current
        .with_subscriber(|(id, dispatch)| {
            let Some(registry) = dispatch.downcast_ref::<tracing_subscriber::Registry>() else {
                return (None, None);
            };
            let request_id = registry.span(id).and_then(|span| {
                span.scope().find_map(|span| {
                    span.extensions()
                        .get::<SpanRequestId>()
                        .map(|id| id.0.clone())
                })
            });
            let trace = tracing_opentelemetry::get_otel_context(id, dispatch).and_then(|context| {
                let span = context.span();
                let span_context = span.span_context();
                if !span_context.is_valid() {
                    return None;
                }
                Some(TraceContext {
                    trace_id: span_context.trace_id().to_string().parse().ok()?,
                    span_id: span_context.span_id().to_string().parse().ok()?,
                    ..TraceContext::default()
                })
            });
            (request_id, trace)
        })
        .unwrap_or((None, None))
}

/// A short scalar value may leave; anything else is dropped.
fn short_scalar(value: &Value) -> bool {
    match value {
        Value::Bool(_) | Value::Number(_) => true,
        Value::String(text) => text.chars().count() <= MAX_VALUE_CHARS,
        _ => false,
    }
}

/// The `before_send` of the client: the event rebuilt from its safe parts
/// only (see the module documentation).
pub fn scrub(service: &str, event: Event<'static>) -> Event<'static> {
    let mut tags: sentry::protocol::Map<String, String> = event
        .tags
        .into_iter()
        .filter(|(key, value)| {
            ALLOWED_TAGS.contains(&key.as_str()) && value.chars().count() <= MAX_VALUE_CHARS
        })
        .collect();
    tags.insert("service".to_owned(), service.to_owned());
    let mut contexts = sentry::protocol::Map::new();
    if let Some(Context::Trace(trace)) = event.contexts.get("trace")
        && tags.contains_key("trace_id")
    {
        contexts.insert(
            "trace".to_owned(),
            Context::from(TraceContext {
                trace_id: trace.trace_id,
                span_id: trace.span_id,
                ..TraceContext::default()
            }),
        );
    }
    if !tags.contains_key("request_id") {
        // A panic: the hook runs in the panicking code's span.
        let (request_id, trace) = current_span_ids();
        if let Some(request_id) = request_id.filter(|id| id.chars().count() <= MAX_VALUE_CHARS) {
            tags.insert("request_id".to_owned(), request_id);
        }
        if let Some(trace) = trace {
            tags.insert("trace_id".to_owned(), trace.trace_id.to_string());
            contexts.insert("trace".to_owned(), trace.into());
        }
    }
    let extra = event
        .extra
        .into_iter()
        .filter(|(key, value)| ALLOWED_FIELDS.contains(&key.as_str()) && short_scalar(value))
        .collect();
    let exception = event
        .exception
        .values
        .into_iter()
        .map(|exception| Exception {
            ty: exception.ty,
            value: exception.value.as_deref().map(free_text),
            module: exception.module,
            stacktrace: exception.stacktrace.map(scrub_stacktrace),
            raw_stacktrace: None,
            thread_id: exception.thread_id,
            mechanism: exception.mechanism.map(|mechanism| Mechanism {
                ty: mechanism.ty,
                handled: mechanism.handled,
                synthetic: mechanism.synthetic,
                ..Mechanism::default()
            }),
        })
        .collect::<Vec<_>>();
    let breadcrumbs = event
        .breadcrumbs
        .values
        .into_iter()
        .map(scrub_breadcrumb)
        .collect::<Vec<_>>();
    Event {
        event_id: event.event_id,
        level: event.level,
        timestamp: event.timestamp,
        platform: event.platform,
        logger: event.logger,
        release: event.release,
        dist: event.dist,
        environment: event.environment,
        sdk: event.sdk,
        message: event.message.as_deref().map(free_text),
        fingerprint: event.fingerprint,
        tags,
        extra,
        contexts,
        exception: exception.into(),
        breadcrumbs: breadcrumbs.into(),
        ..Event::default()
    }
}

/// Stack frames without variables or source lines.
fn scrub_stacktrace(stacktrace: Stacktrace) -> Stacktrace {
    Stacktrace {
        frames: stacktrace
            .frames
            .into_iter()
            .map(|frame| Frame {
                function: frame.function,
                symbol: frame.symbol,
                module: frame.module,
                package: frame.package,
                filename: frame.filename,
                abs_path: frame.abs_path,
                lineno: frame.lineno,
                colno: frame.colno,
                in_app: frame.in_app,
                instruction_addr: frame.instruction_addr,
                ..Frame::default()
            })
            .collect(),
        ..Stacktrace::default()
    }
}

/// A breadcrumb with its free text cut and only allowed data.
pub fn scrub_breadcrumb(breadcrumb: Breadcrumb) -> Breadcrumb {
    Breadcrumb {
        timestamp: breadcrumb.timestamp,
        ty: breadcrumb.ty,
        category: breadcrumb.category,
        level: breadcrumb.level,
        message: breadcrumb.message.as_deref().map(free_text),
        data: breadcrumb
            .data
            .into_iter()
            .filter(|(key, value)| ALLOWED_FIELDS.contains(&key.as_str()) && short_scalar(value))
            .collect(),
    }
}

/// What the delivery thread does next.
enum Job {
    Send(Vec<u8>),
    Flush(SyncSender<()>),
}

/// Delivers envelopes to the DSN's envelope endpoint from one background
/// thread with its own runtime, so capturing never blocks the caller nor
/// depends on the service's runtime.
struct HttpTransport {
    jobs: Mutex<Option<SyncSender<Job>>>,
}

impl HttpTransport {
    fn new(options: &ClientOptions) -> HttpTransport {
        let (jobs, receiver) = sync_channel(QUEUE);
        let target = options.dsn.as_ref().map(|dsn| {
            (
                dsn.envelope_api_url().to_string(),
                dsn.to_auth(Some(&options.user_agent)).to_string(),
            )
        });
        let spawned = std::thread::Builder::new()
            .name("error-reporting".to_owned())
            .spawn(move || deliver(target, receiver));
        HttpTransport {
            jobs: Mutex::new(spawned.ok().map(|_| jobs)),
        }
    }

    fn sender(&self) -> Option<SyncSender<Job>> {
        self.jobs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone()
    }
}

/// The delivery loop: each envelope posted once, bounded; failures dropped
/// (never logged: a log line could report itself).
fn deliver(target: Option<(String, String)>, jobs: Receiver<Job>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    // The client is built inside the runtime it runs on.
    let client = runtime.as_ref().ok().and_then(|runtime| {
        let _entered = runtime.enter();
        reqwest::Client::builder()
            .timeout(SEND_TIMEOUT)
            .build()
            .ok()
    });
    let (Some((url, auth)), Ok(runtime), Some(client)) = (target, runtime, client) else {
        // Nothing can be delivered: answer flushes, drop envelopes.
        for job in jobs {
            if let Job::Flush(done) = job {
                let _ = done.send(());
            }
        }
        return;
    };
    for job in jobs {
        match job {
            Job::Send(body) => {
                // The request is built inside the runtime (its timeout is a
                // timer of that runtime).
                let _ = runtime.block_on(async {
                    client
                        .post(&url)
                        .header("X-Sentry-Auth", &auth)
                        .header(http::header::CONTENT_TYPE, "application/x-sentry-envelope")
                        .body(body)
                        .send()
                        .await
                });
            }
            Job::Flush(done) => {
                let _ = done.send(());
            }
        }
    }
}

impl Transport for HttpTransport {
    fn send_envelope(&self, envelope: Envelope) {
        let mut body = Vec::new();
        if envelope.to_writer(&mut body).is_err() {
            return;
        }
        if let Some(jobs) = self.sender() {
            // A full queue drops the envelope rather than block the caller.
            match jobs.try_send(Job::Send(body)) {
                Ok(()) | Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {}
            }
        }
    }

    fn flush(&self, timeout: Duration) -> bool {
        let Some(jobs) = self.sender() else {
            return true;
        };
        let (done, finished) = sync_channel(1);
        if jobs.send(Job::Flush(done)).is_err() {
            return false;
        }
        finished.recv_timeout(timeout).is_ok()
    }

    fn shutdown(&self, timeout: Duration) -> bool {
        let flushed = self.flush(timeout);
        self.jobs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        flushed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing_subscriber::prelude::*;

    /// The child half of the panic test: started with
    /// `CHATAIGNE_REPORTING_CHILD` set to a DSN, it starts reporting as a
    /// service does and panics inside a request's span, the panic message
    /// holding a canary after its first `: `.
    #[test]
    fn child_panics_inside_a_request() {
        let Ok(dsn) = std::env::var("CHATAIGNE_REPORTING_CHILD") else {
            return;
        };
        let config = SentryConfig {
            dsn: Some(SecretString::from(dsn)),
            environment: "panic-test".to_owned(),
        };
        let reporting = start("child", &config).unwrap();
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        use opentelemetry::trace::TracerProvider as _;
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")))
            .with(layer());
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("request", request_id = "req_panicking");
            let _entered = span.enter();
            let outcome = std::panic::catch_unwind(|| {
                let detail = "CNRYPANICZ";
                panic!("handler failed: {detail}");
            });
            assert!(outcome.is_err());
        });
        assert!(reporting.flush(Duration::from_secs(5)));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panic_is_reported_with_its_request_id_and_without_its_detail() {
        let received = Arc::new(Mutex::new(Vec::<String>::new()));
        let keep = received.clone();
        let app = axum::Router::new().route(
            "/api/{project}/envelope/",
            axum::routing::post(move |body: axum::body::Bytes| async move {
                keep.lock()
                    .unwrap()
                    .push(String::from_utf8_lossy(&body).into_owned());
                "{}"
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let exe = std::env::current_exe().unwrap();
        let output = tokio::task::spawn_blocking(move || {
            std::process::Command::new(exe)
                .args([
                    "--exact",
                    "error_reporting::tests::child_panics_inside_a_request",
                    "--test-threads=1",
                ])
                .env("CHATAIGNE_REPORTING_CHILD", format!("http://key@{addr}/1"))
                .output()
        })
        .await
        .unwrap()
        .unwrap();
        assert!(output.status.success(), "{output:?}");
        let bodies = received.lock().unwrap().clone();
        let body = bodies
            .iter()
            .find(|body| body.contains("req_panicking"))
            .unwrap_or_else(|| panic!("no panic report in {bodies:?}"));
        assert!(body.contains("\"type\":\"panic\""), "{body}");
        assert!(body.contains("handler failed"), "{body}");
        assert!(body.contains("\"environment\":\"panic-test\""), "{body}");
        assert!(body.contains("\"trace_id\""), "{body}");
        for body in &bodies {
            assert!(!body.contains("CNRYPANICZ"), "{body}");
        }
    }

    #[test]
    fn free_text_stops_at_the_first_colon() {
        assert_eq!(free_text("internal error"), "internal error");
        assert_eq!(
            free_text("called `Result::unwrap()` on an `Err` value: secret"),
            "called `Result::unwrap()` on an `Err` value"
        );
        assert_eq!(free_text(&"x".repeat(500)).len(), MAX_TEXT_CHARS);
    }

    #[test]
    fn a_dsn_that_does_not_parse_is_refused_naming_the_setting_not_the_value() {
        let config = SentryConfig {
            dsn: Some(SecretString::from("not a dsn SECRETVALUE")),
            ..SentryConfig::default()
        };
        let error = config.validate().unwrap_err().to_string();
        assert!(error.contains("CHATAIGNE_SENTRY__DSN"), "{error}");
        assert!(!error.contains("SECRETVALUE"), "{error}");
        assert!(SentryConfig::default().validate().is_ok());
    }

    #[test]
    fn scrub_keeps_only_the_allowlisted_parts_of_an_event() {
        let mut event = Event {
            message: Some("failed: CANARY1".to_owned()),
            ..Event::default()
        };
        event
            .extra
            .insert("tool".into(), Value::from("list_orders"));
        event
            .extra
            .insert("arguments".into(), Value::from("CANARY2"));
        event
            .extra
            .insert("code".into(), Value::from("x".repeat(100)));
        event.tags.insert("cursor".into(), "CANARY3".into());
        event.tags.insert("request_id".into(), "req_1".into());
        event.user = Some(sentry::User {
            email: Some("CANARY4".into()),
            ..sentry::User::default()
        });
        event.request = Some(sentry::protocol::Request {
            query_string: Some("token=CANARY5".into()),
            data: Some("CANARY6".into()),
            ..sentry::protocol::Request::default()
        });
        event.breadcrumbs.values.push(Breadcrumb {
            message: Some("read: CANARY7".into()),
            data: [("query".to_owned(), Value::from("CANARY8"))]
                .into_iter()
                .collect(),
            ..Breadcrumb::default()
        });
        event.contexts.insert(
            "Rust Tracing Fields".into(),
            Context::Other(
                [("password".to_owned(), Value::from("CANARY9"))]
                    .into_iter()
                    .collect(),
            ),
        );
        let scrubbed = scrub("gateway", event);
        let text = serde_json::to_string(&scrubbed).unwrap();
        assert!(!text.contains("CANARY"), "{text}");
        assert_eq!(scrubbed.message.as_deref(), Some("failed"));
        assert_eq!(
            scrubbed.extra.get("tool"),
            Some(&Value::from("list_orders"))
        );
        assert_eq!(scrubbed.extra.len(), 1, "a long value is dropped");
        assert_eq!(
            scrubbed.tags.get("request_id").map(String::as_str),
            Some("req_1")
        );
        assert_eq!(
            scrubbed.tags.get("service").map(String::as_str),
            Some("gateway")
        );
        assert!(scrubbed.user.is_none() && scrubbed.request.is_none());
        assert_eq!(
            scrubbed.breadcrumbs.values[0].message.as_deref(),
            Some("read")
        );
    }
}
