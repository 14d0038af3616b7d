//! The whole Chataigne stack in one process: the auth-service, the
//! tool-service and the gateway, each started through its own library `run`
//! on loopback listeners and wired to the others. The embedded binary and the
//! cross-service tests both start the stack through here.

use std::path::Path;

use anyhow::Context;
use chataigne_auth::{AuthApp, IssueTokenRequest};
use secrecy::SecretString;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

/// The three services' configurations; addresses between them are filled in
/// by [`start`] once their listeners are bound.
pub struct StackConfig {
    pub auth: chataigne_auth::Config,
    pub tools: chataigne_tools::Config,
    pub gateway: chataigne_gateway::Config,
    /// Public port of the gateway (0: any free port).
    pub gateway_port: u16,
}

impl StackConfig {
    /// Embedded mode: SQLite files under `data_dir`, demo data seeded.
    pub fn embedded(data_dir: &Path) -> StackConfig {
        let sqlite = |name: &str| format!("sqlite://{}?mode=rwc", data_dir.join(name).display());
        let mut config = StackConfig::with_databases(&sqlite("auth.db"), &sqlite("tools.db"));
        // Idempotency records outlive a restart only with the same secret.
        config.tools.idempotency.secret = embedded_secret(&data_dir.join("idempotency.key"));
        config
    }

    /// The stack on the given database URLs (SQLite or Postgres), demo data seeded.
    pub fn with_databases(auth_url: &str, tools_url: &str) -> StackConfig {
        let mut auth = chataigne_auth::Config::default();
        auth.database.url = SecretString::from(auth_url.to_owned());
        auth.seed_demo = true;
        let mut tools = chataigne_tools::Config::default();
        tools.database.url = SecretString::from(tools_url.to_owned());
        tools.seed_demo = true;
        StackConfig {
            auth,
            tools,
            gateway: chataigne_gateway::Config {
                // Loopback clients only: the production egress allowlist does not apply here.
                allowlist: chataigne_gateway::Allowlist::loopback(),
                ..chataigne_gateway::Config::default()
            },
            gateway_port: 0,
        }
    }
}

/// The embedded tool-service's idempotency secret, kept in `path` (created
/// on first start). `None` (a per-process secret) when the file is unusable.
fn embedded_secret(path: &Path) -> Option<SecretString> {
    if let Ok(existing) = std::fs::read_to_string(path) {
        let existing = existing.trim();
        if existing.len() >= 32 {
            return Some(SecretString::from(existing.to_owned()));
        }
    }
    let fresh: String = (0..2)
        .map(|_| uuid::Uuid::new_v4().simple().to_string())
        .collect();
    match std::fs::write(path, &fresh) {
        Ok(()) => Some(SecretString::from(fresh)),
        Err(error) => {
            tracing::warn!(%error, "idempotency secret not stored: keys are forgotten at restart");
            None
        }
    }
}

/// A running stack. Dropping it does not stop it: call [`Stack::shutdown`].
pub struct Stack {
    /// The MCP endpoint, e.g. `http://127.0.0.1:8080/mcp/v1`.
    pub mcp_url: String,
    /// Public base URL of the gateway.
    pub gateway_url: String,
    /// The gateway's internal (health) base URL.
    pub gateway_internal_url: String,
    pub auth_grpc_url: String,
    pub auth_http_url: String,
    pub tools_grpc_url: String,
    /// Management handle on the auth-service (tokens, revocations).
    pub auth: AuthApp,
    stop: CancellationToken,
    tasks: JoinSet<(&'static str, anyhow::Result<()>)>,
}

async fn bind(port: u16) -> anyhow::Result<(TcpListener, String)> {
    let listener = TcpListener::bind(("127.0.0.1", port))
        .await
        .with_context(|| format!("binding 127.0.0.1:{port}"))?;
    let addr = listener.local_addr()?;
    Ok((listener, format!("http://{addr}")))
}

/// Binds every listener on loopback, starts the three services and returns
/// once the auth-service and the tool-service are built (migrated, seeded).
pub async fn start(mut config: StackConfig) -> anyhow::Result<Stack> {
    let (auth_grpc, auth_grpc_url) = bind(0).await?;
    let (auth_http, auth_http_url) = bind(0).await?;
    let (tools_grpc, tools_grpc_url) = bind(0).await?;
    let (public, gateway_url) = bind(config.gateway_port).await?;
    let (internal, gateway_internal_url) = bind(0).await?;

    config.auth.issuer = auth_http_url.clone();
    config.tools.auth_service_url = auth_grpc_url.clone();
    config.gateway.public_url = Some(gateway_url.clone());
    config.gateway.auth_service_url = auth_grpc_url.clone();
    config.gateway.tool_service_url = tools_grpc_url.clone();
    config.gateway.authorization_server = Some(auth_http_url.clone());
    let mcp_path = config
        .gateway
        .endpoints
        .first()
        .map(|endpoint| endpoint.path.clone())
        .unwrap_or_else(|| "/mcp/v1".to_owned());
    // The authorization server issues tokens for the gateway's endpoints only.
    let mut resources: Vec<String> = config
        .gateway
        .endpoints
        .iter()
        .map(|endpoint| format!("{gateway_url}{}", endpoint.path))
        .collect();
    if resources.is_empty() {
        resources.push(format!("{gateway_url}{mcp_path}"));
    }
    config.auth.oauth.allowed_resources = resources;

    let auth = AuthApp::build(config.auth).await.context("auth-service")?;
    let tools = chataigne_tools::ToolService::build(&config.tools)
        .await
        .context("tool-service")?;

    let stop = CancellationToken::new();
    let mut tasks = JoinSet::new();
    let signal = stop.clone();
    let listeners = chataigne_auth::Listeners {
        grpc: auth_grpc,
        http: auth_http,
    };
    let serving = auth.clone();
    tasks.spawn(async move {
        let result = serving
            .serve(listeners, async move { signal.cancelled().await })
            .await;
        ("auth-service", result)
    });
    let signal = stop.clone();
    tasks.spawn(async move {
        let result = tools
            .serve(tools_grpc, async move { signal.cancelled().await })
            .await;
        ("tool-service", result)
    });
    let signal = stop.clone();
    let gateway = config.gateway;
    tasks.spawn(async move {
        let listeners = chataigne_gateway::Listeners { public, internal };
        let result =
            chataigne_gateway::run(gateway, listeners, async move { signal.cancelled().await })
                .await;
        ("gateway", result)
    });

    Ok(Stack {
        mcp_url: format!("{gateway_url}{mcp_path}"),
        gateway_url,
        gateway_internal_url,
        auth_grpc_url,
        auth_http_url,
        tools_grpc_url,
        auth,
        stop,
        tasks,
    })
}

impl Stack {
    /// A bearer token for `user_id` through the demo client, for this stack's
    /// MCP endpoint.
    pub async fn token_for(
        &self,
        user_id: &str,
        scopes: &[&str],
        ttl: Option<std::time::Duration>,
    ) -> anyhow::Result<String> {
        let issued = self
            .auth
            .issue_access_token(IssueTokenRequest {
                user_id: user_id.to_owned(),
                client_id: chataigne_common::demo::DEMO_CLIENT_ID.to_owned(),
                scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
                resource: self.mcp_url.clone(),
                ttl,
            })
            .await?;
        Ok(issued.access_token)
    }

    /// Resolves when any service stops by itself (an error), naming it.
    pub async fn stopped(&mut self) -> anyhow::Result<()> {
        match self.tasks.join_next().await {
            Some(Ok((name, Ok(())))) => anyhow::bail!("{name} stopped"),
            Some(Ok((name, Err(error)))) => Err(error.context(name)),
            Some(Err(join)) => Err(join.into()),
            None => Ok(()),
        }
    }

    /// Asks every service to stop and waits for in-flight requests to finish.
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        self.stop.cancel();
        while let Some(joined) = self.tasks.join_next().await {
            let (name, result) = joined?;
            result.with_context(|| format!("{name} failed"))?;
        }
        Ok(())
    }
}
