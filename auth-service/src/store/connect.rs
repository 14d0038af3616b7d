//! Chooses the store implementation from the database URL scheme and
//! classifies backend-independent sqlx errors.

use std::sync::Arc;

use super::Store;
use super::postgres::PgStore;
use super::sqlite::SqliteStore;
use crate::config::DatabaseConfig;

/// Connects to `postgres://…` or `sqlite:…` and applies the migrations.
pub async fn connect(config: &DatabaseConfig) -> anyhow::Result<Arc<dyn Store>> {
    let url = config.url();
    let store: Arc<dyn Store> =
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Arc::new(PgStore::connect(config).await?)
        } else if url.starts_with("sqlite:") {
            Arc::new(SqliteStore::connect(config).await?)
        } else {
            anyhow::bail!("database.url must start with postgres:// or sqlite:");
        };
    store
        .migrate()
        .await
        .map_err(|e| anyhow::anyhow!("applying database migrations: {e}"))?;
    Ok(store)
}

/// Transport-level failures: the database could not be reached in time.
pub(super) fn is_transient(error: &sqlx::Error) -> bool {
    matches!(
        error,
        sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed
    )
}
