//! W3C trace context over gRPC: the client side injects the current span's
//! context into the request metadata (`traceparent`, `tracestate`); the server
//! side extracts it and makes it the parent of the request span, so one trace
//! runs gateway → auth-service → tool-service → auth-service. The request span
//! follows the RPC semantic conventions and carries the service, the RPC's
//! names and its status only, never a message field.

use opentelemetry::propagation::{Extractor, Injector, TextMapPropagator};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};
use tracing_opentelemetry::OpenTelemetrySpanExt;

struct MetadataInjector<'a>(&'a mut MetadataMap);

impl Injector for MetadataInjector<'_> {
    fn set(&mut self, key: &str, value: String) {
        if let (Ok(key), Ok(value)) = (
            MetadataKey::from_bytes(key.as_bytes()),
            MetadataValue::try_from(value.as_str()),
        ) {
            self.0.insert(key, value);
        }
    }
}

struct HeaderExtractor<'a>(&'a http::HeaderMap);

impl Extractor for HeaderExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).and_then(|value| value.to_str().ok())
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(http::HeaderName::as_str).collect()
    }
}

/// Writes the current span's trace context into outgoing gRPC metadata.
/// Nothing is written when there is no sampled or remote context.
pub fn inject(metadata: &mut MetadataMap) {
    let context = tracing::Span::current().context();
    TraceContextPropagator::new().inject_context(&context, &mut MetadataInjector(metadata));
}

/// `(rpc.service, rpc.method)` of a gRPC path `/<package.Service>/<Method>`;
/// anything else (or an unreasonably long name) is `unknown`, since the
/// path is the caller's.
fn rpc_names(path: &str) -> (&str, &str) {
    let bounded = |name: &str| {
        !name.is_empty()
            && name.len() <= 128
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_')
    };
    match path.strip_prefix('/').and_then(|rest| rest.split_once('/')) {
        Some((service, method)) if bounded(service) && bounded(method) => (service, method),
        _ => ("unknown", "unknown"),
    }
}

/// The standard gRPC health service, whose checks are probes.
const HEALTH_SERVICE: &str = "grpc.health.v1.Health";

/// A `Server::trace_fn` for `service`: one info span per RPC (a debug one
/// for the health service's probes, not exported by default) following the
/// OpenTelemetry RPC semantic conventions — named `<rpc.service>/<rpc.method>`
/// (e.g. `chataigne.auth.v1.AuthService/Authenticate`), kind server,
/// `rpc.system` `grpc`, `rpc.service`, `rpc.method`, and once the call is
/// answered ([`record_outcome`]) `rpc.grpc.status_code`, `error.type` and an
/// error status for server faults — plus the Chataigne service name and the
/// gateway's `request_id` (`x-request-id` metadata) when present. It is
/// parented on the caller's trace context when the request carries one.
pub fn server_span(service: &'static str) -> impl Fn(&http::Request<()>) -> tracing::Span + Clone {
    move |request: &http::Request<()>| {
        let (rpc_service, rpc_method) = rpc_names(request.uri().path());
        // The gateway's request id (`x-request-id` metadata), when it looks
        // like one: it joins the RPC's logs and error reports to the call.
        let request_id = request
            .headers()
            .get("x-request-id")
            .and_then(|value| value.to_str().ok())
            .filter(|id| {
                id.len() <= 64
                    && id
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
            });
        let span = if rpc_service == HEALTH_SERVICE {
            // Health checks (the breakers' and readiness probes, several a
            // second per idle stack) are not exported at the default `info`
            // level; `RUST_LOG=debug` shows them.
            tracing::debug_span!(
                "grpc",
                otel.name = %format!("{rpc_service}/{rpc_method}"),
                otel.kind = "server",
                otel.status_code = tracing::field::Empty,
                rpc.system = "grpc",
                rpc.service = rpc_service,
                rpc.method = rpc_method,
                rpc.grpc.status_code = tracing::field::Empty,
                error.type = tracing::field::Empty,
                service,
            )
        } else {
            tracing::info_span!(
                "grpc",
                otel.name = %format!("{rpc_service}/{rpc_method}"),
                otel.kind = "server",
                otel.status_code = tracing::field::Empty,
                rpc.system = "grpc",
                rpc.service = rpc_service,
                rpc.method = rpc_method,
                rpc.grpc.status_code = tracing::field::Empty,
                error.type = tracing::field::Empty,
                service,
                request_id,
            )
        };
        let parent = TraceContextPropagator::new().extract(&HeaderExtractor(request.headers()));
        // Fails only when no OpenTelemetry layer is installed: nothing to link.
        let _ = span.set_parent(parent);
        span
    }
}

/// The fields of a W3C trace context received outside HTTP headers.
struct FieldExtractor<'a> {
    traceparent: &'a str,
    tracestate: Option<&'a str>,
}

impl Extractor for FieldExtractor<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(self.traceparent),
            "tracestate" => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

/// Makes `span` continue the trace of a caller's W3C trace context (e.g.
/// from an MCP request's `_meta`); a malformed `traceparent` is ignored and
/// the span stays the root of its own trace.
pub fn continue_trace(span: &tracing::Span, traceparent: &str, tracestate: Option<&str>) {
    let parent = TraceContextPropagator::new().extract(&FieldExtractor {
        traceparent,
        tracestate,
    });
    use opentelemetry::trace::TraceContextExt as _;
    if parent.span().span_context().is_valid() {
        // Fails only when no OpenTelemetry layer is installed: nothing to link.
        let _ = span.set_parent(parent);
    }
}

/// Whether a gRPC status code is a fault of the server (an error status on
/// its span); the others are the caller's (RPC semantic conventions).
fn server_fault(code: tonic::Code) -> bool {
    matches!(
        code,
        tonic::Code::Unknown
            | tonic::Code::DeadlineExceeded
            | tonic::Code::Unimplemented
            | tonic::Code::Internal
            | tonic::Code::Unavailable
            | tonic::Code::DataLoss
    )
}

/// Records how the RPC being served was answered on its span (the current
/// one): `outcome` is `ok` or a code of the error table, whose gRPC status
/// code becomes `rpc.grpc.status_code` and which becomes `error.type`.
pub fn record_outcome(outcome: &str) {
    let span = tracing::Span::current();
    if outcome == "ok" {
        span.record("rpc.grpc.status_code", tonic::Code::Ok as i64);
        return;
    }
    let code =
        crate::ErrorCode::parse(outcome).map_or(tonic::Code::Unknown, |code| code.grpc_code());
    span.record("rpc.grpc.status_code", code as i64);
    span.record("error.type", outcome);
    if server_fault(code) {
        span.record("otel.status_code", "error");
    }
}

/// An HTTP server span following the OpenTelemetry semantic conventions,
/// named `{method} {route}`: `http.request.method` (a standard method, or
/// `_OTHER`), `http.route` (the route template; `unmatched` when none) and,
/// once answered ([`record_http_status`]), `http.response.status_code` and
/// an error status on 5xx. No URL, query or header is recorded. Used for the
/// auth-service's authorization-server requests (the gateway's request span
/// also carries the MCP attributes and lives in the gateway).
pub fn http_server_span(method: &http::Method, route: Option<&str>) -> tracing::Span {
    let method = match method.as_str() {
        known @ ("GET" | "POST" | "PUT" | "DELETE" | "HEAD" | "OPTIONS" | "PATCH" | "CONNECT"
        | "TRACE") => known,
        _ => "_OTHER",
    };
    let route = route.unwrap_or("unmatched");
    tracing::info_span!(
        "http",
        otel.name = %format!("{method} {route}"),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = method,
        http.route = route,
        http.response.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
    )
}

/// Records the response status on a span of [`http_server_span`].
pub fn record_http_status(span: &tracing::Span, status: http::StatusCode) {
    span.record("http.response.status_code", i64::from(status.as_u16()));
    if status.is_server_error() {
        span.record("otel.status_code", "error");
        span.record("error.type", status.as_str());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn health_probe_spans_are_not_exported_at_the_default_level() {
        use tracing_subscriber::prelude::*;
        let subscriber =
            tracing_subscriber::registry().with(tracing_subscriber::filter::LevelFilter::INFO);
        tracing::subscriber::with_default(subscriber, || {
            let span_of = |path: &str| {
                let request = http::Request::builder().uri(path).body(()).unwrap();
                server_span("tool-service")(&request)
            };
            assert!(span_of("/grpc.health.v1.Health/Check").is_disabled());
            assert!(span_of("/grpc.health.v1.Health/Watch").is_disabled());
            assert!(!span_of("/chataigne.tools.v1.CatalogService/CallTool").is_disabled());
        });
    }

    #[test]
    fn rpc_names_come_from_the_path_and_stay_bounded() {
        assert_eq!(
            rpc_names("/chataigne.auth.v1.AuthService/Authenticate"),
            ("chataigne.auth.v1.AuthService", "Authenticate")
        );
        assert_eq!(rpc_names("/x/y/z"), ("unknown", "unknown"));
        assert_eq!(rpc_names("/a b/c"), ("unknown", "unknown"));
        assert_eq!(
            rpc_names(&format!("/{}/m", "s".repeat(200))),
            ("unknown", "unknown")
        );
        assert_eq!(rpc_names("no-slash"), ("unknown", "unknown"));
    }

    #[test]
    fn only_server_faults_are_errors() {
        assert!(server_fault(tonic::Code::Unavailable));
        assert!(!server_fault(tonic::Code::PermissionDenied));
        assert!(!server_fault(tonic::Code::InvalidArgument));
    }
}
