//! The gRPC channels to the auth-service and the tool-service: created once,
//! each balanced over every instance its name resolves to (re-resolved, with
//! unreachable instances ejected until a probe reaches them), connecting
//! lazily with a connect timeout, shared by every request; with the breaker
//! of each backend and of Redis (see `ops/breaker.rs`), probed in the background
//! from [`Backends::watch`].

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use chataigne_common::balance::{self, Balanced};
use chataigne_proto::auth::v1::auth_service_client::AuthServiceClient;
use chataigne_proto::tools::v1::tool_catalog_client::ToolCatalogClient;
use tonic_health::pb::health_client::HealthClient;

use crate::config::Config;
use crate::config::OnStoreFailure;
use crate::ops::breaker::{self, Breaker};
use crate::ops::counters::{Dependency, Metrics};
use crate::stores::redis_conn::RedisHandle;

/// Clients of both backends; cloning is cheap and shares the connection.
#[derive(Clone)]
pub struct Backends {
    pub auth: AuthServiceClient<Balanced>,
    pub tools: ToolCatalogClient<Balanced>,
    /// `grpc.health.v1` of each backend, over the same channels: the probes
    /// of their breakers.
    pub auth_health: HealthClient<Balanced>,
    pub tools_health: HealthClient<Balanced>,
    /// Open while the backend (or its database) is known down or hung.
    pub auth_breaker: Arc<Breaker>,
    pub tools_breaker: Arc<Breaker>,
    /// Redis, when configured.
    pub redis: Option<RedisHandle>,
}

fn channel(
    url: &str,
    connect_timeout: Duration,
    tls: Option<&chataigne_common::tls::ClientTls>,
) -> anyhow::Result<Balanced> {
    // TLS (`backend_tls`): the server name defaults to the URL's host.
    let tls = tls
        .map(|tls| tls.connector_for(url))
        .transpose()
        .context("backend_tls")?;
    let options = balance::Options {
        connect_timeout,
        tls,
        ..balance::Options::default()
    };
    Balanced::dns(url, options).with_context(|| format!("invalid gRPC endpoint {url:?}"))
}

impl Backends {
    /// Builds both channels; nothing connects until the first call.
    pub fn new(config: &Config, redis: Option<RedisHandle>) -> anyhow::Result<Backends> {
        let connect_timeout = Duration::from_millis(config.deadlines.connect_ms);
        config.validate_tls()?;
        let tls = config.backend_tls.as_ref();
        let auth = channel(&config.auth_service_url, connect_timeout, tls)?;
        let tools = channel(&config.tool_service_url, connect_timeout, tls)?;
        Ok(Backends {
            auth: AuthServiceClient::new(auth.clone()),
            tools: ToolCatalogClient::new(tools.clone()),
            auth_health: HealthClient::new(auth),
            tools_health: HealthClient::new(tools),
            auth_breaker: Breaker::new(Dependency::AuthService.label()),
            tools_breaker: Breaker::new(Dependency::ToolService.label()),
            redis,
        })
    }

    /// Starts the background probe of every breaker, until `stop` turns true.
    /// The Redis probe also drives the degraded gauge and says each change
    /// of what calls meet under `policy`, once.
    pub fn watch(
        &self,
        metrics: &Arc<Metrics>,
        stop: &tokio::sync::watch::Receiver<bool>,
        policy: OnStoreFailure,
    ) {
        // Each probe tells its breaker whether the backend answered at all,
        // so that calls waiting on a hung one are released (`Breaker::hung`).
        let (auth, auth_breaker) = (self.auth_health.clone(), self.auth_breaker.clone());
        breaker::spawn_probe(
            self.auth_breaker.clone(),
            metrics.clone(),
            move || chataigne_common::breaker::serving_for(auth_breaker.clone(), auth.clone()),
            stop.clone(),
        );
        let (tools, tools_breaker) = (self.tools_health.clone(), self.tools_breaker.clone());
        breaker::spawn_probe(
            self.tools_breaker.clone(),
            metrics.clone(),
            move || chataigne_common::breaker::serving_for(tools_breaker.clone(), tools.clone()),
            stop.clone(),
        );
        if let Some(redis) = &self.redis {
            let probed = redis.clone();
            let (gauge, metrics) = (redis.breaker().clone(), metrics.clone());
            let mut first = true;
            chataigne_common::breaker::spawn_probe(
                redis.breaker().clone(),
                move || {
                    let redis = probed.clone();
                    async move { redis.ping().await }
                },
                stop.clone(),
                move |up| {
                    metrics.dependency_state(&gauge);
                    let degraded = !up && policy == OnStoreFailure::FailOpen;
                    metrics.limits_degraded(degraded);
                    // The state at start is no transition; each change is
                    // said once (the breaker logs the dependency's side).
                    if !std::mem::take(&mut first) {
                        match (up, policy) {
                            (true, _) => tracing::info!(
                                "rate limits enforced again: the rate-limit store answers"
                            ),
                            (false, OnStoreFailure::FailOpen) => tracing::warn!(
                                "degraded: calls are served without rate limits until the rate-limit store answers (rate_limits.on_store_failure = fail_open)"
                            ),
                            (false, OnStoreFailure::FailClosed) => tracing::warn!(
                                "not ready: calls are refused until the rate-limit store answers (rate_limits.on_store_failure = fail_closed)"
                            ),
                        }
                    }
                },
            );
        }
    }
}
