//! Embedded Chataigne: the whole stack on loopback with SQLite files and the
//! demo tenant set. Prints the MCP URL, the OAuth issuer, the tool-service's
//! gRPC address, a demo manager's bearer token and a ready `curl` line, then
//! serves until Ctrl-C or SIGTERM. With a subcommand it administers the
//! embedded stack of its `--data-dir` instead (users, clients and service
//! accounts, roles, memberships, consents, sessions, signing keys, the write
//! switch), through the same library functions as the auth-service's and the
//! tool-service's own administration commands.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chataigne_common::telemetry::{self, LogFormat};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Run the whole Chataigne MCP stack locally (embedded mode)", version = chataigne_common::metrics::version_line())]
struct Args {
    /// Directory of the SQLite databases.
    #[arg(
        long,
        default_value = ".chataigne",
        env = "CHATAIGNE_DATA_DIR",
        global = true
    )]
    data_dir: PathBuf,
    /// Port of the MCP endpoint on 127.0.0.1 (0: any free port).
    #[arg(long, default_value_t = 8080, env = "CHATAIGNE_PORT")]
    port: u16,
    /// Lifetime of the printed demo token, in hours.
    #[arg(long, default_value_t = 12)]
    token_hours: u64,
    /// Client profile of the MCP endpoint: `default` (structured content,
    /// every failure an `isError` result) or `google` (the Connected Apps
    /// Platform: JSON payload as text, fatal failures as JSON-RPC errors with
    /// the platform's codes).
    #[arg(long, default_value = "default", env = "CHATAIGNE_PROFILE", value_parser = ["default", "google"])]
    profile: String,
    /// Administer the embedded stack of `--data-dir` (it may be running)
    /// instead of serving it.
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// The run-time switch of every write tool, read before each write.
    Writes {
        #[command(subcommand)]
        action: chataigne_tools::ops::WritesAction,
    },
    #[command(flatten)]
    Admin(chataigne_auth::admin_cli::AdminCommand),
}

/// Runs one administration command on the embedded stack of `data_dir`
/// (`migrate` migrates both of its databases).
async fn administer(data_dir: &Path, command: Command) -> anyhow::Result<()> {
    let tools = || -> anyhow::Result<chataigne_tools::Config> {
        let mut config = chataigne_tools::Config::default();
        chataigne_tools::ops::use_data_dir(&mut config, data_dir)?;
        config.validate()?;
        Ok(config)
    };
    match command {
        Command::Writes { action } => {
            println!("{}", chataigne_tools::ops::writes(&tools()?, action).await?);
            Ok(())
        }
        Command::Admin(admin) => {
            if let chataigne_auth::admin_cli::AdminCommand::Migrate = admin {
                chataigne_tools::ops::migrate(&tools()?).await?;
            }
            let mut config = chataigne_auth::Config::default();
            chataigne_auth::admin_cli::use_data_dir(&mut config, data_dir)?;
            config.validate()?;
            chataigne_auth::admin_cli::run(config, admin).await
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(command) = args.command {
        return administer(&args.data_dir, command).await;
    }
    telemetry::init("chataigne", LogFormat::Text);
    std::fs::create_dir_all(&args.data_dir)?;
    let mut config = chataigne::StackConfig::embedded(&args.data_dir);
    config.gateway_port = args.port;
    if args.profile == "google" {
        for endpoint in &mut config.gateway.endpoints {
            endpoint.profile = chataigne_gateway::Profile::Google;
        }
    }
    let mut stack = chataigne::start(config).await?;
    let token = stack
        .token_for(
            chataigne_common::demo::USER_MANAGER,
            &chataigne_common::demo::demo_token_scopes(),
            Some(Duration::from_secs(args.token_hours * 3600)),
        )
        .await?;
    println!("MCP_URL={}", stack.mcp_url);
    println!("MCP_PROFILE={}", args.profile);
    // Every other configured endpoint (e.g. `/mcp/v2`, MCP 2026-07-28), with
    // a token of its own audience, named after its path's last segment.
    for (path, revision) in &stack.endpoints {
        let url = stack.endpoint_url(path);
        if url == stack.mcp_url {
            continue;
        }
        let token = stack
            .token_for_resource(
                chataigne_common::demo::USER_MANAGER,
                &chataigne_common::demo::demo_token_scopes(),
                Some(Duration::from_secs(args.token_hours * 3600)),
                &url,
            )
            .await?;
        let name = endpoint_variable(path);
        println!("MCP_{name}_URL={url}");
        println!("MCP_{name}_REVISION={revision}");
        println!("MCP_{name}_TOKEN={token}");
    }
    // The OAuth issuer (sign-in, token endpoint, metadata) and the
    // tool-service's gRPC API (internal callers, service accounts).
    println!("AUTH_ISSUER={}", stack.auth_http_url);
    println!("TOOL_SERVICE_GRPC={}", stack.tools_grpc_url);
    println!("MCP_TOKEN={token}");
    println!(
        "curl -sS {} -H 'Authorization: Bearer {token}' -H 'Content-Type: application/json' \
-H 'Accept: application/json, text/event-stream' \
-d '{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{{\"name\":\"chataigne_orders_list\",\"arguments\":{{\"limit\":3}}}}}}'",
        stack.mcp_url
    );
    let failed = tokio::select! {
        () = chataigne_common::shutdown::signal() => None,
        result = stack.stopped() => Some(result),
    };
    match failed {
        None => stack.shutdown().await,
        Some(result) => result,
    }
}

/// The variable name part of an endpoint at `path`: its last segment, in
/// capitals, other characters as `_` (`/mcp/v2` → `V2`).
fn endpoint_variable(path: &str) -> String {
    path.rsplit('/')
        .find(|segment| !segment.is_empty())
        .unwrap_or("ROOT")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}
