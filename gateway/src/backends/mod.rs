//! The gRPC backends behind the gateway: the auth-service and tool-service
//! clients, the cached tool catalogue and one tool call over the wire.

pub mod call;
pub mod catalog;
pub mod clients;

pub use clients::Backends;
