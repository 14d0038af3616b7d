//! The PostgreSQL backend (production): a pool that fails fast when the
//! server is unreachable, with the pool-wide statement timeout on every
//! connection, shortened to the caller's remaining deadline while a call
//! holds it; idempotent writes under a transaction-scoped advisory lock.
//!
//! Taking a connection costs one round trip, as sqlx's own liveness check
//! did: one statement checks the connection and, in the same trip, sets its
//! statement timeout only when the one in force differs materially from the
//! wanted one (a call's remaining deadline, or the pool-wide timeout outside
//! a call). Nothing runs when a connection goes back to the pool: a short
//! timeout it keeps is replaced by the next call that takes it, before any
//! statement of that call.

use std::str::FromStr;
use std::time::Duration;

use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPool, PgPoolOptions};
use sqlx::{Pool, Postgres, Transaction};

use super::backend::{Backend, BoxedRead};
use super::sql_store::SqlStore;
use super::writes::CancelOnDrop;
use super::{StoreOptions, writes};
use crate::domain::{Bucket, Dependency, DomainError};

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// `Store` on PostgreSQL.
pub type PgStore = SqlStore<Postgres>;

/// Checks the connection and, in the same round trip, sets its statement
/// timeout to `$1` ms unless the one in force is within `[$1, $2]` ms.
const BOUND_STATEMENTS: &str = "SELECT CASE WHEN t.in_force BETWEEN $1::int8 AND $2::int8 \
     THEN NULL ELSE set_config('statement_timeout', $1::int8::text, false) END \
     FROM (SELECT (extract(epoch FROM current_setting('statement_timeout')::interval) \
     * 1000)::int8 AS in_force) AS t";

/// How much longer than wanted a statement timeout in force may be and
/// still be kept: at most this, and at most a sixteenth of the wanted one.
const TIMEOUT_SLACK: Duration = Duration::from_millis(250);

impl Backend for Postgres {
    const MAX_PARAMS: usize = 65_535;

    type Limits = ();

    /// Connects to `url` (`postgres://…`).
    async fn connect(url: &str, options: &StoreOptions) -> Result<(PgPool, ()), DomainError> {
        let pool_wide = options.statement_timeout;
        let timeout_ms = pool_wide.as_millis().max(1).to_string();
        let connect = PgConnectOptions::from_str(url)
            .map_err(|_| DomainError::Internal("invalid PostgreSQL URL".to_owned()))?
            .application_name("chataigne-tools")
            .options([("statement_timeout", timeout_ms)]);
        let pool = PgPoolOptions::new()
            .max_connections(options.max_connections.max(1))
            .acquire_timeout(options.connect_timeout)
            // The caller's deadline reaches every statement: a connection
            // taken within a call's deadline bounds its statements by what
            // remains of it; outside a call, by the pool-wide timeout. The
            // statement that does so also checks the connection, in place
            // of sqlx's own check. A connection checked and ready is
            // recorded as handed to the call (see `grpc::connection_handed`).
            .test_before_acquire(false)
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if crate::tools::deadline::remaining().is_some_and(|left| left < pool_wide) {
                        bound_statements(conn, pool_wide).await?;
                    }
                    crate::grpc::connection_handed();
                    Ok(())
                })
            })
            .before_acquire(move |conn, _| {
                Box::pin(async move {
                    bound_statements(conn, pool_wide).await?;
                    crate::grpc::connection_handed();
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
        Ok((pool, ()))
    }

    /// The server enforces the statement timeout.
    async fn guard<T: Send>(
        _: &(),
        query: impl Future<Output = Result<T, sqlx::Error>> + Send,
    ) -> Result<T, DomainError> {
        query.await.map_err(DomainError::from)
    }

    /// Inside a transaction whose `SET LOCAL statement_timeout` is the time
    /// left, so a read the caller gave up on is cancelled by the server
    /// instead of holding a connection (and its locks) until the pool-wide
    /// statement timeout.
    async fn bounded_read<T: Send>(
        pool: &PgPool,
        _: &(),
        timeout: Option<Duration>,
        read: impl for<'c> FnOnce(&'c mut PgConnection) -> BoxedRead<'c, T> + Send,
    ) -> Result<T, DomainError> {
        let work = async {
            let mut tx = pool.begin().await?;
            if let Some(limit) = timeout {
                set_local_statement_timeout(&mut tx, limit).await?;
            }
            let rows = read(&mut tx).await?;
            tx.commit().await?;
            Ok::<_, sqlx::Error>(rows)
        };
        work.await.map_err(DomainError::from)
    }

    async fn run_migrations(pool: &PgPool) -> Result<(), DomainError> {
        MIGRATOR
            .run(pool)
            .await
            .map_err(|error| DomainError::Internal(format!("PostgreSQL migration failed: {error}")))
    }

    /// The transaction's statements are bounded by `timeout` (`SET LOCAL`);
    /// a duplicate running elsewhere holds the key's advisory lock and is
    /// reported as in progress instead of waited for.
    async fn begin_write(
        pool: &Pool<Postgres>,
        key_hash: &str,
        timeout: Option<Duration>,
    ) -> Result<(Transaction<'static, Postgres>, CancelOnDrop), DomainError> {
        let mut tx = pool.begin().await?;
        let cancel = writes::cancel_own_transaction(pool, &mut tx).await?;
        if let Some(limit) = timeout {
            set_local_statement_timeout(&mut tx, limit).await?;
        }
        let (locked,): (bool,) = sqlx::query_as("SELECT pg_try_advisory_xact_lock($1)")
            .bind(writes::lock_id(key_hash))
            .fetch_one(&mut *tx)
            .await?;
        if !locked {
            cancel.disarm();
            return Err(DomainError::OperationInProgress {
                retry_after: Duration::from_secs(1),
            });
        }
        Ok((tx, cancel))
    }

    fn bucket_start(bucket: Bucket) -> &'static str {
        match bucket {
            Bucket::Day => "local_date",
            Bucket::Week => {
                "to_char(date_trunc('week', CAST(local_date AS timestamp)), 'YYYY-MM-DD')"
            }
            Bucket::Month => {
                "to_char(date_trunc('month', CAST(local_date AS timestamp)), 'YYYY-MM-DD')"
            }
        }
    }
}

/// Bounds the statements of `conn` by what remains of the current call's
/// deadline (`tools::deadline`) when shorter than the pool-wide timeout, by
/// the pool-wide timeout otherwise; sets it only when the one in force
/// differs materially (see [`BOUND_STATEMENTS`]).
async fn bound_statements(conn: &mut PgConnection, pool_wide: Duration) -> Result<(), sqlx::Error> {
    let wanted = crate::tools::deadline::remaining().map_or(pool_wide, |left| left.min(pool_wide));
    let wanted_ms = millis(wanted);
    let slack_ms = millis(TIMEOUT_SLACK.min(wanted / 16));
    sqlx::query(BOUND_STATEMENTS)
        .bind(wanted_ms)
        .bind(wanted_ms.saturating_add(slack_ms))
        .execute(conn)
        .await?;
    Ok(())
}

/// `limit` in whole milliseconds, at least one, within PostgreSQL's range.
fn millis(limit: Duration) -> i64 {
    limit.as_millis().clamp(1, i32::MAX as u128) as i64
}

/// Bounds every later statement of the current transaction by `limit`
/// (`SET LOCAL`: back to the session's timeout at its end).
pub(crate) async fn set_local_statement_timeout(
    tx: &mut PgConnection,
    limit: Duration,
) -> Result<(), sqlx::Error> {
    let ms = millis(limit);
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "SET LOCAL statement_timeout = {ms}"
    )))
    .execute(tx)
    .await?;
    Ok(())
}
