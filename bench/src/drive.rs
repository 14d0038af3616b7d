//! The load generator in a process of its own (`chataigne-bench drive`), so
//! that the measured processes do not share one with it and an outside
//! profiler sees them alone. The benchmark starts one driver per
//! measurement and talks to it on its standard streams, one JSON line each
//! way: the [`Drive`] request in; `ready` once its warm-up is done (the
//! benchmark then reads the budget's counters); `go` back; the measured
//! window's [`Stats`] out.

use std::process::Stdio;

use anyhow::Context;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::load::{self, Plan, Stats};
use crate::targets::{DirectGrpc, McpHttp, ToolCall, http_client};

/// What a driver calls.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub enum Driven {
    /// An MCP endpoint over HTTP (full stack, peers, the bare endpoint).
    Http {
        url: String,
        bearer: Option<String>,
        call: ToolCall,
    },
    /// The tool-service's `CallTool` with a principal assertion obtained
    /// from the auth-service for `token` before each call, as the gateway
    /// does.
    Grpc {
        tools_url: String,
        auth_url: String,
        token: String,
        resource: String,
        /// The gateway's credential, presented to `Authenticate`.
        credential: String,
        call: ToolCall,
    },
}

impl Driven {
    /// The same target with keys of their own for `measurement`.
    pub fn for_measurement(&self, measurement: u64) -> Driven {
        let mut driven = self.clone();
        match &mut driven {
            Driven::Http { call, .. } | Driven::Grpc { call, .. } => {
                *call = call.for_measurement(measurement);
            }
        }
        driven
    }
}

/// One measurement for a driver.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Drive {
    pub target: Driven,
    pub plan: Plan,
}

const READY: &str = "ready";
const GO: &str = "go";

/// Runs `drive` in a new driver process (this binary, `drive`): its
/// warm-up, then `between_phases` (the budget's first sample), then the
/// measured window, whose statistics it returns.
pub async fn measure(
    drive: &Drive,
    between_phases: impl Future<Output = ()>,
) -> anyhow::Result<Stats> {
    let exe = std::env::current_exe().context("the benchmark's own binary")?;
    let mut child = tokio::process::Command::new(exe)
        .arg("drive")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .context("starting the load driver")?;
    let mut stdin = child.stdin.take().context("driver stdin")?;
    let mut lines = BufReader::new(child.stdout.take().context("driver stdout")?).lines();
    let mut request = serde_json::to_string(drive)?;
    request.push('\n');
    stdin.write_all(request.as_bytes()).await?;
    let ready = lines
        .next_line()
        .await?
        .context("the driver ended before its warm-up")?;
    anyhow::ensure!(ready == READY, "the driver said {ready:?}");
    between_phases.await;
    stdin.write_all(format!("{GO}\n").as_bytes()).await?;
    let stats = lines
        .next_line()
        .await?
        .context("the driver ended without statistics")?;
    let stats: Stats = serde_json::from_str(&stats).context("the driver's statistics")?;
    child.wait().await?;
    Ok(stats)
}

/// The driver's side: reads the request, warms up, says `ready`, waits for
/// `go`, measures and prints the statistics.
pub async fn serve() -> anyhow::Result<()> {
    let mut input = BufReader::new(tokio::io::stdin()).lines();
    let request = input.next_line().await?.context("no drive request")?;
    let Drive { target, plan } = serde_json::from_str(&request).context("the drive request")?;
    let warmup = Plan {
        window: plan.warmup,
        warmup: std::time::Duration::ZERO,
        ..plan
    };
    let window = Plan {
        warmup: std::time::Duration::ZERO,
        ..plan
    };
    let stats = match target {
        Driven::Http { url, bearer, call } => {
            let client = http_client(plan.concurrency.max(1))?;
            let target = McpHttp::new(client, &url, bearer.as_deref(), call);
            let run = |plan: Plan| {
                let target = target.clone();
                load::run(plan, move |n| {
                    let target = target.clone();
                    async move { target.call(n).await }
                })
            };
            phases(&mut input, run(warmup), run(window)).await?
        }
        Driven::Grpc {
            tools_url,
            auth_url,
            token,
            resource,
            credential,
            call,
        } => {
            let target =
                DirectGrpc::connect(&tools_url, &auth_url, &token, &resource, &credential, call)
                    .await?;
            let run = |plan: Plan| {
                let target = target.clone();
                load::run(plan, move |n| {
                    let target = target.clone();
                    async move { target.call(n).await }
                })
            };
            phases(&mut input, run(warmup), run(window)).await?
        }
    };
    println!("{}", serde_json::to_string(&stats)?);
    Ok(())
}

/// Warm-up, `ready`, wait for `go`, then the measured window.
async fn phases<R: tokio::io::AsyncBufRead + Unpin>(
    input: &mut tokio::io::Lines<R>,
    warmup: impl Future<Output = Stats>,
    window: impl Future<Output = Stats>,
) -> anyhow::Result<Stats> {
    warmup.await;
    println!("{READY}");
    let go = input.next_line().await?.context("no go")?;
    anyhow::ensure!(go == GO, "expected {GO:?}, got {go:?}");
    Ok(window.await)
}
