//! `chataigne-bench`: throughput and latency of MCP `tools/call` through the
//! whole stack (gateway + auth-service + tool-service on PostgreSQL, started
//! in this process on loopback), side by side with the tool-service called
//! directly over gRPC, a bare axum JSON endpoint and a single-process server
//! built with the Python MCP SDK serving the same query from the same data.
//! Then latency as concurrency grows and as the orders table grows.
//!
//! Every measurement is bounded by a request budget and a time window; every
//! server listens on loopback only. Figures are printed, never asserted.

mod data;
mod load;
mod peers;
mod report;
mod targets;

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use chataigne::{Stack, StackConfig};
use chataigne_common::demo;
use chataigne_proto::tools::v1::ListToolsRequest;
use chataigne_proto::tools::v1::tool_catalog_client::ToolCatalogClient;
use clap::Parser;
use secrecy::SecretString;
use serde_json::json;
use sqlx::{Connection, PgConnection, Row as _};

use crate::load::{Plan, Stats};
use crate::report::{Row, SizePoint};
use crate::targets::{DirectGrpc, McpHttp, ToolCall};

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
    /// Directory of the Python peer (peer.py, requirements.txt).
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/python"))]
    python_dir: PathBuf,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(bench(args))
}

/// A running stack with a demo manager's token.
struct Running {
    stack: Stack,
    token: String,
}

async fn start_stack(args: &Args, auth_url: &str, tools_url: &str) -> anyhow::Result<Running> {
    let mut config = StackConfig::with_databases(auth_url, tools_url);
    // The tool database is already loaded with the benchmark's data set.
    config.tools.seed_demo = false;
    let gateway = &mut config.gateway;
    if !args.no_redis {
        gateway.redis.url = Some(SecretString::from(args.redis.clone()));
        gateway.redis.key_prefix = format!("chataigne-bench-{}", std::process::id());
        gateway.idempotency.secret = Some(SecretString::from(format!(
            "bench-idempotency-secret-{:032}",
            std::process::id()
        )));
    }
    // One user calls one tool far above the production per-minute limits:
    // the limiter still counts every call, it never refuses one.
    gateway.rate_limits.reads_per_minute = 10_000_000;
    gateway.rate_limits.writes_per_minute = 10_000_000;
    gateway.rate_limits.per_ip_per_minute = 10_000_000;
    let stack = chataigne::start(config)
        .await
        .context("starting the stack")?;
    let token = stack
        .token_for(
            demo::USER_MANAGER,
            &demo::demo_token_scopes(),
            Some(Duration::from_secs(4 * 3600)),
        )
        .await
        .context("issuing a token")?;
    Ok(Running { stack, token })
}

fn orders_list() -> ToolCall {
    ToolCall {
        name: "chataigne_orders_list".to_owned(),
        arguments: std::sync::Arc::new(|_| json!({"location_id": demo::LOC_PARIS, "limit": 20})),
        fixed: true,
    }
}

/// The second tool of the table: a write when the catalogue has one this
/// benchmark knows how to call repeatedly, else a second read.
async fn second_tool(stack: &Stack, tools_url: &str) -> anyhow::Result<(ToolCall, bool)> {
    let mut catalog = ToolCatalogClient::connect(stack.tools_grpc_url.clone()).await?;
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
        let conversation: String =
            sqlx::query("SELECT id FROM conversations WHERE location_id = $1 ORDER BY id LIMIT 1")
                .bind(demo::LOC_PARIS)
                .fetch_one(&mut db)
                .await?
                .try_get(0)?;
        let run = std::process::id();
        let call = ToolCall {
            name: "chataigne_conversation_message_send".to_owned(),
            arguments: std::sync::Arc::new(move |n| {
                json!({
                    "conversation_id": conversation,
                    "text": "Your order is on its way.",
                    "idempotency_key": format!("bench-{run}-{n:012}"),
                })
            }),
            fixed: false,
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
    let call = ToolCall {
        name: "chataigne_order_get".to_owned(),
        arguments: std::sync::Arc::new(move |_| json!({"order_id": order})),
        fixed: true,
    };
    Ok((call, false))
}

/// A measurement of `call` at `concurrency`.
async fn measure<C, F>(args: &Args, concurrency: usize, window: f64, call: C) -> Stats
where
    C: Fn(u64) -> F + Send + Sync + 'static,
    F: Future<Output = bool> + Send + 'static,
{
    let plan = Plan {
        concurrency,
        max_requests: args.max_requests,
        warmup: Duration::from_secs_f64(args.warmup.max(0.0)),
        window: Duration::from_secs_f64(window.max(0.1)),
    };
    load::run(plan, call).await
}

async fn http_stats(args: &Args, target: &McpHttp, concurrency: usize, window: f64) -> Stats {
    let target = target.clone();
    measure(args, concurrency, window, move |n| {
        let target = target.clone();
        async move { target.call(n).await }
    })
    .await
}

async fn grpc_stats(args: &Args, target: &DirectGrpc, concurrency: usize, window: f64) -> Stats {
    let target = target.clone();
    measure(args, concurrency, window, move |n| {
        let target = target.clone();
        async move { target.call(n).await }
    })
    .await
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
    let running = start_stack(&args, &auth_url, &tools_url).await?;
    let stack = &running.stack;
    let client = targets::http_client(args.concurrency.max(256))?;

    let read = orders_list();
    let (second, second_is_write) = second_tool(stack, &tools_url).await?;
    let full_read = McpHttp::new(
        client.clone(),
        &stack.mcp_url,
        Some(&running.token),
        read.clone(),
    );
    let full_second = McpHttp::new(
        client.clone(),
        &stack.mcp_url,
        Some(&running.token),
        second.clone(),
    );
    let (direct_read, refresher_read) = DirectGrpc::connect(
        &stack.tools_grpc_url,
        &stack.auth_grpc_url,
        &running.token,
        &stack.mcp_url,
        read.clone(),
    )
    .await?;
    let (direct_second, refresher_second) = DirectGrpc::connect(
        &stack.tools_grpc_url,
        &stack.auth_grpc_url,
        &running.token,
        &stack.mcp_url,
        second.clone(),
    )
    .await?;
    let answer = full_read.probe().await.context("full stack probe")?;
    if let Some(seconds) = args.soak {
        let stats = http_stats(&args, &full_read, args.concurrency, seconds).await;
        progress("full stack read", &stats);
        let stats = grpc_stats(&args, &direct_read, args.concurrency, seconds).await;
        progress("direct gRPC read", &stats);
        refresher_read.abort();
        refresher_second.abort();
        running.stack.shutdown().await?;
        return server.drop_auth_database().await;
    }
    full_second.probe().await.context("full stack probe")?;
    direct_read.probe().await.context("direct gRPC probe")?;
    direct_second.probe().await.context("direct gRPC probe")?;
    let bare_url = peers::bare_http(answer.clone()).await?;
    let bare = McpHttp::new(client.clone(), &bare_url, None, read.clone());
    bare.probe().await.context("bare HTTP probe")?;
    let peer = match &python {
        Some(python) => Some(peers::python_peer(python, &args.python_dir, &tools_url).await?),
        None => None,
    };
    let python_target = match &peer {
        Some(peer) => {
            let target = McpHttp::new(client.clone(), &peer.url, None, read.clone());
            let body = target.probe().await.context("Python peer probe")?;
            eprintln!(
                "answer sizes: full stack {} bytes, Python peer {} bytes",
                answer.len(),
                body.len()
            );
            Some(target)
        }
        None => None,
    };

    let second_label = if second_is_write {
        format!("{} (write)", second.name)
    } else {
        format!("{} (read; no write tool yet)", second.name)
    };
    eprintln!("comparison on {orders} orders…");
    let mut rows = Vec::new();
    for concurrency in [1, args.concurrency] {
        let seconds = args.seconds;
        let full = http_stats(&args, &full_read, concurrency, seconds).await;
        progress("full stack read", &full);
        let reference = Some(full.throughput());
        let direct = grpc_stats(&args, &direct_read, concurrency, seconds).await;
        progress("direct gRPC read", &direct);
        let full2 = http_stats(&args, &full_second, concurrency, seconds).await;
        progress("full stack second", &full2);
        let reference2 = Some(full2.throughput());
        let direct2 = grpc_stats(&args, &direct_second, concurrency, seconds).await;
        progress("direct gRPC second", &direct2);
        let ceiling = http_stats(&args, &bare, concurrency, seconds).await;
        progress("bare HTTP", &ceiling);
        let python_stats = match &python_target {
            Some(target) => {
                let stats = http_stats(&args, target, concurrency, seconds).await;
                progress("Python peer", &stats);
                Some(stats)
            }
            None => None,
        };
        rows.push(Row {
            scenario: format!("full stack · {}", read.name),
            stats: full,
            reference,
        });
        rows.push(Row {
            scenario: format!("tool-service gRPC direct · {}", read.name),
            stats: direct,
            reference,
        });
        rows.push(Row {
            scenario: format!("full stack · {second_label}"),
            stats: full2,
            reference: reference2,
        });
        rows.push(Row {
            scenario: format!("tool-service gRPC direct · {}", second.name),
            stats: direct2,
            reference: reference2,
        });
        rows.push(Row {
            scenario: "bare axum JSON endpoint (same body sizes)".to_owned(),
            stats: ceiling,
            reference,
        });
        if let Some(stats) = python_stats {
            rows.push(Row {
                scenario: format!("Python MCP SDK server · {}", read.name),
                stats,
                reference,
            });
        }
    }

    let mut curve = Vec::new();
    if !args.no_curves {
        eprintln!("concurrency curve…");
        for &level in &args.levels {
            let stats = http_stats(&args, &full_read, level, args.curve_seconds).await;
            progress("full stack read", &stats);
            curve.push(stats);
        }
    }
    drop(peer);
    refresher_read.abort();
    refresher_second.abort();
    running.stack.shutdown().await?;

    let mut sizes = Vec::new();
    if !args.no_curves {
        let mut wanted = args.sizes.clone();
        if args.full && !wanted.contains(&1_000_000) {
            wanted.push(1_000_000);
        }
        for size in wanted {
            let (tools_url, orders) = server.tool_database(size).await?;
            let auth_url = server.fresh_auth_database().await?;
            let running = start_stack(&args, &auth_url, &tools_url).await?;
            let target = McpHttp::new(
                client.clone(),
                &running.stack.mcp_url,
                Some(&running.token),
                read.clone(),
            );
            target.probe().await?;
            eprintln!("size curve: {orders} orders…");
            let single = http_stats(&args, &target, 1, args.curve_seconds).await;
            progress("full stack read", &single);
            let loaded = http_stats(&args, &target, args.concurrency, args.curve_seconds).await;
            progress("full stack read", &loaded);
            sizes.push(SizePoint {
                orders,
                single,
                loaded,
            });
            running.stack.shutdown().await?;
        }
    }
    server.drop_auth_database().await?;

    println!("## tools/call on {orders} orders\n");
    println!("{}", report::comparison(&rows));
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
    println!(
        "Machine: {machine_before}; load average after: {}",
        report::load_average()
    );
    Ok(())
}
