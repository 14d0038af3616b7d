//! The PostgreSQL dialect of the store: connection with fail-fast timeouts
//! and a server-side statement timeout, and its migrations.

use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use chataigne_common::database::{Backend, DatabaseUrl};
use sqlx::migrate::{MigrateError, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgQueryResult};

use super::dialect::Dialect;
use super::sql_store::SqlStore;
use crate::config::DatabaseConfig;

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// Store on a PostgreSQL pool.
pub type PgStore = SqlStore<sqlx::Postgres>;

impl Dialect for sqlx::Postgres {
    const BACKEND: Backend = Backend::Postgres;

    /// Connects with bounded connect and statement times, so that a dead
    /// database fails calls quickly instead of hanging them.
    async fn connect(config: &DatabaseConfig, _url: &DatabaseUrl) -> anyhow::Result<PgPool> {
        let options = PgConnectOptions::from_str(config.url())
            .context("database.url is not a valid PostgreSQL URL")?
            .application_name("chataigne-auth")
            .options([(
                "statement_timeout",
                format!("{}ms", config.statement_timeout_ms),
            )]);
        let connect_timeout = Duration::from_millis(config.connect_timeout_ms);
        let pool = PgPoolOptions::new()
            .max_connections(config.max_connections)
            .acquire_timeout(connect_timeout)
            .connect_with(options);
        tokio::time::timeout(connect_timeout, pool)
            .await
            .context("connecting to PostgreSQL timed out")?
            .context("connecting to PostgreSQL")
    }

    async fn migrate(pool: &PgPool) -> Result<(), MigrateError> {
        MIGRATOR.run(pool).await
    }

    fn rows_affected(result: &PgQueryResult) -> u64 {
        result.rows_affected()
    }
}

#[cfg(test)]
mod tests {
    use chataigne_common::sql_error::SqlErrorKind;

    #[test]
    fn timeouts_and_connection_loss_are_transient() {
        let is_transient_sqlstate = |code| SqlErrorKind::of_sqlstate(code).is_transient();
        for code in ["57014", "08006", "57P01", "53300", "40001"] {
            assert!(is_transient_sqlstate(code), "{code}");
        }
        for code in ["23505", "42P01", "22001"] {
            assert!(!is_transient_sqlstate(code), "{code}");
        }
    }
}
