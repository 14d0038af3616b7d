//! The MCP Streamable HTTP edge of Chataigne: transport rules, bearer-token
//! authentication against the auth-service, JSON-RPC to gRPC translation for
//! the tool-service, and the per-profile result envelopes.
//!
//! Library first: [`run`] serves a [`Config`] on two bound [`Listeners`]
//! (public MCP endpoints behind the source-address allowlist; internal health
//! and readiness).

mod allowlist;
mod auth;
mod backends;
mod call;
mod catalog;
pub mod config;
mod counters;
mod endpoints;
mod envelope;
mod error;
mod guard;
mod handler;
mod health;
mod http_telemetry;
mod initialize;
mod json_depth;
mod jsonrpc;
mod listener;
mod metadata;
mod methods;
mod rate_limit;
mod redis_conn;
mod reply;
mod request_id;
mod request_log;
mod server;
mod stack;
mod state;
mod store_config;
mod tls;
mod tools;
mod transport;

pub use config::{
    Allowlist, Config, ConnectionLimits, Deadlines, EndpointConfig, GOOGLE_EGRESS_CIDRS,
    Http2Limits, IdempotencyConfig, Profile, RateLimits, RedisConfig,
};
pub use initialize::{INSTRUCTIONS, SUPPORTED_VERSIONS};
pub use server::{Listeners, run};
