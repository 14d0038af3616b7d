//! The caller's deadline of a gRPC request (`grpc-timeout`), which bounds the
//! tool call and, through it, the store's work.

use std::time::Duration;

use tonic::Request;

use crate::tools::deadline::parse_grpc_timeout;

/// The `grpc-timeout` of `request`, when present and well-formed.
pub fn of<T>(request: &Request<T>) -> Option<Duration> {
    request
        .metadata()
        .get("grpc-timeout")
        .and_then(|value| value.to_str().ok())
        .and_then(parse_grpc_timeout)
}
