//! The gRPC channels to the auth-service and the tool-service: created once,
//! each balanced over every instance its name resolves to (re-resolved, with
//! unreachable instances ejected until a probe reaches them), connecting
//! lazily with a connect timeout, shared by every request.

use std::time::Duration;

use anyhow::Context;
use chataigne_common::balance::{self, Balanced};
use chataigne_proto::auth::v1::auth_service_client::AuthServiceClient;
use chataigne_proto::tools::v1::tool_catalog_client::ToolCatalogClient;
use tonic_health::pb::health_client::HealthClient;

use crate::config::Config;

/// Clients of both backends; cloning is cheap and shares the connection.
#[derive(Clone)]
pub struct Backends {
    pub auth: AuthServiceClient<Balanced>,
    pub tools: ToolCatalogClient<Balanced>,
    /// `grpc.health.v1` of each backend, over the same channels, for the
    /// readiness probe.
    pub auth_health: HealthClient<Balanced>,
    pub tools_health: HealthClient<Balanced>,
}

fn channel(url: &str, connect_timeout: Duration) -> anyhow::Result<Balanced> {
    let options = balance::Options {
        connect_timeout,
        ..balance::Options::default()
    };
    Balanced::dns(url, options).with_context(|| format!("invalid gRPC endpoint {url:?}"))
}

impl Backends {
    /// Builds both channels; nothing connects until the first call.
    pub fn new(config: &Config) -> anyhow::Result<Backends> {
        let connect_timeout = Duration::from_millis(config.deadlines.connect_ms);
        let auth = channel(&config.auth_service_url, connect_timeout)?;
        let tools = channel(&config.tool_service_url, connect_timeout)?;
        Ok(Backends {
            auth: AuthServiceClient::new(auth.clone()),
            tools: ToolCatalogClient::new(tools.clone()),
            auth_health: HealthClient::new(auth),
            tools_health: HealthClient::new(tools),
        })
    }
}
