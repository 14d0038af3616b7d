//! The MCP Streamable HTTP edge of Chataigne: transport rules, bearer-token
//! authentication against the auth-service, JSON-RPC to gRPC translation for
//! the tool-service, and the per-profile result envelopes.
//!
//! Library first: [`run`] serves a [`Config`] on two bound [`Listeners`]
//! (public MCP endpoints behind the source-address allowlist; internal health
//! and readiness).

mod access;
mod backends;
pub mod config;
mod edge;
mod endpoints;
mod error;
mod mcp;
mod ops;
mod reply;
mod server;
mod state;
mod stores;
mod wire;

pub use config::{
    Allowlist, Config, ConnectionLimits, Deadlines, EndpointConfig, GOOGLE_EGRESS_CIDRS,
    Http2Limits, Profile, RateLimits, RedisConfig, Revision,
};
pub use server::{Listeners, run};
