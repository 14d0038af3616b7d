//! Start-up and serving: resolves the public URL, builds the shared state and
//! both routers, and serves the public listener (under the connection
//! discipline of `chataigne_common::http_server`, with the gateway's
//! admission: allowlist at accept, PROXY protocol, TLS) and the internal one
//! until shutdown, letting in-flight requests finish.

use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{Request, State};
use axum::routing::{any, get};
use tokio::net::TcpListener;

use crate::access::auth::Authenticator;
use crate::access::metadata;
use crate::access::rate_limit::RateLimiter;
use crate::backends::Backends;
use crate::backends::catalog::Catalog;
use crate::config::Config;
use crate::edge::listener::PublicAdmission;
use crate::edge::{health, stack};
use crate::endpoints::{Endpoints, METADATA_PREFIX};
use crate::error::GatewayError;
use crate::mcp::handler;
use crate::ops::counters::Metrics;
use crate::state::{AppState, SharedState};
use crate::stores::redis_conn::RedisHandle;

/// The two bound listeners of the gateway.
pub struct Listeners {
    /// The MCP endpoints and their metadata documents, behind the allowlist.
    pub public: TcpListener,
    /// Health and readiness only; no allowlist (not reachable from outside).
    pub internal: TcpListener,
}

/// `http://127.0.0.1:<port>` (or the bound address) when no public URL is configured.
fn derived_origin(addr: SocketAddr, tls: bool) -> String {
    let scheme = if tls { "https" } else { "http" };
    match addr {
        SocketAddr::V4(v4) if v4.ip().is_unspecified() => {
            format!("{scheme}://127.0.0.1:{}", v4.port())
        }
        SocketAddr::V6(v6) if v6.ip().is_unspecified() => {
            format!("{scheme}://127.0.0.1:{}", v6.port())
        }
        SocketAddr::V4(v4) => format!("{scheme}://{v4}"),
        SocketAddr::V6(v6) => format!("{scheme}://[{}]:{}", v6.ip(), v6.port()),
    }
}

fn public_routes(state: &SharedState) -> Router {
    let mut router = Router::new();
    for path in state.endpoints.paths() {
        let shared: Arc<str> = Arc::from(path.as_str());
        router = router.route(
            &path,
            any(move |State(state): State<SharedState>, request: Request| {
                let path = shared.clone();
                async move { handler::handle(state, path, request).await }
            }),
        );
        router = router.route(
            &format!("{METADATA_PREFIX}{path}"),
            get(
                |State(state): State<SharedState>, request: Request| async move {
                    metadata::serve(
                        &state.endpoints,
                        state.config.authorization_server.as_deref(),
                        &request,
                    )
                },
            ),
        );
    }
    router
        .route(
            METADATA_PREFIX,
            get(
                |State(state): State<SharedState>, request: Request| async move {
                    metadata::serve(
                        &state.endpoints,
                        state.config.authorization_server.as_deref(),
                        &request,
                    )
                },
            ),
        )
        .fallback(|| async { GatewayError::NotFound })
        .with_state(state.clone())
}

/// Serves until `shutdown` resolves, then drains in-flight requests.
pub async fn run(
    config: Config,
    listeners: Listeners,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    config.validate()?;
    if config.allow_insecure_development {
        chataigne_common::production::warn_insecure_development("gateway");
    }
    let public_addr = listeners.public.local_addr()?;
    let internal_addr = listeners.internal.local_addr()?;
    let origin = config
        .public_url
        .clone()
        .unwrap_or_else(|| derived_origin(public_addr, config.tls.is_some()));
    let redis = RedisHandle::new(&config.redis)?;
    if let Some(redis) = &redis {
        redis.verify_at_start().await?;
    }
    let backends = Backends::new(&config, redis.clone())?;
    let catalog = Catalog::new(
        backends.tools.clone(),
        backends.tools_breaker.clone(),
        Duration::from_secs(config.tool_catalog_ttl_secs),
        Duration::from_millis(config.deadlines.read_ms),
    );
    let metrics = Arc::new(Metrics::new()?);
    let authenticator = Authenticator {
        client: backends.auth.clone(),
        breaker: backends.auth_breaker.clone(),
        credential: config.gateway_credential.clone(),
        metrics: metrics.clone(),
    };
    let state: SharedState = Arc::new(AppState {
        endpoints: Endpoints::new(&config.endpoints, &origin, |revision| {
            crate::mcp::revision::protocol(revision).supported_versions()
        }),
        backends,
        authenticator,
        catalog,
        limiter: RateLimiter::new(redis.clone(), crate::access::rate_limit::WINDOW),
        metrics,
        config,
    });
    let public = stack::public(public_routes(&state), &state);
    let tls = state
        .config
        .tls
        .as_ref()
        .map(crate::edge::tls::acceptor)
        .transpose()?;
    let admission = PublicAdmission::new(&state.config.allowlist, tls);
    let metrics = state.clone();
    let observer: chataigne_common::http_server::Observer =
        Arc::new(move |reason| metrics.metrics.connection_closed(reason));
    let internal = health::router(state.clone());

    let (stop, stopped) = tokio::sync::watch::channel(false);
    tokio::spawn(async move {
        shutdown.await;
        let _ = stop.send(true);
    });
    // The breakers' probes, until shutdown.
    state.backends.watch(
        &state.metrics,
        &stopped,
        state.config.rate_limits.on_store_failure,
    );
    let wait = |mut stopped: tokio::sync::watch::Receiver<bool>| async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };
    tracing::info!(
        public = %public_addr,
        internal = %internal_addr,
        %origin,
        endpoints = ?state.endpoints.paths(),
        allowlist = state.config.allowlist.enabled,
        shared_stores = redis.is_some(),
        proxy_protocol = state.config.allowlist.proxy_protocol,
        "gateway listening"
    );
    let public = chataigne_common::http_server::serve(
        listeners.public,
        state.config.connections.clone(),
        admission,
        public,
        observer,
        wait(stopped.clone()),
    );
    let internal = axum::serve(listeners.internal, internal)
        .with_graceful_shutdown(wait(stopped))
        .into_future();
    tokio::try_join!(public, internal)?;
    tracing::info!("gateway stopped");
    Ok(())
}
