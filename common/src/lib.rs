//! Shared foundations of the Chataigne services: the one table of error codes
//! (and its gRPC encoding), layered configuration, telemetry start-up, the
//! gRPC health service, Prometheus metrics and the shutdown signal.

pub mod balance;
pub mod codes;
pub mod config;
pub mod demo;
pub mod grants;
pub mod grpc_health;
pub mod grpc_server;
pub mod http_server;
pub mod metrics;
pub mod scopes;
pub mod shutdown;
pub mod telemetry;
pub mod testing;
pub mod tls;
pub mod trace_context;

pub use codes::{Category, ErrorCode};
