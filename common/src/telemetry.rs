//! Telemetry start-up: structured JSON logs (or compact text for a terminal),
//! filtered by `RUST_LOG` (default `info`), and OpenTelemetry traces exported
//! over OTLP (gRPC) only when `OTEL_EXPORTER_OTLP_ENDPOINT` is set; nothing is
//! exported otherwise. The exported service name is `OTEL_SERVICE_NAME`, else
//! the service's own name.

use std::sync::OnceLock;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_subscriber::{EnvFilter, fmt, prelude::*};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Json,
    Text,
}

static PROVIDER: OnceLock<SdkTracerProvider> = OnceLock::new();

/// The OTLP tracer provider when an endpoint is configured.
fn otlp_provider(service: &'static str) -> Option<SdkTracerProvider> {
    let configured = std::env::var("OTEL_EXPORTER_OTLP_ENDPOINT")
        .is_ok_and(|endpoint| !endpoint.trim().is_empty());
    if !configured {
        return None;
    }
    // The exporter reads the endpoint (and headers, timeout) from the
    // standard OTEL_EXPORTER_OTLP_* variables.
    let exporter = match opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .build()
    {
        Ok(exporter) => exporter,
        Err(error) => {
            eprintln!("OTLP exporter not started: {error}");
            return None;
        }
    };
    let name = std::env::var("OTEL_SERVICE_NAME")
        .ok()
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| service.to_owned());
    Some(
        SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(Resource::builder().with_service_name(name).build())
            .build(),
    )
}

/// Installs the global subscriber. Call once, from `main`.
pub fn init(service: &'static str, format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let provider = otlp_provider(service);
    let traces = provider.as_ref().map(|provider| {
        opentelemetry::global::set_tracer_provider(provider.clone());
        tracing_opentelemetry::layer().with_tracer(provider.tracer(service))
    });
    let registry = tracing_subscriber::registry().with(filter).with(traces);
    let result = match format {
        LogFormat::Json => registry
            .with(
                fmt::layer()
                    .json()
                    .flatten_event(true)
                    .with_current_span(false),
            )
            .try_init(),
        LogFormat::Text => registry
            .with(fmt::layer().compact().with_writer(std::io::stderr))
            .try_init(),
    };
    if let Some(provider) = provider {
        let _ = PROVIDER.set(provider);
    }
    if result.is_ok() {
        tracing::info!(service, "telemetry started");
    }
}

/// Flushes and stops the trace exporter, if one was started. Call once, after
/// the service has stopped.
pub fn shutdown() {
    if let Some(provider) = PROVIDER.get()
        && let Err(error) = provider.shutdown()
    {
        tracing::warn!(%error, "trace exporter shutdown");
    }
}
