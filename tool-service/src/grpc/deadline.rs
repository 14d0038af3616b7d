//! The deadline of a gRPC request (the caller's `grpc-timeout` or the
//! server's cap, counted from its arrival), which bounds the tool call and,
//! through it, the store's work.

use chataigne_common::grpc_deadline::{CallDeadline, CallEffect, Effect, parse_grpc_timeout};
use tokio::time::Instant;
use tonic::Request;

use crate::tools::ToolKind;

/// The deadline of `request`: the one the server's deadline layer handed
/// over, else (a service called without the declared stack) its
/// `grpc-timeout` from now, when present and well-formed.
pub fn of<T>(request: &Request<T>) -> Option<Instant> {
    CallDeadline::of(request).or_else(|| {
        request
            .metadata()
            .get("grpc-timeout")
            .and_then(|value| value.to_str().ok())
            .and_then(parse_grpc_timeout)
            .map(|timeout| Instant::now() + timeout)
    })
}

/// Tells the server's deadline layer that the work of `request` starts, as
/// a tool of `kind`: should the layer have to answer at the deadline itself,
/// a write's outcome is then unknown.
pub fn starts<T>(request: &Request<T>, kind: ToolKind) {
    if let Some(effect) = CallEffect::of(request) {
        effect.started(match kind {
            ToolKind::Read => Effect::Reads,
            ToolKind::Write => Effect::MayWrite,
        });
    }
}
