//! The tool catalogue's rules and guarantees: the declarations' lint, labels
//! and stated limits matching what the code enforces, and the write switch
//! gating every write. One test binary, one module per concern
//! (`activity_privacy` stays a binary of its own: it installs the process's
//! global log subscriber).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod catalog_lint;
mod listing;
mod opening_hours;
mod output_labels;
mod stated_limits;
mod write_gate;
