//! The protocol revisions side by side: `/mcp/v2` speaking MCP 2026-07-28
//! over the same catalogue, limits and live authorization as `/mcp/v1`, and
//! `/mcp/v1` frozen by golden files. One test binary, one module per concern.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod frozen_v1;
mod modern_wire;
