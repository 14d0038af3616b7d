//! The Chataigne tool-service: typed restaurant RPCs over gRPC, the MCP tool
//! catalogue declared beside them, and storage on PostgreSQL or SQLite.
//!
//! `run` (or `ToolService::build` then `serve`) is what `main` and the tests
//! call: it opens the store named by the configured URL, then serves both gRPC
//! services on the given listener, behind the gRPC server stack every
//! Chataigne server declares (`chataigne_common::grpc_server`: the caller's
//! deadline, load shedding past `grpc_server.max_concurrent_requests`, HTTP/2
//! limits), and Prometheus `/metrics` on the metrics listener, when given,
//! until `shutdown` resolves.

pub mod access;
pub mod config;
pub mod cursor;
pub mod domain;
pub mod grpc;
pub mod metrics;
pub mod ops;
pub mod present;
pub mod replay;
pub mod store;
pub mod tools;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use chataigne_common::metrics::PoolStats;
use chataigne_common::startup;
use tokio::net::TcpListener;

pub use config::Config;

use crate::access::AuthServiceAccess;
use crate::cursor::CursorCodec;
use crate::metrics::ToolMetrics;
use crate::store::{Backend, PgStore, SqlStore, SqliteStore, Store, StoreOptions};
use crate::tools::Tools;

/// The listeners the service serves on, bound by the caller.
pub struct Listeners {
    /// Both gRPC services and the health service.
    pub grpc: TcpListener,
    /// Prometheus `/metrics` (internal), when metrics are enabled.
    pub metrics: Option<TcpListener>,
}

/// A tool-service ready to serve: store opened and migrated, demo data loaded
/// when asked, catalogue built.
pub struct ToolService {
    tools: Box<dyn Served>,
    /// Limits of the gRPC server stack (`chataigne_common::grpc_server`).
    grpc_limits: chataigne_common::grpc_server::GrpcServerLimits,
    /// TLS of the gRPC listener, certificates re-read when they change.
    tls: Option<chataigne_common::tls::Acceptor>,
}

/// The tools on the configured store: the one boundary where the backend,
/// chosen at start-up, is erased; every call inside runs on the concrete store.
trait Served: Send {
    /// The operator's handle on the same database.
    fn operator(&self) -> ops::Operator;

    /// This service's metrics, reading the database pool at each scrape.
    fn metrics(&self) -> anyhow::Result<ToolMetrics>;

    /// Serves both gRPC services on `listener` until `shutdown` resolves.
    fn serve(
        self: Box<Self>,
        metrics: Arc<ToolMetrics>,
        limits: chataigne_common::grpc_server::GrpcServerLimits,
        listener: (TcpListener, Option<chataigne_common::tls::Acceptor>),
        shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
    ) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>>;
}

impl<B: Backend> Served for Tools<SqlStore<B>, AuthServiceAccess> {
    fn operator(&self) -> ops::Operator {
        ops::Operator::new(self.store().clone())
    }

    fn metrics(&self) -> anyhow::Result<ToolMetrics> {
        let pool = self.store().pool().clone();
        Ok(ToolMetrics::new(
            self.catalog(),
            Box::new(move || PoolStats::of(&pool)),
        )?)
    }

    fn serve(
        self: Box<Self>,
        metrics: Arc<ToolMetrics>,
        limits: chataigne_common::grpc_server::GrpcServerLimits,
        listener: (TcpListener, Option<chataigne_common::tls::Acceptor>),
        shutdown: Pin<Box<dyn Future<Output = ()> + Send>>,
    ) -> Pin<Box<dyn Future<Output = anyhow::Result<()>> + Send>> {
        let tools = *self;
        // The auth-service's breaker is probed while the service serves: the
        // probe stops when shutdown resolves or serving ends.
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let gauge = metrics.clone();
        tools.access.watch(stopped, move |up| {
            gauge.dependency_state(domain::Dependency::AuthService, up);
        });
        let shutdown = async move {
            shutdown.await;
            let _ = stop.send(true);
        };
        Box::pin(
            async move { grpc::serve_measured(tools, metrics, &limits, listener, shutdown).await },
        )
    }
}

impl ToolService {
    /// Opens the store named by the configured URL and prepares the tools.
    pub async fn build(config: &Config) -> anyhow::Result<ToolService> {
        config.validate_serving()?;
        if config.allow_insecure_development {
            chataigne_common::production::warn_insecure_development("tool-service");
        }
        let tls = config.tls.as_ref().map(|tls| tls.acceptor()).transpose()?;
        let options = StoreOptions {
            max_connections: config.database.max_connections,
            connect_timeout: Duration::from_millis(config.database.connect_timeout_ms),
            statement_timeout: Duration::from_millis(config.database.statement_timeout_ms),
        };
        let url = config.database.url();
        let database = format!("database {}", startup::redacted_url(url));
        let backend = config.database.backend();
        let tools: Box<dyn Served> =
            if backend == Some(chataigne_common::database::Backend::Postgres) {
                let store = startup::retry(&database, &config.startup, || {
                    PgStore::connect(url, &options)
                })
                .await?;
                Box::new(prepare(config, store).await?)
            } else {
                let store = startup::retry(&database, &config.startup, || {
                    SqliteStore::connect(url, &options)
                })
                .await?;
                Box::new(prepare(config, store).await?)
            };
        Ok(ToolService {
            tools,
            grpc_limits: config.grpc_server.clone(),
            tls,
        })
    }

    /// The operator's handle on this service's run-time flags (the write
    /// switch), over the same database.
    pub fn operator(&self) -> ops::Operator {
        self.tools.operator()
    }

    /// Serves both gRPC services, and `/metrics` when its listener is given,
    /// until `shutdown` resolves.
    pub async fn serve(
        self,
        listeners: Listeners,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let metrics = Arc::new(self.metrics()?);
        let Listeners {
            grpc: grpc_listener,
            metrics: metrics_listener,
        } = listeners;
        let (stop, mut stopped) = tokio::sync::watch::channel(false);
        let scrape: Arc<dyn chataigne_common::metrics::Exposition> = metrics.clone();
        let exposition = async move {
            let Some(listener) = metrics_listener else {
                return Ok(());
            };
            chataigne_common::metrics::serve(listener, scrape, async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            })
            .await
            .context("metrics server")
        };
        let limits = self.grpc_limits;
        let tls = self.tls;
        let served = self
            .tools
            .serve(metrics, limits, (grpc_listener, tls), Box::pin(shutdown));
        let grpc = async move {
            let served = served.await;
            let _ = stop.send(true);
            served
        };
        tokio::try_join!(grpc, exposition)?;
        Ok(())
    }

    /// This service's metrics, reading its database pool at each scrape.
    fn metrics(&self) -> anyhow::Result<ToolMetrics> {
        self.tools.metrics()
    }
}

/// Builds the service and serves until `shutdown` resolves.
pub async fn run(
    config: Config,
    listeners: Listeners,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    ToolService::build(&config)
        .await?
        .serve(listeners, shutdown)
        .await
}

async fn prepare<S: Store>(
    config: &Config,
    store: S,
) -> anyhow::Result<Tools<S, AuthServiceAccess>> {
    let database = format!(
        "migrations of {}",
        startup::redacted_url(config.database.url())
    );
    startup::retry(&database, &config.startup, || store.migrate()).await?;
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
    let access =
        AuthServiceAccess::connect_with(&config.auth_service_url, config.auth_service_tls.as_ref())
            .context("auth_service_url / auth_service_tls")?;
    let cursors = CursorCodec::from_config(&config.cursor)?;
    let keys = tools::idempotency::IdempotencyKeys::new(
        config.idempotency.secret.as_ref(),
        Duration::from_secs(config.idempotency.replay_ttl_secs),
    );
    let admission =
        tools::admission::Admission::new(config.admission.limits(config.database.max_connections));
    Ok(Tools::new(store, access, cursors)?
        .with_idempotency(keys)
        .with_admission(admission))
}
