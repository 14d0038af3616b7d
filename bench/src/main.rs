//! `chataigne-bench`: throughput and latency of MCP `tools/call` through the
//! whole stack (the gateway, auth-service and tool-service binaries as
//! processes of their own on PostgreSQL and Redis), side by side with the
//! tool-service called directly over gRPC, a bare axum JSON endpoint, a
//! server built with the Python MCP SDK (one worker process per core) and a
//! single-process one built with rmcp (the Rust SDK; feature `rmcp-peer`)
//! serving the same query from the same data, with the per-call budget (CPU
//! per process, round trips) of each measurement. Then latency as
//! concurrency grows and as the orders table grows, and the performance
//! targets.
//!
//! Every measurement is bounded by a request budget and a time window; every
//! server listens on loopback only. Figures are printed, never asserted.

mod budget;
mod data;
mod drive;
mod load;
mod peers;
mod report;
#[cfg(feature = "rmcp-peer")]
mod rmcp_peer;
mod rounds;
mod targets;
mod topology;

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use chataigne_common::demo;
use chataigne_proto::tools::v1::ListToolsRequest;
use chataigne_proto::tools::v1::tool_catalog_client::ToolCatalogClient;
use clap::Parser;
use serde_json::json;
use sqlx::{Connection, PgConnection, Row as _};

use crate::load::{Plan, Stats};
use crate::report::{Row, SizePoint};
use crate::rounds::Target;
use crate::targets::{DirectGrpc, McpHttp, ToolCall};
use crate::topology::Topology;

/// Benchmarks MCP tools/call through the full stack beside its baselines.
#[derive(Debug, Parser)]
#[command(name = "chataigne-bench")]
struct Args {
    /// PostgreSQL server (an existing database on it) where the benchmark
    /// creates its own databases.
    #[arg(
        long,
        env = "CHATAIGNE_TEST_POSTGRES_URL",
        default_value = "postgres://postgres@127.0.0.1:5432/test"
    )]
    postgres: String,
    /// Approximate size of the orders table of the comparison table.
    #[arg(long, default_value_t = 100_000)]
    orders: u64,
    /// Concurrent clients of the comparison table (each scenario also runs with one).
    #[arg(long, default_value_t = 64)]
    concurrency: usize,
    /// Measuring window of each comparison row, in seconds.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Unrecorded warm-up before each measurement, in seconds.
    #[arg(long, default_value_t = 1.0)]
    warmup: f64,
    /// Upper bound of measured requests per measurement.
    #[arg(long, default_value_t = 200_000)]
    max_requests: u64,
    /// Concurrency levels of the concurrency curve (full stack, orders listing).
    #[arg(long, value_delimiter = ',', default_value = "1,4,16,64,128,256")]
    levels: Vec<usize>,
    /// Orders-table sizes of the size curve.
    #[arg(long, value_delimiter = ',', default_value = "10000,100000,300000")]
    sizes: Vec<u64>,
    /// Size curve up to one million orders (building it once takes minutes).
    #[arg(long)]
    full: bool,
    /// Measuring window of each curve point, in seconds.
    #[arg(long, default_value_t = 3.0)]
    curve_seconds: f64,
    /// Redis of the gateway's rate limits and idempotency entries.
    #[arg(
        long,
        env = "CHATAIGNE_TEST_REDIS_URL",
        default_value = "redis://127.0.0.1:6379"
    )]
    redis: String,
    /// Run the gateway with its in-process stores instead of Redis.
    #[arg(long)]
    no_redis: bool,
    /// Leave out the Python peer (no virtual environment is created).
    #[arg(long)]
    no_python: bool,
    /// Only the comparison table.
    #[arg(long)]
    no_curves: bool,
    /// Only load the full stack (orders listing at --concurrency) for this
    /// many seconds, e.g. under a profiler, and print nothing else.
    #[arg(long)]
    soak: Option<f64>,
    /// Rounds of the comparison: each measures every target once in turn;
    /// rows show the median round, ratios the median of same-round ratios.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Directory of the service binaries (default: this binary's).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Option<Command>,
    /// Directory of the Python peer (peer.py, requirements.txt).
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/python"))]
    python_dir: PathBuf,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Start the production topology (the three service binaries as
    /// processes on PostgreSQL + Redis, on a fresh copy of the benchmark
    /// data), print its URLs and a token, and serve until Ctrl-C, for an
    /// outside load driver or profiler.
    ServeStack,
    /// The load generator of one measurement (started by the benchmark
    /// itself: a request on stdin, statistics on stdout).
    #[command(hide = true)]
    Drive,
    /// Serve the rmcp peer (used by the benchmark itself).
    #[cfg(feature = "rmcp-peer")]
    RmcpPeer {
        #[arg(long)]
        port: u16,
        #[arg(long)]
        database_url: String,
    },
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    match &args.command {
        None => runtime.block_on(bench(args)),
        Some(Command::ServeStack) => runtime.block_on(serve_stack(args)),
        Some(Command::Drive) => runtime.block_on(drive::serve()),
        #[cfg(feature = "rmcp-peer")]
        Some(Command::RmcpPeer { port, database_url }) => {
            runtime.block_on(rmcp_peer::serve(*port, database_url))
        }
    }
}

fn bin_dir(args: &Args) -> anyhow::Result<PathBuf> {
    match &args.bin_dir {
        Some(dir) => Ok(dir.clone()),
        None => Ok(std::env::current_exe()
            .context("locating this binary")?
            .parent()
            .context("this binary has no directory")?
            .to_path_buf()),
    }
}

async fn start_stack(args: &Args, auth_url: &str, tools_url: &str) -> anyhow::Result<Topology> {
    let bin_dir = bin_dir(args)?;
    let settings = topology::Settings {
        bin_dir: &bin_dir,
        auth_database: auth_url,
        tools_database: tools_url,
        redis: (!args.no_redis).then_some(args.redis.as_str()),
    };
    topology::start(&settings)
        .await
        .context("starting the stack")
}

/// `serve-stack`: the topology on a fresh copy of the benchmark data until Ctrl-C.
async fn serve_stack(args: Args) -> anyhow::Result<()> {
    let server = data::Server::new(&args.postgres);
    let (tools_url, orders) = server.tool_database(args.orders).await?;
    let auth_url = server.fresh_auth_database().await?;
    let served = async {
        let stack = start_stack(&args, &auth_url, &tools_url).await?;
        println!("orders={orders}");
        println!("mcp_url={}", stack.mcp_url);
        println!("tools_grpc_url={}", stack.tools_grpc_url);
        println!("auth_grpc_url={}", stack.auth_grpc_url);
        for (name, url) in &stack.metrics_urls {
            println!("metrics_{}={url}", name.replace('-', "_"));
        }
        for (name, pid) in stack.pids() {
            println!("pid_{}={pid}", name.replace('-', "_"));
        }
        println!("token={}", stack.token);
        eprintln!("serving until Ctrl-C…");
        tokio::signal::ctrl_c().await?;
        drop(stack);
        anyhow::Ok(())
    }
    .await;
    server.drop_run_databases().await?;
    served
}

fn orders_list() -> ToolCall {
    ToolCall::fixed(
        "chataigne_orders_list",
        json!({"location_id": demo::LOC_PARIS, "limit": 20}),
    )
}

/// The second tool of the table: a write when the catalogue has one this
/// benchmark knows how to call repeatedly, else a second read.
async fn second_tool(tools_grpc_url: &str, tools_url: &str) -> anyhow::Result<(ToolCall, bool)> {
    let mut catalog = ToolCatalogClient::connect(tools_grpc_url.to_owned()).await?;
    let names: Vec<String> = catalog
        .list_tools(ListToolsRequest {})
        .await?
        .into_inner()
        .tools
        .into_iter()
        .map(|tool| tool.name)
        .collect();
    let mut db = PgConnection::connect(tools_url).await?;
    if names
        .iter()
        .any(|n| n == "chataigne_conversation_message_send")
    {
        // Writes spread over the location's conversations (one row would
        // turn the measurement into lock waits on it), each with a key never
        // used before in any measurement or run (a reused key is a replay).
        let conversations: Vec<String> = sqlx::query_scalar(
            "SELECT id FROM conversations WHERE location_id = $1 ORDER BY id LIMIT 500",
        )
        .bind(demo::LOC_PARIS)
        .fetch_all(&mut db)
        .await?;
        anyhow::ensure!(
            !conversations.is_empty(),
            "the benchmark location has no conversation"
        );
        let run = format!(
            "{:x}{:x}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |elapsed| elapsed.as_nanos())
        );
        let call = ToolCall {
            name: "chataigne_conversation_message_send".to_owned(),
            template: json!({"text": "Your order is on its way."}),
            rotate: Some(("conversation_id".to_owned(), conversations)),
            keys: Some(format!("bench-{run}")),
        };
        return Ok((call, true));
    }
    let order: String = sqlx::query(
        "SELECT id FROM orders WHERE location_id = $1 ORDER BY created_at_ms DESC, id DESC LIMIT 1",
    )
    .bind(demo::LOC_PARIS)
    .fetch_one(&mut db)
    .await?
    .try_get(0)?;
    let call = ToolCall::fixed("chataigne_order_get", json!({"order_id": order}));
    Ok((call, false))
}

fn plan(args: &Args, concurrency: usize, window: f64) -> Plan {
    Plan {
        concurrency,
        max_requests: args.max_requests,
        warmup: Duration::from_secs_f64(args.warmup.max(0.0)),
        window: Duration::from_secs_f64(window.max(0.1)),
    }
}

fn progress(what: &str, stats: &Stats) {
    eprintln!(
        "  {what} c={}: {:.0} req/s, p50 {:.2} ms, p99 {:.2} ms, {} failed",
        stats.concurrency,
        stats.throughput(),
        stats.p50_ms(),
        stats.p99_ms(),
        stats.failures
    );
}

/// The counters of a measurement of `pids` (named processes).
fn probe(
    args: &Args,
    client: &reqwest::Client,
    tools_url: &str,
    stack: &Topology,
    pids: Vec<(String, u32)>,
    stack_metrics: bool,
) -> budget::Probe {
    budget::Probe {
        pids,
        redis: (!args.no_redis).then(|| args.redis.clone()),
        postgres_url: tools_url.to_owned(),
        metrics: if stack_metrics {
            stack
                .metrics_urls
                .iter()
                .skip(1)
                .map(|(_, url)| url.clone())
                .collect()
        } else {
            Vec::new()
        },
        client: client.clone(),
    }
}

fn stack_pids(stack: &Topology) -> Vec<(String, u32)> {
    stack
        .pids()
        .into_iter()
        .map(|(name, pid)| (name.to_owned(), pid))
        .collect()
}

async fn bench(args: Args) -> anyhow::Result<()> {
    let machine_before = report::machine();
    eprintln!("machine: {machine_before}");
    let python = if args.no_python {
        None
    } else {
        Some(peers::python_venv(&args.python_dir)?)
    };
    let server = data::Server::new(&args.postgres);
    let (tools_url, orders) = server.tool_database(args.orders).await?;
    let auth_url = server.fresh_auth_database().await?;
    let stack = start_stack(&args, &auth_url, &tools_url).await?;
    let client = targets::http_client(args.concurrency.max(256))?;

    let read = orders_list();
    let (second, second_is_write) = second_tool(&stack.tools_grpc_url, &tools_url).await?;
    let full_read = McpHttp::new(
        client.clone(),
        &stack.mcp_url,
        Some(&stack.token),
        read.clone(),
    );
    let full_second = McpHttp::new(
        client.clone(),
        &stack.mcp_url,
        Some(&stack.token),
        second.clone(),
    );
    let direct_read = DirectGrpc::connect(
        &stack.tools_grpc_url,
        &stack.auth_grpc_url,
        &stack.token,
        &stack.mcp_url,
        &stack.gateway_credential,
        read.clone(),
    )
    .await?;
    let direct_second = DirectGrpc::connect(
        &stack.tools_grpc_url,
        &stack.auth_grpc_url,
        &stack.token,
        &stack.mcp_url,
        &stack.gateway_credential,
        second.clone(),
    )
    .await?;
    let answer = full_read.probe().await.context("full stack probe")?;
    let all = stack_pids(&stack);
    let tools_only: Vec<(String, u32)> = all
        .iter()
        .filter(|(name, _)| name != "gateway")
        .cloned()
        .collect();
    if let Some(seconds) = args.soak {
        let soak = Target {
            label: "full stack read".to_owned(),
            driven: full_read.driven(),
            reference: 0,
            probe: probe(&args, &client, &tools_url, &stack, all, true),
        };
        let measured = soak.measure(plan(&args, args.concurrency, seconds)).await;
        progress("full stack read", &measured.stats);
        eprintln!("  per call: {}", measured.budget.describe());
        drop(stack);
        return server.drop_run_databases().await;
    }
    full_second.probe().await.context("full stack probe")?;
    direct_read.probe().await.context("direct gRPC probe")?;
    direct_second.probe().await.context("direct gRPC probe")?;
    let bare_url = peers::bare_http(answer.clone()).await?;
    let bare = McpHttp::new(client.clone(), &bare_url, None, read.clone());
    bare.probe().await.context("bare HTTP probe")?;
    let python_peer = match &python {
        Some(python) => Some(peers::python_peer(python, &args.python_dir, &tools_url).await?),
        None => None,
    };
    #[cfg(feature = "rmcp-peer")]
    let rmcp_peer = Some(peers::rmcp_peer(&tools_url).await?);
    #[cfg(not(feature = "rmcp-peer"))]
    let rmcp_peer: Option<peers::PeerProcess> = {
        eprintln!("the rmcp peer is left out (build with --features rmcp-peer)");
        None
    };

    let second_label = if second_is_write {
        format!("{} (write)", second.name)
    } else {
        format!("{} (read; no write tool yet)", second.name)
    };
    let mut targets = vec![
        Target {
            label: format!("full stack · {}", read.name),
            driven: full_read.driven(),
            reference: 0,
            probe: probe(&args, &client, &tools_url, &stack, all.clone(), true),
        },
        Target {
            label: format!("tool-service gRPC direct · {}", read.name),
            driven: direct_read.driven(),
            reference: 0,
            probe: probe(&args, &client, &tools_url, &stack, tools_only.clone(), true),
        },
        Target {
            label: format!("full stack · {second_label}"),
            driven: full_second.driven(),
            reference: 2,
            probe: probe(&args, &client, &tools_url, &stack, all.clone(), true),
        },
        Target {
            label: format!("tool-service gRPC direct · {}", second.name),
            driven: direct_second.driven(),
            reference: 2,
            probe: probe(&args, &client, &tools_url, &stack, tools_only, true),
        },
        Target {
            label: "bare axum JSON endpoint (same body sizes)".to_owned(),
            driven: bare.driven(),
            reference: 0,
            probe: probe(
                &args,
                &client,
                &tools_url,
                &stack,
                vec![("bench".to_owned(), std::process::id())],
                false,
            ),
        },
    ];
    // The single-process peers, on the same query: each is probed once
    // (its answer size printed beside the stack's) and measured with the
    // processes that serve it.
    let mut peer_targets = Vec::new();
    if let Some(peer) = &rmcp_peer {
        peer_targets.push((
            "rmcp peer",
            format!("rmcp (Rust MCP SDK) server · {}", read.name),
            peer.url.clone(),
            vec![("rmcp peer".to_owned(), peer.pid())],
        ));
    }
    if let Some(peer) = &python_peer {
        peer_targets.push((
            "Python peer",
            format!("Python MCP SDK server · {}", read.name),
            peer.url.clone(),
            // Its worker processes are members of its process group.
            peer.processes()
                .into_iter()
                .map(|pid| ("Python peer".to_owned(), pid))
                .collect(),
        ));
    }
    let (mut rmcp_index, mut python_index) = (None, None);
    for (name, label, url, pids) in peer_targets {
        let target = McpHttp::new(client.clone(), &url, None, read.clone());
        let body = target
            .probe()
            .await
            .with_context(|| format!("{name} probe"))?;
        eprintln!(
            "answer sizes: full stack {} bytes, {name} {} bytes",
            answer.len(),
            body.len()
        );
        let index = Some(targets.len());
        if name == "rmcp peer" {
            rmcp_index = index;
        } else {
            python_index = index;
        }
        targets.push(Target {
            label,
            driven: target.driven(),
            reference: 0,
            probe: probe(&args, &client, &tools_url, &stack, pids, false),
        });
    }

    eprintln!(
        "comparison on {orders} orders, {} interleaved rounds…",
        args.rounds.max(1)
    );
    let mut rows = Vec::new();
    let mut measured_at = Vec::new();
    for concurrency in [1, args.concurrency] {
        let results = rounds::run(
            &targets,
            plan(&args, concurrency, args.seconds),
            args.rounds,
            progress,
        )
        .await;
        for (index, target) in targets.iter().enumerate() {
            let Some(middle) = rounds::median_round(&results[index]) else {
                continue;
            };
            let ratio = rounds::paired(&results[index], &results[target.reference], |a, b| {
                a.throughput() / b.throughput()
            });
            rows.push(Row {
                scenario: target.label.clone(),
                stats: middle.stats.clone(),
                ratio: Some(ratio),
                budget: middle.budget.clone(),
            });
        }
        measured_at.push(results);
    }

    let mut curve = Vec::new();
    if !args.no_curves {
        eprintln!("concurrency curve…");
        for &level in &args.levels {
            let measured = targets[0]
                .measure(plan(&args, level, args.curve_seconds))
                .await;
            progress("full stack read", &measured.stats);
            curve.push(measured.stats);
        }
    }
    drop(targets);
    drop(python_peer);
    drop(rmcp_peer);
    drop(stack);

    let mut sizes = Vec::new();
    if !args.no_curves {
        let mut wanted = args.sizes.clone();
        if args.full && !wanted.contains(&1_000_000) {
            wanted.push(1_000_000);
        }
        for size in wanted {
            let (tools_url, orders) = server.tool_database(size).await?;
            let auth_url = server.fresh_auth_database().await?;
            let stack = start_stack(&args, &auth_url, &tools_url).await?;
            let target = McpHttp::new(
                client.clone(),
                &stack.mcp_url,
                Some(&stack.token),
                read.clone(),
            );
            target.probe().await?;
            let target = Target {
                label: "full stack read".to_owned(),
                driven: target.driven(),
                reference: 0,
                probe: probe(&args, &client, &tools_url, &stack, stack_pids(&stack), true),
            };
            eprintln!("size curve: {orders} orders…");
            let single = target
                .measure(plan(&args, 1, args.curve_seconds))
                .await
                .stats;
            progress("full stack read", &single);
            let loaded = target
                .measure(plan(&args, args.concurrency, args.curve_seconds))
                .await
                .stats;
            progress("full stack read", &loaded);
            sizes.push(SizePoint {
                orders,
                single,
                loaded,
            });
        }
    }
    server.drop_run_databases().await?;

    // The targets, from the rounds of the comparison (index 0: one client,
    // index 1: --concurrency clients) and the size curve.
    let at = |level: usize, index: usize| measured_at.get(level).and_then(|r| r.get(index));
    let loaded_full = at(1, 0);
    let cpu_per_call = loaded_full.map(|rounds| {
        rounds::median(
            rounds
                .iter()
                .map(|m| m.budget.total_cpu_us() / 1000.0)
                .collect(),
        )
    });
    let versus = |index: Option<usize>| {
        let other = at(1, index?)?;
        Some(rounds::paired(loaded_full?, other, |a, b| {
            a.throughput() / b.throughput()
        }))
    };
    let overhead = match (at(0, 0), at(0, 1)) {
        (Some(full), Some(direct)) => {
            Some(rounds::paired(full, direct, |a, b| a.p50_ms() - b.p50_ms()))
        }
        _ => None,
    };
    let p99 =
        loaded_full.map(|rounds| rounds::median(rounds.iter().map(|m| m.stats.p99_ms()).collect()));
    let size_drift = {
        let small = sizes.iter().find(|p| p.orders <= 20_000);
        let large = sizes.iter().find(|p| p.orders >= 900_000);
        match (small, large) {
            (Some(small), Some(large)) => {
                Some((large.single.p50_ms() / small.single.p50_ms() - 1.0) * 100.0)
            }
            _ => None,
        }
    };
    let goals = [
        report::Goal {
            what: "CPU per full-stack read call, all processes (ms)",
            now: cpu_per_call,
            unit: " ms",
            target: "≤ 0.8 ms",
            met: |v| v <= 0.8,
        },
        report::Goal {
            what: "full stack / rmcp peer throughput at --concurrency",
            now: versus(rmcp_index),
            unit: "×",
            target: "≥ 0.8×",
            met: |v| v >= 0.8,
        },
        report::Goal {
            what: "full stack / Python peer throughput at --concurrency",
            now: versus(python_index),
            unit: "×",
            target: "≥ 4×",
            met: |v| v >= 4.0,
        },
        report::Goal {
            what: "full stack p50 − direct gRPC p50 at 1 client",
            now: overhead,
            unit: " ms",
            target: "≤ 0.5 ms",
            met: |v| v <= 0.5,
        },
        report::Goal {
            what: "full stack p99 at --concurrency",
            now: p99,
            unit: " ms",
            target: "≤ 45 ms",
            met: |v| v <= 45.0,
        },
        report::Goal {
            what: "p50 at 1M orders vs 10k (1 client)",
            now: size_drift,
            unit: " %",
            target: "within 10 %",
            met: |v| v.abs() <= 10.0,
        },
    ];

    println!(
        "## tools/call on {orders} orders (median of {} interleaved rounds)\n",
        args.rounds.max(1)
    );
    println!("{}", report::comparison(&rows));
    println!("## Per-call budget of the median round\n");
    println!("{}", report::budgets(&rows));
    if !curve.is_empty() {
        println!(
            "{}",
            report::concurrency_curve(
                &format!(
                    "## Full stack, {} on {orders} orders, by concurrency",
                    read.name
                ),
                &curve
            )
        );
    }
    if !sizes.is_empty() {
        println!(
            "{}",
            report::size_curve(
                &format!("## Full stack, {}, by orders-table size", read.name),
                &sizes
            )
        );
    }
    println!("## Targets (concurrency {})\n", args.concurrency);
    println!("{}", report::goals(&goals));
    println!(
        "Machine: {machine_before}; load average after: {}",
        report::load_average()
    );
    Ok(())
}
