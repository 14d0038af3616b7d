//! The auth-service behaviour suite: every case runs against the real gRPC
//! and HTTP servers on a SQLite database and on a PostgreSQL database.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod answers;
mod authenticate;
mod authorize;
mod cleanup;
mod http;
mod key_state;
mod keys_at_rest;
mod lifecycle;
mod limits;
mod live_grants;
mod oauth;
mod oauth_support;
mod operator;
mod operator_accounts;
mod pages;
mod refresh_csrf;
mod resolve;
mod third_party;
