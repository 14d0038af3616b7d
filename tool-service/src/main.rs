//! The tool-service binary: loads configuration, starts telemetry, binds the
//! gRPC listener and serves until SIGTERM.

use std::path::PathBuf;

use chataigne_common::telemetry::{self, LogFormat};
use clap::Parser;

#[derive(Parser)]
#[command(about = "Chataigne tool-service (gRPC)")]
struct Args {
    /// TOML configuration file; `CHATAIGNE_*` variables override it.
    #[arg(long, env = "CHATAIGNE_CONFIG")]
    config: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let config: chataigne_tools::Config = chataigne_common::config::load(
        &chataigne_tools::Config::default(),
        args.config.as_deref(),
    )?;
    config.validate()?;
    telemetry::init("tool-service", LogFormat::Json);
    let listener = tokio::net::TcpListener::bind(&config.listen).await?;
    tracing::info!(addr = %listener.local_addr()?, "tool-service listening");
    chataigne_tools::run(config, listener, chataigne_common::shutdown::signal()).await
}
