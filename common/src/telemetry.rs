//! Telemetry start-up: structured JSON logs (or compact text for a terminal),
//! filtered by `RUST_LOG` (default `info`).

use tracing_subscriber::{EnvFilter, fmt, prelude::*};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Json,
    Text,
}

/// Installs the global subscriber. Call once, from `main`.
pub fn init(service: &'static str, format: LogFormat) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let registry = tracing_subscriber::registry().with(filter);
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
    if result.is_ok() {
        tracing::info!(service, "telemetry started");
    }
}
