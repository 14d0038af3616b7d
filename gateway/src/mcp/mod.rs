//! The MCP protocol over Streamable HTTP: transport rules, JSON-RPC, method
//! dispatch, the tools, the per-profile result envelopes and the request log.

pub mod context;
pub mod guard;
pub mod handler;
pub mod params;
pub mod protocol;
pub mod request_log;
pub mod revision;
pub mod tools;
pub mod transport;
