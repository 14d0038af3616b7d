//! The gateway end to end against fake backends, one test binary: admission
//! at accept (`allowlist`, `connections`, `tls`), bearer checks and the 401
//! challenge (`auth`), MCP methods and envelopes (`mcp`), Streamable HTTP
//! rules (`transport`), limits (`rate_limits`), the backends' load shedding
//! (`overload`) and `config check` (`config_check`). The log capture, which
//! installs a process-wide subscriber, is a binary of its own (`logs.rs`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod allowlist;
mod answers;
mod auth;
mod config_check;
mod connections;
mod mcp;
mod overload;
mod rate_limits;
mod tls;
mod transport;
