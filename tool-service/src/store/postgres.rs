//! The PostgreSQL store (production): a pool that fails fast when the server
//! is unreachable, with the statement timeout set on every connection and
//! shortened to the caller's remaining deadline while a call holds it.

use std::future::Future;
use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};

use super::search_columns::impl_backfill;
use super::sql::impl_store;
use super::{BoxedRead, StoreOptions};
use crate::domain::{Dependency, DomainError};

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// `Store` on PostgreSQL.
#[derive(Debug, Clone)]
pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// Connects to `url` (`postgres://…`). Fails within about
    /// `options.connect_timeout` when the server cannot be reached.
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<PgStore, DomainError> {
        let timeout_ms = options.statement_timeout.as_millis().max(1).to_string();
        let connect = PgConnectOptions::from_str(url)
            .map_err(|_| DomainError::Internal("invalid PostgreSQL URL".to_owned()))?
            .application_name("chataigne-tools")
            .options([("statement_timeout", timeout_ms)]);
        let pool_wide = options.statement_timeout;
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(options.connect_timeout)
            // The caller's deadline reaches every statement: a connection
            // taken within a call's deadline bounds its statements by what
            // remains of it, and is back to the pool-wide timeout once released.
            .after_connect(move |conn, _| Box::pin(bound_by_call_deadline(conn, pool_wide)))
            .before_acquire(move |conn, _| {
                Box::pin(async move {
                    bound_by_call_deadline(conn, pool_wide).await?;
                    Ok(true)
                })
            })
            .after_release(|conn, _| {
                Box::pin(async move {
                    sqlx::query("RESET statement_timeout").execute(conn).await?;
                    Ok(true)
                })
            })
            .connect_with(connect);
        let pool = tokio::time::timeout(options.connect_timeout, pool)
            .await
            .map_err(|_| {
                DomainError::Dependency(
                    Dependency::Database,
                    "PostgreSQL connection timed out".to_owned(),
                )
            })?
            .map_err(|error| {
                DomainError::Dependency(
                    Dependency::Database,
                    format!("PostgreSQL unreachable: {error}"),
                )
            })?;
        Ok(PgStore { pool })
    }

    /// The underlying pool, for work the `Store` trait does not cover.
    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// The server enforces the statement timeout; errors map to `DomainError`.
    pub(crate) async fn guard<T>(
        &self,
        query: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, DomainError> {
        query.await.map_err(DomainError::from)
    }

    /// Runs one read bounded by `timeout` in the database as well: inside a
    /// transaction whose `SET LOCAL statement_timeout` is the time
    /// left, so a read the caller gave up on is cancelled by the server
    /// instead of holding a connection (and its locks) until the pool-wide
    /// statement timeout.
    pub(crate) async fn bounded_read<T>(
        &self,
        timeout: Option<Duration>,
        read: impl for<'c> FnOnce(&'c mut PgConnection) -> BoxedRead<'c, T> + Send,
    ) -> Result<T, DomainError> {
        let work = async {
            let mut tx = self.pool.begin().await?;
            if let Some(limit) = timeout {
                set_local_statement_timeout(&mut tx, limit).await?;
            }
            let rows = read(&mut tx).await?;
            tx.commit().await?;
            Ok(rows)
        };
        self.guard(work).await
    }

    async fn run_migrations(&self) -> Result<(), DomainError> {
        MIGRATOR.run(&self.pool).await.map_err(|error| {
            DomainError::Internal(format!("PostgreSQL migration failed: {error}"))
        })?;
        self.backfill_search_columns().await
    }
}

/// Within a call's deadline (`tools::deadline`), bounds the statements of
/// the connection by what remains of it, when shorter than the pool-wide
/// timeout; outside a call, leaves the connection as it is.
async fn bound_by_call_deadline(
    conn: &mut PgConnection,
    pool_wide: Duration,
) -> Result<(), sqlx::Error> {
    let Some(remaining) = crate::tools::deadline::remaining() else {
        return Ok(());
    };
    if remaining >= pool_wide {
        return Ok(());
    }
    let ms = remaining.as_millis().clamp(1, i32::MAX as u128);
    sqlx::query(sqlx::AssertSqlSafe(format!("SET statement_timeout = {ms}")))
        .execute(conn)
        .await?;
    Ok(())
}

/// Bounds every later statement of the current transaction by `limit`
/// (`SET LOCAL`: back to the pool-wide timeout at its end).
pub(crate) async fn set_local_statement_timeout(
    tx: &mut PgConnection,
    limit: Duration,
) -> Result<(), sqlx::Error> {
    let ms = limit.as_millis().clamp(1, i32::MAX as u128);
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "SET LOCAL statement_timeout = {ms}"
    )))
    .execute(tx)
    .await?;
    Ok(())
}

impl_backfill!(PgStore);
impl_store!(PgStore, sqlx::Postgres);
