//! The gRPC channels to the auth-service and the tool-service: created once,
//! connecting lazily with a connect timeout, shared by every request.

use std::time::Duration;

use anyhow::Context;
use chataigne_proto::auth::v1::auth_service_client::AuthServiceClient;
use chataigne_proto::tools::v1::tool_catalog_client::ToolCatalogClient;
use tonic::transport::{Channel, Endpoint};

use crate::config::Config;

/// Clients of both backends; cloning is cheap and shares the connection.
#[derive(Clone)]
pub struct Backends {
    pub auth: AuthServiceClient<Channel>,
    pub tools: ToolCatalogClient<Channel>,
    /// `host:port` of the auth-service, for the readiness probe.
    pub auth_authority: String,
}

fn channel(url: &str, connect_timeout: Duration) -> anyhow::Result<Channel> {
    let endpoint = Endpoint::from_shared(url.to_owned())
        .with_context(|| format!("invalid gRPC endpoint {url:?}"))?
        .connect_timeout(connect_timeout)
        .tcp_nodelay(true)
        .http2_keep_alive_interval(Duration::from_secs(30))
        .keep_alive_timeout(Duration::from_secs(10))
        .keep_alive_while_idle(true);
    Ok(endpoint.connect_lazy())
}

impl Backends {
    /// Builds both channels; nothing connects until the first call.
    pub fn new(config: &Config) -> anyhow::Result<Backends> {
        let connect_timeout = Duration::from_millis(config.deadlines.connect_ms);
        let auth_uri: http::Uri = config
            .auth_service_url
            .parse()
            .context("auth_service_url")?;
        let auth_authority = match (auth_uri.host(), auth_uri.port_u16()) {
            (Some(host), Some(port)) => format!("{host}:{port}"),
            (Some(host), None) if auth_uri.scheme_str() == Some("https") => format!("{host}:443"),
            (Some(host), None) => format!("{host}:80"),
            (None, _) => anyhow::bail!("auth_service_url has no host"),
        };
        Ok(Backends {
            auth: AuthServiceClient::new(channel(&config.auth_service_url, connect_timeout)?),
            tools: ToolCatalogClient::new(channel(&config.tool_service_url, connect_timeout)?),
            auth_authority,
        })
    }
}
