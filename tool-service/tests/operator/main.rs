//! The tool-service binary's operator subcommands, one test binary:
//! `migrate`, `seed` and `config check` (`ops_commands`), the write switch
//! (`write_switch_cli`).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../support/mod.rs"]
mod support;

mod ops_commands;
mod write_switch_cli;
