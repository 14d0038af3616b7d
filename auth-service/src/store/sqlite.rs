//! The SQLite store (embedded mode): WAL journal, foreign keys, busy timeout,
//! error classification by result code, and the shared SQL implementation.

use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};

use super::StoreError;
use super::admin::impl_admin_store;
use super::oauth_impl::impl_oauth_store;
use super::sql_store::impl_sql_store;
use crate::config::DatabaseConfig;

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

/// Store on a SQLite pool.
#[derive(Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
}

impl SqliteStore {
    /// Opens (creating with `mode=rwc`) the database. An in-memory database
    /// lives in one connection that is never recycled.
    pub async fn connect(config: &DatabaseConfig) -> anyhow::Result<SqliteStore> {
        let url = config.url();
        let in_memory = url.contains(":memory:") || url.contains("mode=memory");
        let mut options = SqliteConnectOptions::from_str(url)
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
        let pool = pool
            .connect_with(options)
            .await
            .context("opening the SQLite database")?;
        Ok(SqliteStore { pool })
    }

    fn migrator() -> &'static Migrator {
        &MIGRATOR
    }

    fn db_error(error: sqlx::Error) -> StoreError {
        let transient = match &error {
            sqlx::Error::Database(db) => db
                .code()
                .and_then(|code| code.parse::<i64>().ok())
                .is_some_and(is_transient_result_code),
            other => super::connect::is_transient(other),
        };
        if transient {
            StoreError::Unavailable(error.to_string())
        } else {
            StoreError::Failed(error.to_string())
        }
    }
}

/// `SQLITE_BUSY` and `SQLITE_LOCKED`, including their extended codes.
fn is_transient_result_code(code: i64) -> bool {
    matches!(code & 0xff, 5 | 6)
}

impl_sql_store!(SqliteStore);
impl_oauth_store!(SqliteStore);
impl_admin_store!(SqliteStore);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_and_locked_are_transient() {
        assert!(is_transient_result_code(5));
        assert!(is_transient_result_code(517));
        assert!(is_transient_result_code(6));
        assert!(!is_transient_result_code(19));
        assert!(!is_transient_result_code(2067));
    }
}
