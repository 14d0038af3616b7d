//! The SQLite dialect of the store (embedded mode): WAL journal, foreign keys,
//! the statement bound as busy timeout, one never-recycled connection for an
//! in-memory database, and its migrations.

use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use chataigne_common::database::{Backend, DatabaseUrl};
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteQueryResult,
    SqliteSynchronous,
};

use super::dialect::Dialect;
use super::sql_store::SqlStore;
use crate::config::DatabaseConfig;

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

/// Store on a SQLite pool.
pub type SqliteStore = SqlStore<sqlx::Sqlite>;

impl Dialect for sqlx::Sqlite {
    const BACKEND: Backend = Backend::Sqlite;

    /// Opens (creating with `mode=rwc`) the database. An in-memory database
    /// lives in one connection that is never recycled.
    async fn connect(config: &DatabaseConfig, url: &DatabaseUrl) -> anyhow::Result<SqlitePool> {
        let in_memory = url.is_in_memory();
        let mut options = SqliteConnectOptions::from_str(config.url())
            .context("database.url is not a valid SQLite URL")?
            .foreign_keys(true)
            .busy_timeout(Duration::from_millis(config.statement_timeout_ms));
        if !in_memory {
            options = options
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal);
        }
        let mut pool = SqlitePoolOptions::new()
            .acquire_timeout(Duration::from_millis(config.connect_timeout_ms))
            .max_connections(config.max_connections);
        if in_memory {
            pool = pool
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None);
        }
        pool.connect_with(options)
            .await
            .context("opening the SQLite database")
    }

    async fn migrate(pool: &SqlitePool) -> Result<(), MigrateError> {
        MIGRATOR.run(pool).await
    }

    fn rows_affected(result: &SqliteQueryResult) -> u64 {
        result.rows_affected()
    }
}

#[cfg(test)]
mod tests {
    use chataigne_common::sql_error::SqlErrorKind;

    #[test]
    fn busy_and_locked_are_transient() {
        let is_transient_result_code = |code| SqlErrorKind::of_sqlite_code(code).is_transient();
        assert!(is_transient_result_code(5));
        assert!(is_transient_result_code(517));
        assert!(is_transient_result_code(6));
        assert!(!is_transient_result_code(19));
        assert!(!is_transient_result_code(2067));
    }
}
