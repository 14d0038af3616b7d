//! The tool-service's stores on both backends, through the `Store` trait:
//! the restaurant queries and their paging, accent- and case-folded search,
//! the venue settings and catalogue writes, activity rollups and guarded
//! status writes, and the generated data sets they load. One test binary,
//! one module per concern.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod activity;
mod demo_consistency;
mod search_folding;
mod seed;
mod suite;
mod venue;
