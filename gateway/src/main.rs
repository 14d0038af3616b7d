//! The gateway binary: loads configuration (defaults, optional file, then
//! `CHATAIGNE_*` variables), starts JSON logs, binds both listeners and serves
//! until SIGTERM or Ctrl-C; `config check` validates the configuration and
//! prints it with secrets redacted.

use std::path::PathBuf;

use anyhow::Context;
use chataigne_common::telemetry::{self, LogFormat};
use chataigne_gateway::{Config, Listeners};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Chataigne MCP gateway (Streamable HTTP)", version = chataigne_common::metrics::version_line())]
struct Args {
    /// TOML configuration file; `CHATAIGNE_*` variables override it.
    #[arg(long, env = "CHATAIGNE_CONFIG", global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve until SIGTERM (the default).
    Serve,
    /// The configuration: `config check` validates it as `serve` would and
    /// prints it with secrets redacted.
    #[command(subcommand)]
    Config(ConfigCommand),
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Load the file and environment, validate, print (exit 0 when valid).
    Check,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if let Some(Command::Config(ConfigCommand::Check)) = args.command {
        return chataigne_common::config_check::run(
            "gateway",
            &Config::default(),
            args.config.as_deref(),
            Config::validate,
        );
    }
    let config: Config =
        chataigne_common::config::load(&Config::default(), args.config.as_deref())?;
    config.validate()?;
    // Error reporting first: the telemetry subscriber then reports to it.
    let _reporting = chataigne_common::error_reporting::start("gateway", &config.sentry)?;
    telemetry::init("gateway", LogFormat::Json);
    let public = tokio::net::TcpListener::bind(&config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    let internal = tokio::net::TcpListener::bind(&config.internal_listen)
        .await
        .with_context(|| format!("binding {}", config.internal_listen))?;
    let served = chataigne_gateway::run(
        config,
        Listeners { public, internal },
        chataigne_common::shutdown::signal(),
    )
    .await;
    telemetry::shutdown();
    served
}
