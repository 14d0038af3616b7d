//! The production topology as child processes: the real `chataigne-auth-service`,
//! `chataigne-tool-service` and `chataigne-gateway` binaries, configured
//! through `CHATAIGNE_*` variables, on PostgreSQL (and Redis), each on
//! loopback ports of its own, so the load generator, a profiler or the
//! per-call budget see every process apart.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use chataigne_auth::{AuthApp, IssueTokenRequest};
use chataigne_common::demo;
use secrecy::{ExposeSecret, SecretString};

/// Where the three services and their databases are.
pub struct Settings<'a> {
    /// Directory holding the three release binaries.
    pub bin_dir: &'a Path,
    pub auth_database: &'a str,
    pub tools_database: &'a str,
    /// Redis of the gateway's limits (`None`: in-process stores).
    pub redis: Option<&'a str>,
}

/// The three running services, stopped on drop.
pub struct Topology {
    pub mcp_url: String,
    pub auth_grpc_url: String,
    pub tools_grpc_url: String,
    /// `/metrics` of the gateway, the auth-service and the tool-service.
    pub metrics_urls: [(&'static str, String); 3],
    /// A demo manager's bearer token for `mcp_url`.
    pub token: String,
    /// The credential the gateway presents to `Authenticate` (the direct
    /// gRPC target stands in for the gateway).
    pub gateway_credential: String,
    children: Vec<(&'static str, Child)>,
}

impl Topology {
    /// The services' process ids, by name.
    pub fn pids(&self) -> Vec<(&'static str, u32)> {
        self.children
            .iter()
            .map(|(name, child)| (*name, child.id()))
            .collect()
    }
}

impl Drop for Topology {
    fn drop(&mut self) {
        // The gateway first, the auth-service last (reverse start order).
        for (_, child) in self.children.iter_mut().rev() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The path of binary `name` in `bin_dir`, or an error saying how to build it.
fn binary(bin_dir: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let path = bin_dir.join(name);
    anyhow::ensure!(
        path.is_file(),
        "{} not found: build the services first (cargo build --release -p chataigne-gateway \
         -p chataigne-auth -p chataigne-tools) or set --bin-dir",
        path.display()
    );
    Ok(path)
}

/// A free loopback port for a service to bind, below the kernel's ephemeral
/// range: the probe is released at once, and a port the kernel may hand to an
/// outgoing connection (the load generator opens hundreds) could be taken
/// before the service binds it. Successive calls never return the same port.
pub(crate) fn free_port() -> anyhow::Result<u16> {
    use std::sync::atomic::{AtomicU32, Ordering};
    const LOWEST: u32 = 10_000;
    static CURSOR: AtomicU32 = AtomicU32::new(0);
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u32>().ok())
        .filter(|low| *low > LOWEST + 1_000)
        .unwrap_or(32_768);
    let span = ephemeral_low - LOWEST;
    // Processes running side by side start at different places.
    let start = std::process::id().wrapping_mul(7_919) % span;
    for _ in 0..span {
        let offset = (start + CURSOR.fetch_add(1, Ordering::Relaxed)) % span;
        let port = u16::try_from(LOWEST + offset)?;
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Ok(port);
        }
    }
    anyhow::bail!("no free loopback port below {ephemeral_low}")
}

/// 64 random hex characters (a shared secret of the two services).
fn random_secret() -> String {
    (0..2)
        .map(|_| uuid::Uuid::new_v4().simple().to_string())
        .collect()
}

fn spawn(
    binary: &Path,
    env: &[(&str, String)],
    name: &'static str,
) -> anyhow::Result<(&'static str, Child)> {
    let mut command = Command::new(binary);
    command
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    for (key, value) in env {
        command.env(key, value);
    }
    let child = command
        .spawn()
        .with_context(|| format!("starting {}", binary.display()))?;
    Ok((name, child))
}

/// Waits until `port` accepts connections, failing if `child` exits first.
async fn listening(child: &mut Child, name: &str, port: u16) -> anyhow::Result<()> {
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait()? {
            anyhow::bail!("{name} exited during start-up: {status}");
        }
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return Ok(());
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(60),
            "{name} did not listen on port {port} within 60 s"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Prepares the auth database (migrations, demo users, signing keys), issues
/// the token, then starts the three services and waits until they listen.
pub async fn start(settings: &Settings<'_>) -> anyhow::Result<Topology> {
    let auth_bin = binary(settings.bin_dir, "chataigne-auth-service")?;
    let tools_bin = binary(settings.bin_dir, "chataigne-tool-service")?;
    let gateway_bin = binary(settings.bin_dir, "chataigne-gateway")?;
    let [
        auth_grpc,
        auth_http,
        auth_metrics,
        tools_grpc,
        tools_metrics,
        public,
        internal,
    ] = [
        free_port()?,
        free_port()?,
        free_port()?,
        free_port()?,
        free_port()?,
        free_port()?,
        free_port()?,
    ];
    let loopback = |port: u16| format!("127.0.0.1:{port}");
    let http = |port: u16| format!("http://127.0.0.1:{port}");
    let issuer = http(auth_http);
    let gateway_url = http(public);
    let mcp_url = format!("{gateway_url}/mcp/v1");
    let kek = chataigne_auth::generate_kek()?;

    // The benchmark prepares the auth database itself and issues its token
    // from it; the service then finds the same keys (sealed under `kek`).
    let mut auth = chataigne_auth::Config::default();
    auth.database.url = SecretString::from(settings.auth_database.to_owned());
    auth.seed_demo = true;
    // The demo accounts on the benchmark's own database.
    auth.allow_insecure_development = true;
    auth.keys.encryption_key = Some(kek.clone());
    auth.issuer = issuer.clone();
    auth.oauth.allowed_resources = vec![mcp_url.clone()];
    let app = AuthApp::build(auth)
        .await
        .context("preparing the auth database")?;
    let token = app
        .issue_access_token(IssueTokenRequest {
            user_id: demo::USER_MANAGER.to_owned(),
            client_id: demo::DEMO_CLIENT_ID.to_owned(),
            scopes: demo::demo_token_scopes()
                .iter()
                .map(|s| (*s).to_owned())
                .collect(),
            resource: mcp_url.clone(),
            ttl: Some(Duration::from_secs(4 * 3600)),
        })
        .await
        .context("issuing the benchmark's token")?
        .access_token;
    drop(app);

    let idempotency = random_secret();
    // Only the gateway may call `Authenticate`: the same credential on both.
    let gateway_credential = random_secret();
    let mut children = Vec::new();
    let auth_env = [
        ("CHATAIGNE_GRPC_LISTEN", loopback(auth_grpc)),
        ("CHATAIGNE_HTTP_LISTEN", loopback(auth_http)),
        ("CHATAIGNE_METRICS_LISTEN", loopback(auth_metrics)),
        ("CHATAIGNE_ISSUER", issuer.clone()),
        ("CHATAIGNE_DATABASE__URL", settings.auth_database.to_owned()),
        ("CHATAIGNE_SEED_DEMO", "false".to_owned()),
        (
            "CHATAIGNE_KEYS__ENCRYPTION_KEY",
            kek.expose_secret().to_owned(),
        ),
        ("CHATAIGNE_OAUTH__ALLOWED_RESOURCES", mcp_url.clone()),
        ("CHATAIGNE_GATEWAY_CREDENTIAL", gateway_credential.clone()),
    ];
    children.push(spawn(&auth_bin, &auth_env, "auth-service")?);
    let tools_env = [
        ("CHATAIGNE_LISTEN", loopback(tools_grpc)),
        ("CHATAIGNE_METRICS_LISTEN", loopback(tools_metrics)),
        ("CHATAIGNE_AUTH_SERVICE_URL", http(auth_grpc)),
        (
            "CHATAIGNE_DATABASE__URL",
            settings.tools_database.to_owned(),
        ),
        ("CHATAIGNE_SEED_DEMO", "false".to_owned()),
        ("CHATAIGNE_IDEMPOTENCY__SECRET", idempotency.clone()),
        ("CHATAIGNE_CURSOR__KEYS", random_secret()),
    ];
    children.push(spawn(&tools_bin, &tools_env, "tool-service")?);
    let mut gateway_env = vec![
        ("CHATAIGNE_LISTEN", loopback(public)),
        ("CHATAIGNE_INTERNAL_LISTEN", loopback(internal)),
        ("CHATAIGNE_PUBLIC_URL", gateway_url.clone()),
        ("CHATAIGNE_AUTH_SERVICE_URL", http(auth_grpc)),
        ("CHATAIGNE_TOOL_SERVICE_URL", http(tools_grpc)),
        ("CHATAIGNE_AUTHORIZATION_SERVER", issuer.clone()),
        ("CHATAIGNE_GATEWAY_CREDENTIAL", gateway_credential.clone()),
        (
            "CHATAIGNE_ALLOWLIST__CIDRS",
            "127.0.0.0/8,::1/128".to_owned(),
        ),
        // One user calls one tool far above the production per-minute
        // limits: the limiter still counts every call, it never refuses one.
        (
            "CHATAIGNE_RATE_LIMITS__READS_PER_MINUTE",
            "10000000".to_owned(),
        ),
        (
            "CHATAIGNE_RATE_LIMITS__WRITES_PER_MINUTE",
            "10000000".to_owned(),
        ),
        (
            "CHATAIGNE_RATE_LIMITS__PER_IP_PER_MINUTE",
            "10000000".to_owned(),
        ),
    ];
    if let Some(redis) = settings.redis {
        gateway_env.push(("CHATAIGNE_REDIS__URL", redis.to_owned()));
        gateway_env.push((
            "CHATAIGNE_REDIS__KEY_PREFIX",
            format!("chataigne-bench-{}", std::process::id()),
        ));
    }
    children.push(spawn(&gateway_bin, &gateway_env, "gateway")?);
    let mut topology = Topology {
        mcp_url,
        auth_grpc_url: http(auth_grpc),
        tools_grpc_url: http(tools_grpc),
        metrics_urls: [
            ("gateway", format!("{}/metrics", http(internal))),
            ("auth-service", format!("{}/metrics", http(auth_metrics))),
            ("tool-service", format!("{}/metrics", http(tools_metrics))),
        ],
        token,
        gateway_credential,
        children: Vec::new(),
    };
    for ((name, mut child), port) in children.into_iter().zip([auth_grpc, tools_grpc, public]) {
        let ready = listening(&mut child, name, port).await;
        topology.children.push((name, child));
        ready?;
    }
    Ok(topology)
}
