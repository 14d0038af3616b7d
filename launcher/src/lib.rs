//! The whole Chataigne stack in one process: the auth-service, the
//! tool-service and the gateway, each started through its own library `run`
//! on loopback listeners and wired to the others. The embedded binary and the
//! cross-service tests both start the stack through here.

use std::path::Path;

use anyhow::Context;
use chataigne_auth::{AuthApp, IssueTokenRequest};
use chataigne_common::embedded::{self, DataDir};
use secrecy::SecretString;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, oneshot};
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
    /// The layout is [`chataigne_common::embedded`]'s, which the services'
    /// administration commands read with `--data-dir`.
    pub fn embedded(data_dir: &Path) -> StackConfig {
        let dir = DataDir::new(data_dir);
        let mut config = StackConfig::with_databases(
            &dir.sqlite_url(embedded::AUTH_DB, true),
            &dir.sqlite_url(embedded::TOOLS_DB, true),
        );
        // Idempotency records outlive a restart only with the same secret.
        config.tools.idempotency.secret = embedded_secret(&dir.path(embedded::IDEMPOTENCY_SECRET));
        // The signing keys in auth.db are sealed under this key-encryption key.
        config.auth.keys.encryption_key = embedded_kek(&dir.path(embedded::SIGNING_KEYS_KEK));
        // Any MCP client signs in on its own: dynamic registration (read
        // scopes only: the trust policy does not trust registered-on-the-fly
        // clients), metadata documents served from loopback, and the demo
        // client on any loopback redirect URI.
        config.auth.oauth.dynamic_registration = true;
        config.auth.oauth.client_metadata_allow_http_loopback = true;
        config.auth.oauth.demo_client_any_loopback_redirect = true;
        config
    }

    /// The stack on the given database URLs (SQLite or Postgres), demo data seeded.
    pub fn with_databases(auth_url: &str, tools_url: &str) -> StackConfig {
        let mut auth = chataigne_auth::Config::default();
        auth.database.url = SecretString::from(auth_url.to_owned());
        auth.seed_demo = true;
        // Signing keys encrypted at rest under a key of this process (fresh
        // databases; [`StackConfig::embedded`] keeps its key on disk).
        auth.keys.encryption_key = chataigne_auth::generate_kek().ok();
        let mut tools = chataigne_tools::Config::default();
        tools.database.url = SecretString::from(tools_url.to_owned());
        tools.seed_demo = true;
        // On PostgreSQL the demo data is a development deployment's only.
        let development = !(auth_url.starts_with("sqlite:") && tools_url.starts_with("sqlite:"));
        auth.allow_insecure_development = development;
        tools.allow_insecure_development = development;
        // The secrets a deployment shares between replicas and keeps across
        // restarts (required with PostgreSQL), fixed for this configuration's
        // life: replicas and restarts built from it recognise each other.
        tools.idempotency.secret = Some(random_secret());
        tools.cursor.keys = vec![random_secret()];
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

/// The embedded auth-service's key-encryption key, kept in `path` (created,
/// owner-only, on first start). An existing file is used as it is: if it is
/// not a valid key the auth-service refuses to start and says why, rather
/// than a new key replacing it and locking the stored signing keys away.
/// `None` (keys stored unencrypted in SQLite) when the file cannot be written.
fn embedded_kek(path: &Path) -> Option<SecretString> {
    if let Ok(existing) = std::fs::read_to_string(path) {
        let existing = existing.trim();
        if !existing.is_empty() {
            return Some(SecretString::from(existing.to_owned()));
        }
    }
    let fresh = match chataigne_auth::generate_kek() {
        Ok(fresh) => fresh,
        Err(error) => {
            tracing::warn!(%error, "no key-encryption key: signing keys are stored unencrypted");
            return None;
        }
    };
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(path).and_then(|mut file| {
        std::io::Write::write_all(
            &mut file,
            secrecy::ExposeSecret::expose_secret(&fresh).as_bytes(),
        )
    });
    match written {
        Ok(()) => Some(fresh),
        Err(error) => {
            tracing::warn!(%error, "key-encryption key not stored: signing keys are stored unencrypted");
            None
        }
    }
}

/// A running stack. Dropping it does not stop it: call [`Stack::shutdown`].
pub struct Stack {
    /// The MCP endpoint, e.g. `http://127.0.0.1:8080/mcp/v1`.
    pub mcp_url: String,
    /// Every configured endpoint: its path and the revision it speaks.
    pub endpoints: Vec<(String, chataigne_gateway::Revision)>,
    /// Public base URL of the gateway.
    pub gateway_url: String,
    /// The gateway's internal (health) base URL.
    pub gateway_internal_url: String,
    pub auth_grpc_url: String,
    pub auth_http_url: String,
    pub tools_grpc_url: String,
    /// The auth-service's Prometheus endpoint (`http://…/metrics`).
    pub auth_metrics_url: String,
    /// The tool-service's Prometheus endpoint (`http://…/metrics`).
    pub tools_metrics_url: String,
    /// The credential the auth-service requires of `Authenticate`'s caller
    /// (the gateway's), for callers that stand in for the gateway.
    pub gateway_credential: SecretString,
    /// Management handle on the auth-service (tokens, revocations).
    pub auth: AuthApp,
    /// Operator handle on the tool-service's run-time flags (write switch).
    pub tools: chataigne_tools::ops::Operator,
    /// Stops everything; `stop_tools` and `stop_gateway` are its children,
    /// so that [`Stack::shutdown`] can stop the services front to back.
    stop: CancellationToken,
    stop_tools: CancellationToken,
    stop_gateway: CancellationToken,
    tasks: JoinSet<(&'static str, anyhow::Result<()>)>,
    /// Stops and starts the tool-service (see [`Stack::stop_tool_service`]).
    tool_service: mpsc::Sender<ToolServiceCommand>,
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
    let (auth_metrics, auth_metrics_url) = bind(0).await?;
    let (tools_metrics, tools_metrics_url) = bind(0).await?;

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
    let endpoints = config
        .gateway
        .endpoints
        .iter()
        .map(|endpoint| (endpoint.path.clone(), endpoint.revision))
        .collect();
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

    // A restarted tool-service must recognise the idempotency records and
    // the cursors of the first one: fix their secrets for the stack's life.
    if config.tools.idempotency.secret.is_none() {
        config.tools.idempotency.secret = Some(random_secret());
    }
    if config.tools.cursor.keys.is_empty() {
        config.tools.cursor.keys.push(random_secret());
    }
    // Only the gateway may exchange tokens for assertions: one credential
    // for the stack's life, on both sides (unless a side was given its own).
    let gateway_credential = config
        .auth
        .gateway_credential
        .clone()
        .or_else(|| config.gateway.gateway_credential.clone())
        .unwrap_or_else(random_secret);
    let gateway_credential = config
        .auth
        .gateway_credential
        .get_or_insert(gateway_credential)
        .clone();
    if config.gateway.gateway_credential.is_none() {
        config.gateway.gateway_credential = Some(gateway_credential.clone());
    }

    let auth = AuthApp::build(config.auth).await.context("auth-service")?;
    let tools = chataigne_tools::ToolService::build(&config.tools)
        .await
        .context("tool-service")?;
    let operator = tools.operator();

    let stop = CancellationToken::new();
    let stop_tools = stop.child_token();
    let stop_gateway = stop_tools.child_token();
    let mut tasks = JoinSet::new();
    let signal = stop.clone();
    let listeners = chataigne_auth::Listeners {
        grpc: auth_grpc,
        http: auth_http,
        metrics: Some(auth_metrics),
    };
    let serving = auth.clone();
    tasks.spawn(async move {
        let result = serving
            .serve(listeners, async move { signal.cancelled().await })
            .await;
        ("auth-service", result)
    });
    let (tool_service, commands) = mpsc::channel(4);
    let mut restart_config = config.tools.clone();
    // A restart finds its data in place.
    restart_config.seed_demo = false;
    let tools_listeners = chataigne_tools::Listeners {
        grpc: tools_grpc,
        metrics: Some(tools_metrics),
    };
    let supervised = supervise_tool_service(
        restart_config,
        tools,
        tools_listeners,
        stop_tools.clone(),
        commands,
    );
    tasks.spawn(async move { ("tool-service", supervised.await) });
    let signal = stop_gateway.clone();
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
        endpoints,
        gateway_url,
        gateway_internal_url,
        auth_grpc_url,
        auth_http_url,
        tools_grpc_url,
        auth_metrics_url: format!("{auth_metrics_url}/metrics"),
        tools_metrics_url: format!("{tools_metrics_url}/metrics"),
        gateway_credential,
        auth,
        tools: operator,
        stop,
        stop_tools,
        stop_gateway,
        tasks,
        tool_service,
    })
}

/// 64 random hex characters.
fn random_secret() -> SecretString {
    SecretString::from(
        (0..2)
            .map(|_| uuid::Uuid::new_v4().simple().to_string())
            .collect::<String>(),
    )
}

/// What [`Stack::stop_tool_service`] and [`Stack::restart_tool_service`] ask
/// of the tool-service's supervisor; each is answered once done.
enum ToolServiceCommand {
    Stop(oneshot::Sender<anyhow::Result<()>>),
    Start(oneshot::Sender<anyhow::Result<()>>),
}

/// Serves the tool-service until the stack stops. On `Stop` its `serve` is
/// shut down (in-flight calls finish, the listeners close); on `Start` a new
/// service is built from `config` (same databases, same secrets) and served
/// on listeners bound again to the same addresses.
async fn supervise_tool_service(
    config: chataigne_tools::Config,
    service: chataigne_tools::ToolService,
    listeners: chataigne_tools::Listeners,
    stop: CancellationToken,
    mut commands: mpsc::Receiver<ToolServiceCommand>,
) -> anyhow::Result<()> {
    let addr = listeners.grpc.local_addr()?;
    let metrics_addr = listeners
        .metrics
        .as_ref()
        .map(TcpListener::local_addr)
        .transpose()?;
    let mut running = Some((service, listeners));
    loop {
        if let Some((service, listeners)) = running.take() {
            let paused = stop.child_token();
            let signal = paused.clone();
            let serving = service.serve(listeners, async move { signal.cancelled().await });
            tokio::pin!(serving);
            loop {
                tokio::select! {
                    result = &mut serving => return result,
                    command = commands.recv() => match command {
                        Some(ToolServiceCommand::Stop(reply)) => {
                            paused.cancel();
                            let result = (&mut serving).await;
                            let _ = reply.send(result);
                            break;
                        }
                        Some(ToolServiceCommand::Start(reply)) => {
                            let _ = reply.send(Ok(()));
                        }
                        None => return (&mut serving).await,
                    },
                }
            }
        }
        tokio::select! {
            () = stop.cancelled() => return Ok(()),
            command = commands.recv() => match command {
                Some(ToolServiceCommand::Start(reply)) => match rebind_tool_service(&config, addr, metrics_addr).await {
                    Ok(next) => {
                        running = Some(next);
                        let _ = reply.send(Ok(()));
                    }
                    Err(error) => {
                        let _ = reply.send(Err(error));
                    }
                },
                Some(ToolServiceCommand::Stop(reply)) => {
                    let _ = reply.send(Ok(()));
                }
                None => {
                    stop.cancelled().await;
                    return Ok(());
                }
            },
        }
    }
}

/// Binds `addr` (and the metrics address) again and builds the tool-service
/// from `config`.
async fn rebind_tool_service(
    config: &chataigne_tools::Config,
    addr: std::net::SocketAddr,
    metrics_addr: Option<std::net::SocketAddr>,
) -> anyhow::Result<(chataigne_tools::ToolService, chataigne_tools::Listeners)> {
    let grpc = TcpListener::bind(addr)
        .await
        .with_context(|| format!("binding {addr} again"))?;
    let metrics = match metrics_addr {
        Some(metrics_addr) => Some(
            TcpListener::bind(metrics_addr)
                .await
                .with_context(|| format!("binding {metrics_addr} again"))?,
        ),
        None => None,
    };
    let listeners = chataigne_tools::Listeners { grpc, metrics };
    let service = chataigne_tools::ToolService::build(config)
        .await
        .context("tool-service")?;
    Ok((service, listeners))
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
        self.token_for_resource(user_id, scopes, ttl, &self.mcp_url)
            .await
    }

    /// The URL of the gateway's endpoint at `path` (e.g. `/mcp/v2`): also
    /// the audience of its tokens.
    pub fn endpoint_url(&self, path: &str) -> String {
        format!("{}{path}", self.gateway_url)
    }

    /// A bearer token for `user_id` through the demo client, for `resource`
    /// (an endpoint URL: tokens of one endpoint are refused by the others).
    pub async fn token_for_resource(
        &self,
        user_id: &str,
        scopes: &[&str],
        ttl: Option<std::time::Duration>,
        resource: &str,
    ) -> anyhow::Result<String> {
        let issued = self
            .auth
            .issue_access_token(IssueTokenRequest {
                user_id: user_id.to_owned(),
                client_id: chataigne_common::demo::DEMO_CLIENT_ID.to_owned(),
                scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
                resource: resource.to_owned(),
                ttl,
            })
            .await?;
        Ok(issued.access_token)
    }

    /// Stops the tool-service as its shutdown signal would: it refuses new
    /// connections, lets in-flight calls finish, then releases its port. The
    /// other services keep running. Stopping a stopped tool-service is a no-op.
    pub async fn stop_tool_service(&self) -> anyhow::Result<()> {
        self.command_tool_service(ToolServiceCommand::Stop).await
    }

    /// Starts the tool-service again (stopping it first if it runs): a new
    /// instance built from the same configuration, without seeding again,
    /// listening on the same address, so nothing in front of it is
    /// reconfigured. Returns once it accepts connections.
    pub async fn restart_tool_service(&self) -> anyhow::Result<()> {
        self.command_tool_service(ToolServiceCommand::Stop).await?;
        self.command_tool_service(ToolServiceCommand::Start).await
    }

    async fn command_tool_service(
        &self,
        command: fn(oneshot::Sender<anyhow::Result<()>>) -> ToolServiceCommand,
    ) -> anyhow::Result<()> {
        let (reply, answer) = oneshot::channel();
        self.tool_service
            .send(command(reply))
            .await
            .map_err(|_| anyhow::anyhow!("the tool-service's supervisor has ended"))?;
        answer
            .await
            .map_err(|_| anyhow::anyhow!("the tool-service's supervisor has ended"))?
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

    /// Stops the services front to back — the gateway, then the
    /// tool-service, then the auth-service — each once the one in front has
    /// drained: an in-flight request still reaches the services behind it.
    pub async fn shutdown(mut self) -> anyhow::Result<()> {
        let stages = [
            ("gateway", self.stop_gateway.clone()),
            ("tool-service", self.stop_tools.clone()),
            ("auth-service", self.stop.clone()),
        ];
        for (stage, stop) in stages {
            stop.cancel();
            while let Some(joined) = self.tasks.join_next().await {
                let (name, result) = joined?;
                result.with_context(|| format!("{name} failed"))?;
                if name == stage {
                    break;
                }
            }
        }
        Ok(())
    }
}
