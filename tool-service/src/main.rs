//! The tool-service binary: loads configuration, starts telemetry, then
//! serves gRPC until SIGTERM (default), applies the migrations (`migrate`),
//! or fills the store with generated data at scale (`seed`).

use std::path::PathBuf;

use chataigne_common::telemetry::{self, LogFormat};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Chataigne tool-service (gRPC)")]
struct Args {
    /// TOML configuration file; `CHATAIGNE_*` variables override it.
    #[arg(long, env = "CHATAIGNE_CONFIG", global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the gRPC API (the default).
    Serve,
    /// Apply the database migrations and exit.
    Migrate,
    /// Load a generated data set (demo tenants plus generated locations) and
    /// rebuild the analytics rollup; loading twice is harmless.
    Seed {
        /// Generated locations added to the demo ones.
        #[arg(long, default_value_t = 50)]
        locations: u32,
        /// Days of order history, ending now.
        #[arg(long, default_value_t = 365)]
        days: u32,
        /// Average orders per location and day.
        #[arg(long, default_value_t = 25)]
        orders_per_day: u32,
        /// Seed of the generator; the same seed gives the same data.
        #[arg(long, default_value_t = 1)]
        seed: u64,
    },
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
    match args.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            let listener = tokio::net::TcpListener::bind(&config.listen).await?;
            tracing::info!(addr = %listener.local_addr()?, "tool-service listening");
            let served =
                chataigne_tools::run(config, listener, chataigne_common::shutdown::signal()).await;
            telemetry::shutdown();
            served
        }
        Command::Migrate => {
            chataigne_tools::ops::migrate(&config).await?;
            tracing::info!("migrations applied");
            Ok(())
        }
        Command::Seed {
            locations,
            days,
            orders_per_day,
            seed,
        } => {
            let spec = chataigne_tools::ops::ScaleSeed {
                extra_locations: locations,
                days,
                orders_per_location_per_day: orders_per_day,
                seed,
            };
            let report = chataigne_tools::ops::seed(&config, &spec).await?;
            tracing::info!(
                locations = report.locations,
                orders = report.orders,
                rows = report.rows,
                elapsed_ms = u64::try_from(report.elapsed.as_millis()).unwrap_or(u64::MAX),
                "data set loaded"
            );
            Ok(())
        }
    }
}
