//! Chooses the store's backend from the database URL, opens it and applies
//! the migrations.

use std::sync::Arc;

use chataigne_common::database::Backend;

use super::Store;
use super::dialect::Dialect;
use super::postgres::PgStore;
use super::sqlite::SqliteStore;
use crate::config::DatabaseConfig;

/// Connects to `postgres://…` or `sqlite:…` and applies the migrations.
pub async fn connect(config: &DatabaseConfig) -> anyhow::Result<Arc<dyn Store>> {
    let url = config.database_url().map_err(anyhow::Error::msg)?;
    let store: Arc<dyn Store> = match url.backend() {
        Backend::Postgres => Arc::new(PgStore::new(sqlx::Postgres::connect(config, &url).await?)),
        Backend::Sqlite => Arc::new(SqliteStore::new(sqlx::Sqlite::connect(config, &url).await?)),
    };
    store
        .migrate()
        .await
        .map_err(|e| anyhow::anyhow!("applying database migrations: {e}"))?;
    Ok(store)
}
