//! The SQLite store (embedded mode): WAL, foreign keys, a busy timeout, the
//! file created when missing; `sqlite::memory:` runs on one shared connection
//! so every caller sees the same database.

use std::future::Future;
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};

use super::search_columns::impl_backfill;
use super::sql::impl_store;
use super::{BoxedRead, StoreOptions};
use crate::domain::{Dependency, DomainError};

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

/// `Store` on SQLite.
#[derive(Debug, Clone)]
pub struct SqliteStore {
    pool: SqlitePool,
    statement_timeout: Duration,
}

impl SqliteStore {
    /// Opens `url` (`sqlite://file.db`, `sqlite:file.db?mode=rwc` or
    /// `sqlite::memory:`), creating the file if it does not exist.
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<SqliteStore, DomainError> {
        let in_memory = url.contains(":memory:") || url.contains("mode=memory");
        let mut connect = SqliteConnectOptions::from_str(url)
            .map_err(|_| DomainError::Internal("invalid SQLite URL".to_owned()))?
            .foreign_keys(true)
            .busy_timeout(options.statement_timeout);
        let pool = if in_memory {
            // An in-memory database lives as long as its connection: keep one, forever.
            SqlitePoolOptions::new()
                .max_connections(1)
                .min_connections(1)
                .idle_timeout(None)
                .max_lifetime(None)
        } else {
            connect = connect
                .create_if_missing(true)
                .journal_mode(SqliteJournalMode::Wal)
                .synchronous(SqliteSynchronous::Normal);
            SqlitePoolOptions::new().max_connections(options.max_connections.max(1))
        };
        let pool = pool
            .acquire_timeout(options.connect_timeout)
            .connect_with(connect)
            .await
            .map_err(|error| {
                DomainError::Dependency(
                    Dependency::Database,
                    format!("SQLite open failed: {error}"),
                )
            })?;
        Ok(SqliteStore {
            pool,
            statement_timeout: options.statement_timeout,
        })
    }

    /// The underlying pool, for work the `Store` trait does not cover.
    pub fn pool(&self) -> &SqlitePool {
        &self.pool
    }

    /// SQLite has no server-side statement timeout: bound the call here.
    pub(crate) async fn guard<T>(
        &self,
        query: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, DomainError> {
        match tokio::time::timeout(self.statement_timeout, query).await {
            Ok(result) => result.map_err(DomainError::from),
            Err(_) => Err(DomainError::DeadlineExceeded),
        }
    }

    /// Runs one read on a pooled connection, bounded by `timeout` (or the
    /// statement timeout when shorter); the same shape as
    /// `PgStore::bounded_read`.
    pub(crate) async fn bounded_read<T>(
        &self,
        timeout: Option<Duration>,
        read: impl for<'c> FnOnce(&'c mut SqliteConnection) -> BoxedRead<'c, T> + Send,
    ) -> Result<T, DomainError> {
        let limit = timeout.map_or(self.statement_timeout, |t| t.min(self.statement_timeout));
        let work = async {
            let mut conn = self.pool.acquire().await?;
            read(&mut conn).await
        };
        match tokio::time::timeout(limit, work).await {
            Ok(result) => result.map_err(DomainError::from),
            Err(_) => Err(DomainError::DeadlineExceeded),
        }
    }

    async fn run_migrations(&self) -> Result<(), DomainError> {
        MIGRATOR
            .run(&self.pool)
            .await
            .map_err(|error| DomainError::Internal(format!("SQLite migration failed: {error}")))?;
        self.backfill_search_columns().await
    }
}

impl_backfill!(SqliteStore);
impl_store!(SqliteStore, sqlx::Sqlite);
