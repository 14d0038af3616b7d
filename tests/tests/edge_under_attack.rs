//! The public edge under a mixed attack, bounded in time and count, on the
//! embedded stack (SQLite, in-process limits), all on loopback: a slow-loris
//! flood (half-open connections from a refused address and from an allowed
//! one), one user bursting one tool above its rate limit, and normal traffic
//! from another allowed address meanwhile. Prints normal traffic's latency
//! percentiles and error count during the attack, and asserts that normal
//! traffic saw no error, that the burst passed exactly its quota, and that
//! every half-open connection was closed within the header read timeout.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chataigne_tests::demo::{LOC_PARIS, ORG_BISTRO, USER_MANAGER, USER_OWNER};
use chataigne_tests::stores::error_code;
use chataigne_tests::{Backend, Sandbox};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

/// Addresses of the scenario (any 127.0.0.0/8 address is loopback).
const REFUSED: &str = "127.0.0.1";
const NORMAL: &str = "127.0.0.2";
const BURSTER: &str = "127.0.0.3";
const LORIS: &str = "127.0.0.4";
const HEADER_TIMEOUT: Duration = Duration::from_millis(1_000);
/// Per client × user × tool, per rolling minute, in this scenario.
const READS_PER_MINUTE: u32 = 150;
const ATTACK: Duration = Duration::from_secs(3);

fn client_from(local: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(local.parse::<IpAddr>().expect("address"))
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client")
}

/// One `tools/call`: the HTTP status and JSON-RPC body (`None` on a
/// transport failure).
async fn call(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    name: &str,
    arguments: Value,
) -> Option<(u16, Value)> {
    let response = client
        .post(url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(
            json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
                   "params":{"name":name,"arguments":arguments}})
            .to_string(),
        )
        .send()
        .await
        .ok()?;
    let status = response.status().as_u16();
    Some((status, response.json().await.unwrap_or(Value::Null)))
}

/// `count` connections from `local` that send a partial head and wait; each
/// reports when it was closed after being established (`None`: still open
/// after 10 s).
fn slow_loris(
    server: SocketAddr,
    local: &'static str,
    count: usize,
    connected: &Arc<AtomicUsize>,
) -> tokio::task::JoinSet<Option<Duration>> {
    let mut flood = tokio::task::JoinSet::new();
    for _ in 0..count {
        let connected = connected.clone();
        flood.spawn(async move {
            let socket = TcpSocket::new_v4().expect("socket");
            socket
                .bind(SocketAddr::new(local.parse().expect("address"), 0))
                .expect("bind");
            let connecting = socket.connect(server).await;
            connected.fetch_add(1, Ordering::SeqCst);
            let mut stream = connecting.ok()?;
            let opened = Instant::now();
            let _ = stream
                .write_all(b"POST /mcp/v1 HTTP/1.1\r\nHost: gateway\r\nAuthoriz")
                .await;
            let mut buffer = [0u8; 256];
            loop {
                match tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buffer)).await
                {
                    Err(_) => return None,
                    Ok(Ok(0)) | Ok(Err(_)) => return Some(opened.elapsed()),
                    Ok(Ok(_)) => {}
                }
            }
        });
    }
    flood
}

/// One client calling three read tools in turn, at most one call every
/// 10 ms, for `during`: each call's latency, and the failed calls.
async fn normal_traffic(
    client: &reqwest::Client,
    url: &str,
    token: &str,
    calls: &[(&str, Value)],
    during: Duration,
) -> (Vec<Duration>, Vec<String>) {
    let started = Instant::now();
    let mut latencies = Vec::new();
    let mut errors = Vec::new();
    let mut i = 0;
    while started.elapsed() < during {
        let (name, arguments) = &calls[i % calls.len()];
        i += 1;
        let sent = Instant::now();
        let answer = call(client, url, token, name, arguments.clone()).await;
        latencies.push(sent.elapsed());
        match answer {
            Some((200, body))
                if body["result"].is_object() && body["result"]["isError"] != true => {}
            other => errors.push(format!("{name}: {other:?}")),
        }
        // Kept: the pace of normal traffic (a call every 10 ms), not a wait.
        tokio::time::sleep(Duration::from_millis(10).saturating_sub(sent.elapsed())).await;
    }
    (latencies, errors)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn normal_traffic_is_served_during_a_slow_loris_flood_and_a_rate_limit_burst() {
    let sandbox = Sandbox::start_with(Backend::Sqlite, |config| {
        let gateway = &mut config.gateway;
        gateway.allowlist.cidrs = [NORMAL, BURSTER, LORIS]
            .iter()
            .map(|a| format!("{a}/32").parse().expect("cidr"))
            .collect();
        gateway.connections.header_read_timeout_ms = 1_000;
        gateway.rate_limits.reads_per_minute = READS_PER_MINUTE;
    })
    .await
    .expect("sqlite sandbox");
    let url = sandbox.mcp_url.clone();
    let server: SocketAddr = sandbox
        .gateway_url
        .trim_start_matches("http://")
        .parse()
        .expect("gateway address");
    let normal_token = sandbox.token(USER_MANAGER).await;
    let burst_token = sandbox.token(USER_OWNER).await;
    let normal = client_from(NORMAL);
    // Warm the catalogue and the connections.
    let (status, body) = call(
        &normal,
        &url,
        &normal_token,
        "chataigne_organizations_list",
        json!({}),
    )
    .await
    .expect("served");
    assert_eq!(status, 200, "{body}");

    let calls: [(&str, Value); 3] = [
        ("chataigne_organizations_list", json!({})),
        (
            "chataigne_locations_list",
            json!({"organization_id": ORG_BISTRO}),
        ),
        (
            "chataigne_orders_list",
            json!({"location_id": LOC_PARIS, "limit": 5}),
        ),
    ];
    // Baseline: the same normal traffic without an attack, for one second.
    let (mut baseline, baseline_errors) =
        normal_traffic(&normal, &url, &normal_token, &calls, Duration::from_secs(1)).await;
    assert!(baseline_errors.is_empty(), "{baseline_errors:?}");
    baseline.sort();

    let started = Instant::now();
    // 1. Slow loris: 1,000 half-open connections from a refused address,
    //    500 from an allowed one.
    let connected = Arc::new(AtomicUsize::new(0));
    let mut refused = slow_loris(server, REFUSED, 1_000, &connected);
    let mut held = slow_loris(server, LORIS, 500, &connected);
    // 2. A burst above the rate limit: 3 × the quota of one tool, 8 at a time.
    let burst = {
        let url = url.clone();
        tokio::spawn(async move {
            let client = client_from(BURSTER);
            let next = Arc::new(AtomicUsize::new(0));
            let mut workers = tokio::task::JoinSet::new();
            for _ in 0..8 {
                let (client, url, token, next) = (
                    client.clone(),
                    url.clone(),
                    burst_token.clone(),
                    next.clone(),
                );
                workers.spawn(async move {
                    let (mut passed, mut limited, mut other) = (0u32, 0u32, 0u32);
                    while next.fetch_add(1, Ordering::SeqCst) < 3 * READS_PER_MINUTE as usize {
                        let answer = call(
                            &client,
                            &url,
                            &token,
                            "chataigne_organizations_list",
                            json!({}),
                        )
                        .await;
                        match answer.map(|(status, body)| (status, error_code(&body["result"]))) {
                            Some((200, None)) => passed += 1,
                            Some((200, Some(code))) if code == "MCP_RATE_LIMITED" => limited += 1,
                            _ => other += 1,
                        }
                    }
                    (passed, limited, other)
                });
            }
            let mut totals = (0, 0, 0);
            while let Some(counts) = workers.join_next().await {
                let (p, l, o) = counts.expect("burst worker");
                totals = (totals.0 + p, totals.1 + l, totals.2 + o);
            }
            totals
        })
    };
    // 3. Normal traffic meanwhile, for the length of the attack.
    let (mut latencies, errors) =
        normal_traffic(&normal, &url, &normal_token, &calls, ATTACK).await;
    let (passed, limited, other) = burst.await.expect("burst");
    let mut refused_closed = Vec::new();
    while let Some(closed) = refused.join_next().await {
        refused_closed.push(closed.expect("flood task"));
    }
    let mut held_closed = Vec::new();
    while let Some(closed) = held.join_next().await {
        held_closed.push(closed.expect("flood task"));
    }
    latencies.sort();
    let (p50, p99, max) = (
        percentile(&latencies, 50.0),
        percentile(&latencies, 99.0),
        latencies.last().copied().unwrap_or_default(),
    );
    let slowest_refused = refused_closed.iter().flatten().max().copied();
    let slowest_held = held_closed.iter().flatten().max().copied();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "baseline (1 s, no attack): {} calls, p50 {:.1} ms, p99 {:.1} ms",
        baseline.len(),
        ms(percentile(&baseline, 50.0)),
        ms(percentile(&baseline, 99.0)),
    );
    println!(
        "edge under attack ({:.1} s): normal traffic {} calls, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms, {} errors; \
         burst {} passed, {} rate-limited, {} other; \
         slow loris: 1000 refused closed (slowest {:?}), 500 allowed closed (slowest {:?}; header read timeout {:?})",
        started.elapsed().as_secs_f64(),
        latencies.len(),
        ms(p50),
        ms(p99),
        ms(max),
        errors.len(),
        passed,
        limited,
        other,
        slowest_refused,
        slowest_held,
        HEADER_TIMEOUT,
    );
    assert!(errors.is_empty(), "normal traffic failed: {errors:?}");
    assert!(latencies.len() >= 20, "normal traffic kept flowing");
    assert!(p99 < Duration::from_secs(2), "normal p99 {p99:?}");
    assert_eq!(
        (passed, limited, other),
        (READS_PER_MINUTE, 2 * READS_PER_MINUTE, 0),
        "the burst passed exactly its quota of the rolling minute"
    );
    assert!(
        refused_closed
            .iter()
            .all(|c| c.is_some_and(|d| d < HEADER_TIMEOUT))
    );
    assert!(
        held_closed
            .iter()
            .all(|c| c.is_some_and(|d| d < HEADER_TIMEOUT + Duration::from_secs(2)))
    );
    sandbox.shutdown().await;
}
