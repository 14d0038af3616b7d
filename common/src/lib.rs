//! Shared foundations of the Chataigne services: the one table of error codes
//! (and its gRPC encoding), layered configuration, telemetry start-up and the
//! shutdown signal.

pub mod codes;
pub mod config;
pub mod demo;
pub mod scopes;
pub mod shutdown;
pub mod telemetry;
pub mod testing;

pub use codes::{Category, ErrorCode};
