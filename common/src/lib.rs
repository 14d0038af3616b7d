//! Shared foundations of the Chataigne services: the one table of error codes
//! (and its gRPC encoding), layered configuration, telemetry start-up, the
//! gRPC health service, Prometheus metrics, the shutdown signal, the
//! database contract (configuration section, URL, error classes) and the
//! contracts between the services (status-detail keys, `Authorization`
//! parsing, the scope table).

pub mod assertion;
pub mod authorization;
pub mod balance;
pub mod breaker;
pub mod codes;
pub mod config;
pub mod config_check;
pub mod config_reference;
pub mod database;
pub mod demo;
pub mod embedded;
pub mod error_reporting;
#[cfg(any(test, feature = "testing"))]
mod eventually;
pub mod expiring;
pub mod grants;
pub mod grpc_deadline;
pub mod grpc_health;
pub mod grpc_reflection;
pub mod grpc_server;
pub mod hardening;
pub mod http_server;
pub mod jws;
pub mod metrics;
pub mod probe;
pub mod production;
pub mod redis_store;
pub mod scopes;
pub mod secrets;
pub mod shutdown;
pub mod sql_error;
pub mod startup;
pub mod status_details;
pub mod telemetry;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod tls;
pub mod trace_context;

pub use codes::{Category, ErrorCode};
