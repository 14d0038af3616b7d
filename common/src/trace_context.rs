//! W3C trace context over gRPC: the client side injects the current span's
//! context into the request metadata (`traceparent`, `tracestate`); the server
//! side extracts it and makes it the parent of the request span, so one trace
//! runs gateway → auth-service → tool-service → auth-service. The request span
//! carries the service and the RPC path only, never a message field.

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

/// A `Server::trace_fn` for `service`: one info span per RPC named `grpc`,
/// with the service name and the RPC path, parented on the caller's trace
/// context when the request carries one.
pub fn server_span(service: &'static str) -> impl Fn(&http::Request<()>) -> tracing::Span + Clone {
    move |request: &http::Request<()>| {
        let span = tracing::info_span!(
            "grpc",
            service,
            rpc = %request.uri().path(),
        );
        let parent = TraceContextPropagator::new().extract(&HeaderExtractor(request.headers()));
        // Fails only when no OpenTelemetry layer is installed: nothing to link.
        let _ = span.set_parent(parent);
        span
    }
}
