//! Operating the gateway: Prometheus counters, the request span and its
//! OpenTelemetry attributes, request ids and the circuit breakers.

pub mod breaker;
pub mod counters;
pub mod http_telemetry;
pub mod request_id;
