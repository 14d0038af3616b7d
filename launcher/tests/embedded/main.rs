//! The embedded binary as a user runs it, one test binary: start-up and the
//! Python SDK against it (`embedded`), its administration commands
//! (`admin`), its sealed signing keys across
//! restarts (`embedded_signing_keys`), an MCP client signing in with OAuth
//! on its own (`oauth_sign_in`), SIGTERM with a call in flight
//! (`sigterm`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod admin;
mod embedded;
mod embedded_signing_keys;
mod oauth_sign_in;
mod sigterm;
