//! Connection settings shared by both store backends.

use std::time::Duration;

/// How a store connects: pool size and the time bounds of connecting and of
/// each statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreOptions {
    /// Upper bound of the connection pool (SQLite in memory always uses one).
    pub max_connections: u32,
    /// How long connecting, or waiting for a pooled connection, may take.
    pub connect_timeout: Duration,
    /// How long one statement may run before it is cancelled.
    pub statement_timeout: Duration,
}

impl Default for StoreOptions {
    fn default() -> Self {
        StoreOptions {
            max_connections: 10,
            connect_timeout: Duration::from_secs(3),
            statement_timeout: Duration::from_secs(15),
        }
    }
}
