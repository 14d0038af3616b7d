//! The wire vocabulary every layer above speaks: JSON-RPC messages and their
//! error objects, the MCP method names (parsed once), the nesting bound of a
//! JSON document, and the envelope of a tool's outcome for each client
//! profile (the one place). Nothing here knows the gateway's state.

pub mod envelope;
pub mod json_depth;
pub mod jsonrpc;
pub mod method;
