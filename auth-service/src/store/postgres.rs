//! The PostgreSQL store: connection with fail-fast timeouts, error
//! classification by SQLSTATE, and the shared SQL implementation.

use std::str::FromStr;
use std::time::Duration;

use anyhow::Context;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::StoreError;
use super::admin::impl_admin_store;
use super::oauth_impl::impl_oauth_store;
use super::sql_store::impl_sql_store;
use crate::config::DatabaseConfig;

static MIGRATOR: Migrator = sqlx::migrate!("./migrations/postgres");

/// Store on a PostgreSQL pool.
#[derive(Clone)]
pub struct PgStore {
    pool: PgPool,
}

impl PgStore {
    /// Connects with bounded connect and statement times, so that a dead
    /// database fails calls quickly instead of hanging them.
    pub async fn connect(config: &DatabaseConfig) -> anyhow::Result<PgStore> {
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
        let pool = tokio::time::timeout(connect_timeout, pool)
            .await
            .context("connecting to PostgreSQL timed out")?
            .context("connecting to PostgreSQL")?;
        Ok(PgStore { pool })
    }

    fn migrator() -> &'static Migrator {
        &MIGRATOR
    }

    fn db_error(error: sqlx::Error) -> StoreError {
        let transient = match &error {
            sqlx::Error::Database(db) => db.code().is_some_and(|code| is_transient_sqlstate(&code)),
            other => super::connect::is_transient(other),
        };
        if transient {
            StoreError::Unavailable(error.to_string())
        } else {
            StoreError::Failed(error.to_string())
        }
    }
}

/// Connection exceptions, statement timeouts, shutdowns, resource exhaustion
/// and serialization conflicts: worth a retry later.
fn is_transient_sqlstate(code: &str) -> bool {
    code.starts_with("08")
        || code.starts_with("53")
        || code.starts_with("57P")
        || code == "57014"
        || code == "40001"
        || code == "40P01"
}

impl_sql_store!(PgStore);
impl_oauth_store!(PgStore);
impl_admin_store!(PgStore);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_and_connection_loss_are_transient() {
        for code in ["57014", "08006", "57P01", "53300", "40001"] {
            assert!(is_transient_sqlstate(code), "{code}");
        }
        for code in ["23505", "42P01", "22001"] {
            assert!(!is_transient_sqlstate(code), "{code}");
        }
    }
}
