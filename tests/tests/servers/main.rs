//! The servers' life cycle and foundations: graceful shutdown, the public
//! and internal server stacks, and gRPC health. One test binary, one module
//! per concern.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod graceful_shutdown;
mod grpc_health;
mod stacks;
