//! The MCP protocol over Streamable HTTP: transport rules, JSON-RPC, method
//! dispatch, the tools, the resources (the catalogue's MCP Apps views), the
//! per-profile result envelopes and the request log.

pub mod context;
pub mod guard;
pub mod handler;
pub mod params;
pub mod protocol;
pub mod request_log;
pub mod resources;
pub mod revision;
pub mod tools;
pub mod transport;
