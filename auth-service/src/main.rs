//! The auth-service binary: loads configuration, starts telemetry, binds the
//! gRPC and HTTP listeners and serves until SIGTERM or Ctrl-C.

use std::path::PathBuf;

use anyhow::Context;
use chataigne_common::telemetry::{self, LogFormat};
use clap::Parser;

#[derive(Parser)]
#[command(about = "Chataigne auth-service (gRPC AuthService, OAuth metadata and JWKS)")]
struct Args {
    /// TOML configuration file; `CHATAIGNE_*` variables override it.
    #[arg(long, env = "CHATAIGNE_CONFIG")]
    config: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let config: chataigne_auth::Config =
        chataigne_common::config::load(&chataigne_auth::Config::default(), args.config.as_deref())?;
    config.validate()?;
    telemetry::init("auth-service", LogFormat::Json);
    let grpc = tokio::net::TcpListener::bind(&config.grpc_listen)
        .await
        .with_context(|| format!("binding grpc_listen {}", config.grpc_listen))?;
    let http = tokio::net::TcpListener::bind(&config.http_listen)
        .await
        .with_context(|| format!("binding http_listen {}", config.http_listen))?;
    let listeners = chataigne_auth::Listeners { grpc, http };
    chataigne_auth::run(config, listeners, chataigne_common::shutdown::signal()).await
}
