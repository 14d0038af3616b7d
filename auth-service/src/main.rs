//! The auth-service binary: serves (default), runs one administration
//! command against the configured database or, with `--data-dir`, an
//! embedded stack's (see `chataigne_auth::admin_cli`), or runs the
//! `smoke-test` of a deployment's sign-in and first tool call.

use std::path::PathBuf;

use anyhow::Context;
use chataigne_auth::Config;
use chataigne_auth::admin_cli::AdminCommand;
use chataigne_common::telemetry::{self, LogFormat};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Chataigne auth-service: OAuth 2.1 authorization server and gRPC AuthService", version = chataigne_common::metrics::version_line())]
struct Args {
    /// TOML configuration file; `CHATAIGNE_*` variables override it.
    #[arg(long, env = "CHATAIGNE_CONFIG", global = true)]
    config: Option<PathBuf>,
    /// Administration commands: act on the embedded stack whose data
    /// directory this is (the launcher's `--data-dir`, e.g. `.chataigne`).
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve gRPC and HTTP until SIGTERM (the default).
    Serve,
    /// Sign a user or a service account in through the real OAuth flow of a
    /// running deployment, call one tool and print its result.
    SmokeTest(chataigne_auth::SmokeTestArgs),
    /// The configuration: `config check` validates it as `serve` would and
    /// prints it with secrets redacted.
    #[command(subcommand)]
    Config(ConfigCommand),
    #[command(flatten)]
    Admin(AdminCommand),
}

#[derive(Subcommand)]
enum ConfigCommand {
    /// Load the file and environment, validate, print (exit 0 when valid).
    Check,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let command = args.command.unwrap_or(Command::Serve);
    if let Command::SmokeTest(smoke) = command {
        return chataigne_auth::smoke_test(smoke).await;
    }
    if let Command::Config(ConfigCommand::Check) = command {
        return chataigne_common::config_check::run(
            "auth-service",
            &Config::default(),
            args.config.as_deref(),
            Config::validate_serving,
        );
    }
    let mut config: Config =
        chataigne_common::config::load(&Config::default(), args.config.as_deref())?;
    if let Some(dir) = &args.data_dir {
        anyhow::ensure!(
            !matches!(command, Command::Serve),
            "--data-dir is for administration commands; the launcher serves an embedded stack"
        );
        chataigne_auth::admin_cli::use_data_dir(&mut config, dir)?;
    }
    if let Command::Admin(_) = command {
        config
            .database
            .named_for_administration(&Config::default().database, args.data_dir.is_some())
            .map_err(anyhow::Error::msg)?;
    }
    config.validate()?;
    match command {
        Command::Serve => serve(config).await,
        Command::SmokeTest(_) | Command::Config(_) => Ok(()),
        Command::Admin(admin) => chataigne_auth::admin_cli::run(config, admin).await,
    }
}

async fn serve(config: Config) -> anyhow::Result<()> {
    // Error reporting first: the telemetry subscriber then reports to it.
    let _reporting = chataigne_common::error_reporting::start("auth-service", &config.sentry)?;
    telemetry::init("auth-service", LogFormat::Json);
    let grpc = tokio::net::TcpListener::bind(&config.grpc_listen)
        .await
        .with_context(|| format!("binding grpc_listen {}", config.grpc_listen))?;
    let http = tokio::net::TcpListener::bind(&config.http_listen)
        .await
        .with_context(|| format!("binding http_listen {}", config.http_listen))?;
    let metrics = match &config.metrics_listen {
        Some(addr) => Some(
            tokio::net::TcpListener::bind(addr)
                .await
                .with_context(|| format!("binding metrics_listen {addr}"))?,
        ),
        None => None,
    };
    let listeners = chataigne_auth::Listeners {
        grpc,
        http,
        metrics,
    };
    let served = chataigne_auth::run(config, listeners, chataigne_common::shutdown::signal()).await;
    telemetry::shutdown();
    served
}
