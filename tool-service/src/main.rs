//! The tool-service binary: loads configuration, starts telemetry, then
//! serves gRPC until SIGTERM (default), applies the migrations (`migrate`),
//! fills the store with generated data at scale (`seed`), or flips the
//! run-time write switch (`writes disable [--reason …] | enable | status`).

use std::path::PathBuf;

use chataigne_common::telemetry::{self, LogFormat};
use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(about = "Chataigne tool-service (gRPC)", version = chataigne_common::metrics::version_line())]
struct Args {
    /// TOML configuration file; `CHATAIGNE_*` variables override it.
    #[arg(long, env = "CHATAIGNE_CONFIG", global = true)]
    config: Option<PathBuf>,
    /// Operator commands: act on the embedded stack whose data directory
    /// this is (the launcher's `--data-dir`, e.g. `.chataigne`).
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
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
    /// The run-time switch of every write tool, read live by every replica
    /// before each write.
    Writes {
        #[command(subcommand)]
        action: chataigne_tools::ops::WritesAction,
    },
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
            "tool-service",
            &chataigne_tools::Config::default(),
            args.config.as_deref(),
            chataigne_tools::Config::validate_serving,
        );
    }
    let mut config: chataigne_tools::Config = chataigne_common::config::load(
        &chataigne_tools::Config::default(),
        args.config.as_deref(),
    )?;
    if let Some(dir) = &args.data_dir {
        chataigne_tools::ops::use_data_dir(&mut config, dir)?;
    }
    if !matches!(args.command, None | Some(Command::Serve)) {
        config
            .database
            .named_for_administration(
                &chataigne_tools::Config::default().database,
                args.data_dir.is_some(),
            )
            .map_err(anyhow::Error::msg)?;
    }
    config.validate()?;
    // Error reporting first: the telemetry subscriber then reports to it.
    let _reporting = chataigne_common::error_reporting::start("tool-service", &config.sentry)?;
    telemetry::init("tool-service", LogFormat::Json);
    match args.command.unwrap_or(Command::Serve) {
        Command::Serve => {
            let grpc = tokio::net::TcpListener::bind(&config.listen).await?;
            tracing::info!(addr = %grpc.local_addr()?, "tool-service listening");
            let metrics = match &config.metrics_listen {
                Some(addr) => Some(tokio::net::TcpListener::bind(addr).await?),
                None => None,
            };
            let listeners = chataigne_tools::Listeners { grpc, metrics };
            let served =
                chataigne_tools::run(config, listeners, chataigne_common::shutdown::signal()).await;
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
        Command::Writes { action } => {
            println!("{}", chataigne_tools::ops::writes(&config, action).await?);
            Ok(())
        }
        Command::Config(ConfigCommand::Check) => Ok(()),
    }
}
