//! The SQLite backend (embedded mode): WAL, foreign keys, a busy timeout, the
//! file created when missing; `sqlite::memory:` runs on one shared connection
//! so every caller sees the same database. SQLite has no server-side
//! statement timeout: the store bounds each call itself.

use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteConnection, SqliteJournalMode, SqlitePool, SqlitePoolOptions,
    SqliteSynchronous,
};
use sqlx::{Sqlite, Transaction};

use super::StoreOptions;
use super::backend::{Backend, BoxedRead};
use super::sql_store::SqlStore;
use super::writes::CancelOnDrop;
use crate::domain::{Bucket, Dependency, DomainError};

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/sqlite");

/// `Store` on SQLite.
pub type SqliteStore = SqlStore<Sqlite>;

impl Backend for Sqlite {
    const MAX_PARAMS: usize = 32_766;

    /// The statement timeout, enforced around each call.
    type Limits = Duration;

    /// Opens `url` (`sqlite://file.db`, `sqlite:file.db?mode=rwc` or
    /// `sqlite::memory:`), creating the file if it does not exist.
    async fn connect(
        url: &str,
        options: &StoreOptions,
    ) -> Result<(SqlitePool, Duration), DomainError> {
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
        // A connection ready for the call is recorded as handed to it (see
        // `grpc::connection_handed`).
        let pool = pool
            .after_connect(|_, _| {
                Box::pin(async {
                    crate::grpc::connection_handed();
                    Ok(())
                })
            })
            .before_acquire(|_, _| {
                Box::pin(async {
                    crate::grpc::connection_handed();
                    Ok(true)
                })
            })
            .acquire_timeout(options.connect_timeout)
            .connect_with(connect)
            .await
            .map_err(|error| {
                DomainError::Dependency(
                    Dependency::Database,
                    format!("SQLite open failed: {error}"),
                )
            })?;
        Ok((pool, options.statement_timeout))
    }

    /// Bounds the call here, by the statement timeout.
    async fn guard<T: Send>(
        statement_timeout: &Duration,
        query: impl Future<Output = Result<T, sqlx::Error>> + Send,
    ) -> Result<T, DomainError> {
        match tokio::time::timeout(*statement_timeout, query).await {
            Ok(result) => result.map_err(DomainError::from),
            Err(_) => Err(DomainError::DeadlineExceeded),
        }
    }

    /// On a pooled connection, bounded by `timeout` (or the statement
    /// timeout when shorter).
    async fn bounded_read<T: Send>(
        pool: &SqlitePool,
        statement_timeout: &Duration,
        timeout: Option<Duration>,
        read: impl for<'c> FnOnce(&'c mut SqliteConnection) -> BoxedRead<'c, T> + Send,
    ) -> Result<T, DomainError> {
        let limit = timeout.map_or(*statement_timeout, |t| t.min(*statement_timeout));
        let work = async {
            let mut conn = pool.acquire().await?;
            read(&mut conn).await
        };
        match tokio::time::timeout(limit, work).await {
            Ok(result) => result.map_err(DomainError::from),
            Err(_) => Err(DomainError::DeadlineExceeded),
        }
    }

    async fn run_migrations(pool: &SqlitePool) -> Result<(), DomainError> {
        MIGRATOR
            .run(pool)
            .await
            .map_err(|error| DomainError::Internal(format!("SQLite migration failed: {error}")))
    }

    /// `BEGIN IMMEDIATE`: one writer at a time, waiting up to the busy
    /// timeout; the caller's timeout bounds the whole write.
    async fn begin_write(
        pool: &SqlitePool,
        _key_hash: &str,
        _timeout: Option<Duration>,
    ) -> Result<(Transaction<'static, Sqlite>, CancelOnDrop), DomainError> {
        Ok((
            pool.begin_with("BEGIN IMMEDIATE").await?,
            CancelOnDrop::none(),
        ))
    }

    fn bucket_start(bucket: Bucket) -> &'static str {
        match bucket {
            Bucket::Day => "local_date",
            // The Monday on or before the date.
            Bucket::Week => "date(local_date, 'weekday 0', '-6 days')",
            Bucket::Month => "strftime('%Y-%m-01', local_date)",
        }
    }
}
