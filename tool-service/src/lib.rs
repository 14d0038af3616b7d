//! The Chataigne tool-service: typed restaurant RPCs over gRPC, the MCP tool
//! catalogue declared beside them, and storage on PostgreSQL or SQLite.
//!
//! `run` (or `ToolService::build` then `serve`) is what `main` and the tests
//! call: it opens the store named by the configured URL, then serves both gRPC
//! services on the given listener until `shutdown` resolves.

pub mod access;
pub mod config;
pub mod cursor;
pub mod domain;
pub mod grpc;
pub mod ops;
pub mod present;
pub mod store;
pub mod tools;

use std::future::Future;
use std::time::Duration;

use tokio::net::TcpListener;

pub use config::Config;

use crate::access::AuthServiceAccess;
use crate::cursor::CursorCodec;
use crate::store::{PgStore, SqliteStore, Store, StoreOptions};
use crate::tools::Tools;

/// A tool-service ready to serve: store opened and migrated, demo data loaded
/// when asked, catalogue built.
pub enum ToolService {
    Postgres(Tools<PgStore, AuthServiceAccess>),
    Sqlite(Tools<SqliteStore, AuthServiceAccess>),
}

impl ToolService {
    /// Opens the store named by the configured URL and prepares the tools.
    pub async fn build(config: &Config) -> anyhow::Result<ToolService> {
        config.validate()?;
        let options = StoreOptions {
            max_connections: config.database.max_connections,
            connect_timeout: Duration::from_millis(config.database.connect_timeout_ms),
            statement_timeout: Duration::from_millis(config.database.statement_timeout_ms),
        };
        let url = config.database.url();
        if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            let store = PgStore::connect(url, &options).await?;
            Ok(ToolService::Postgres(prepare(config, store).await?))
        } else {
            let store = SqliteStore::connect(url, &options).await?;
            Ok(ToolService::Sqlite(prepare(config, store).await?))
        }
    }

    /// Serves both gRPC services on `listener` until `shutdown` resolves.
    pub async fn serve(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        match self {
            ToolService::Postgres(tools) => grpc::serve(tools, listener, shutdown).await,
            ToolService::Sqlite(tools) => grpc::serve(tools, listener, shutdown).await,
        }
    }
}

/// Builds the service and serves until `shutdown` resolves.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    ToolService::build(&config)
        .await?
        .serve(listener, shutdown)
        .await
}

async fn prepare<S: Store>(
    config: &Config,
    store: S,
) -> anyhow::Result<Tools<S, AuthServiceAccess>> {
    store.migrate().await?;
    if config.seed_demo {
        let started = std::time::Instant::now();
        let now_ms = chrono::Utc::now().timestamp_millis();
        store
            .load(&store::seed::DataSet::generate(&store::seed::SeedSpec {
                days: config.demo_days,
                ..store::seed::SeedSpec::demo(now_ms)
            }))
            .await?;
        tracing::info!(
            elapsed_ms = started.elapsed().as_millis() as u64,
            "demo data set loaded"
        );
    }
    let access = AuthServiceAccess::connect(&config.auth_service_url)?;
    let cursors = CursorCodec::from_config(&config.cursor)?;
    let keys = tools::idempotency::IdempotencyKeys::new(
        config.idempotency.secret.as_ref(),
        Duration::from_secs(config.idempotency.replay_ttl_secs),
    );
    Ok(Tools::new(store, access, cursors)?.with_idempotency(keys))
}
