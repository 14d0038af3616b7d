//! Connection discipline of the public listener, tried as an attacker
//! would from loopback against a gateway on the Connected Apps allowlist:
//! half-open connections from refused and from allowed addresses are closed
//! within the timeouts while normal requests keep answering; a stalled body
//! is answered 408; oversized heads 431; the caps close connections at once;
//! idle and half-sent keep-alive connections end; HTTP/2 announces its
//! stream limit.

use crate::support;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use chataigne_gateway::{Allowlist, Config};
use support::{Harness, PING, TOKEN_ALL};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

/// A request head cut before its end (no blank line).
const PARTIAL_HEAD: &[u8] = b"POST /mcp/v1 HTTP/1.1\r\nHost: gateway\r\nContent-Type: appl";

/// The Connected Apps egress blocks, plus the loopback addresses the tests
/// connect from as allowed clients. 127.0.0.1 stays refused.
fn google_allowlist_and(allowed: &[&str]) -> Allowlist {
    let mut allowlist = Allowlist::default();
    allowlist
        .cidrs
        .extend(allowed.iter().map(|a| a.parse::<ipnet::IpNet>().unwrap()));
    allowlist
}

fn server_addr(h: &Harness) -> SocketAddr {
    h.base.trim_start_matches("http://").parse().unwrap()
}

/// A TCP connection to the gateway leaving from `local`.
async fn connect_from(h: &Harness, local: &str) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(local.parse::<IpAddr>().unwrap(), 0))?;
    socket.connect(server_addr(h)).await
}

/// Reads until the server closes (EOF or reset) or `limit` passes; returns
/// what was read and when the connection ended, `None` if still open.
async fn until_closed(stream: &mut TcpStream, limit: Duration) -> (Vec<u8>, Option<Instant>) {
    let mut read = Vec::new();
    let mut chunk = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Err(_) => return (read, None),
            Ok(Ok(0)) | Ok(Err(_)) => return (read, Some(Instant::now())),
            Ok(Ok(n)) => read.extend_from_slice(&chunk[..n]),
        }
    }
}

/// One raw HTTP/1.1 ping with `Connection: close`.
fn raw_ping(h: &Harness, extra: &str) -> String {
    let host = h.base.trim_start_matches("http://");
    format!(
        "POST /mcp/v1 HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {TOKEN_ALL}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         {extra}Content-Length: {}\r\n\r\n{PING}",
        PING.len()
    )
}

/// Pings from `local` over a fresh connection; the status and how long it took.
async fn ping_from(h: &Harness, local: &str) -> (u16, Duration) {
    let client = reqwest::Client::builder()
        .local_address(local.parse::<IpAddr>().unwrap())
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let started = Instant::now();
    let status = match h.post_with(&client, TOKEN_ALL).body(PING).send().await {
        Ok(response) => response.status().as_u16(),
        Err(_) => 0,
    };
    (status, started.elapsed())
}

/// The soft limit on open files of this process, from `/proc/self/limits`.
fn open_files_limit() -> Option<u64> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// Opens `count` connections from `local`, each sending a partial request
/// head, and reports for each how long after it was established it was
/// closed (`None`: still open after `limit`).
async fn half_open_flood(
    h: &Harness,
    local: &'static str,
    count: usize,
    limit: Duration,
    connected: &Arc<AtomicUsize>,
) -> tokio::task::JoinSet<Option<Duration>> {
    let mut flood = tokio::task::JoinSet::new();
    for _ in 0..count {
        let server = server_addr(h);
        let connected = connected.clone();
        flood.spawn(async move {
            let socket = TcpSocket::new_v4().unwrap();
            socket
                .bind(SocketAddr::new(local.parse().unwrap(), 0))
                .unwrap();
            let connecting = socket.connect(server).await;
            connected.fetch_add(1, Ordering::SeqCst);
            let Ok(mut stream) = connecting else {
                return Some(Duration::ZERO);
            };
            let opened = Instant::now();
            let _ = stream.write_all(PARTIAL_HEAD).await;
            let (_, closed) = until_closed(&mut stream, limit).await;
            closed.map(|at| at - opened)
        });
    }
    flood
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_half_open_connections_are_closed_within_the_timeouts_while_normal_requests_answer()
 {
    // Two floods of `n` connections, each connection two descriptors here
    // (client and server side) besides the harness's own.
    let n = match open_files_limit() {
        Some(limit) if limit < 5_000 => {
            let n = usize::try_from(limit.saturating_sub(400) / 4).unwrap_or(0);
            eprintln!("open files limited to {limit}: flooding with {n} connections each");
            n
        }
        _ => 1_000,
    };
    let header_timeout = Duration::from_millis(1_000);
    let h = Harness::start_with(|config: &mut Config| {
        config.allowlist = google_allowlist_and(&["127.0.0.2/32", "127.0.0.3/32"]);
        config.connections.header_read_timeout_ms = 1_000;
    })
    .await;
    let limit = Duration::from_secs(10);
    let connected = Arc::new(AtomicUsize::new(0));
    let mut refused = half_open_flood(&h, "127.0.0.1", n, limit, &connected).await;
    let mut allowed = half_open_flood(&h, "127.0.0.3", n, limit, &connected).await;
    // Once the flood is in (its SYNs no longer compete with ours for the
    // listen backlog), normal traffic from another allowed address, while
    // the allowed half-open connections are held and after they are closed.
    let started = Instant::now();
    while connected.load(Ordering::SeqCst) < 2 * n && started.elapsed() < limit {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut normal = Vec::new();
    let pinging = Instant::now();
    while pinging.elapsed() < header_timeout * 2 {
        normal.push(ping_from(&h, "127.0.0.2").await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut refused_closed = Vec::new();
    while let Some(closed) = refused.join_next().await {
        refused_closed.push(closed.unwrap());
    }
    let mut allowed_closed = Vec::new();
    while let Some(closed) = allowed.join_next().await {
        allowed_closed.push(closed.unwrap());
    }
    assert_eq!(refused_closed.len(), n);
    assert!(
        refused_closed
            .iter()
            .all(|c| c.is_some_and(|d| d < header_timeout)),
        "refused addresses are closed at accept: {:?}",
        refused_closed.iter().flatten().max()
    );
    let slowest = allowed_closed.iter().flatten().max().copied();
    assert!(
        allowed_closed.iter().all(|c| c.is_some()),
        "every half-open connection from an allowed address is closed"
    );
    assert!(
        slowest.is_some_and(|d| d < header_timeout + Duration::from_secs(2)),
        "within the header read timeout: {slowest:?}"
    );
    let fastest = allowed_closed.iter().flatten().min().copied();
    assert!(
        fastest.is_some_and(|d| d >= header_timeout / 2),
        "allowed connections are held until their header timeout, not refused: {fastest:?}"
    );
    assert!(normal.len() >= 5, "{normal:?}");
    assert!(
        normal
            .iter()
            .all(|(status, took)| *status == 200 && *took < header_timeout),
        "normal requests keep answering: {normal:?}"
    );
    let metrics = h.metrics().await;
    let counted = |series: &str| {
        metrics
            .lines()
            .find(|l| l.starts_with(series))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    assert_eq!(
        counted("chataigne_gateway_allowlist_refusals_total{reason=\"address_not_allowed\"}"),
        n as f64
    );
    assert_eq!(
        counted("chataigne_gateway_connections_closed_total{reason=\"header_timeout\"}"),
        n as f64
    );
    h.shutdown().await;
}

#[tokio::test]
async fn a_stalled_body_is_answered_408_within_the_body_timeout() {
    let h = Harness::start_with(|config: &mut Config| {
        config.connections.body_read_timeout_ms = 400;
    })
    .await;
    let mut stream = connect_from(&h, "127.0.0.1").await.unwrap();
    let head = raw_ping(&h, "").replace(
        &format!("Content-Length: {}", PING.len()),
        "Content-Length: 1000",
    );
    let cut = head.len() - PING.len() + 10;
    stream.write_all(&head.as_bytes()[..cut]).await.unwrap();
    let sent = Instant::now();
    let (answer, closed) = until_closed(&mut stream, Duration::from_secs(10)).await;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        answer.contains(r#""code":-32600"#),
        "a JSON-RPC error: {answer}"
    );
    let took = closed.expect("the connection ends") - sent;
    assert!(
        took >= Duration::from_millis(350) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert!(
        h.auth_calls().is_empty(),
        "no token read for an unread body"
    );
    h.shutdown().await;
}

#[tokio::test]
async fn oversized_request_heads_are_refused_431() {
    let h = Harness::start_with(|config: &mut Config| {
        config.connections.max_header_bytes = 8_192;
        config.connections.max_headers = 16;
    })
    .await;
    let big = format!("X-Padding: {}\r\n", "a".repeat(9_000));
    let many: String = (0..20).map(|i| format!("X-Extra-{i}: v\r\n")).collect();
    for (label, extra) in [("bytes", big), ("count", many)] {
        let mut stream = connect_from(&h, "127.0.0.1").await.unwrap();
        let _ = stream.write_all(raw_ping(&h, &extra).as_bytes()).await;
        let (answer, _) = until_closed(&mut stream, Duration::from_secs(5)).await;
        let answer = String::from_utf8_lossy(&answer).into_owned();
        assert!(answer.starts_with("HTTP/1.1 431"), "{label}: {answer}");
    }
    assert!(h.auth_calls().is_empty());
    let (status, _) = ping_from(&h, "127.0.0.1").await;
    assert_eq!(status, 200);
    h.shutdown().await;
}

#[tokio::test]
async fn the_connection_caps_close_new_connections_at_once() {
    let h = Harness::start_with(|config: &mut Config| {
        config.allowlist.cidrs = vec!["127.0.0.0/8".parse().unwrap()];
        config.connections.max_connections = 12;
        config.connections.max_connections_per_address = 4;
        config.connections.header_read_timeout_ms = 10_000;
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(connect_from(&h, "127.0.0.3").await.unwrap());
    }
    // A fifth from the same address is closed at once; others still pass.
    let mut fifth = connect_from(&h, "127.0.0.3").await.unwrap();
    let (_, closed) = until_closed(&mut fifth, Duration::from_secs(2)).await;
    assert!(closed.is_some(), "over the per-address cap");
    assert_eq!(ping_from(&h, "127.0.0.2").await.0, 200);
    // Fill the total: 4 + 4 + 3 held, then one more is the twelfth.
    for local in ["127.0.0.4", "127.0.0.4", "127.0.0.4", "127.0.0.4"] {
        held.push(connect_from(&h, local).await.unwrap());
    }
    for _ in 0..3 {
        held.push(connect_from(&h, "127.0.0.5").await.unwrap());
    }
    let mut twelfth = connect_from(&h, "127.0.0.6").await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut thirteenth = connect_from(&h, "127.0.0.7").await.unwrap();
    let (_, closed) = until_closed(&mut thirteenth, Duration::from_secs(2)).await;
    assert!(closed.is_some(), "over the total cap");
    // The held ones are still open, and a slot frees when one closes.
    twelfth
        .write_all(raw_ping(&h, "Connection: close\r\n").as_bytes())
        .await
        .unwrap();
    let (answer, _) = until_closed(&mut twelfth, Duration::from_secs(5)).await;
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"));
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(ping_from(&h, "127.0.0.2").await.0, 200);
    let metrics = h.metrics().await;
    assert!(
        metrics.contains(
            "chataigne_gateway_connections_closed_total{reason=\"address_connection_limit\"} 1"
        ),
        "{metrics}"
    );
    assert!(
        metrics
            .contains("chataigne_gateway_connections_closed_total{reason=\"connection_limit\"} 1"),
        "{metrics}"
    );
    drop(held);
    h.shutdown().await;
}

#[tokio::test]
async fn keep_alive_connections_end_when_idle_or_when_a_next_head_stalls() {
    let h = Harness::start_with(|config: &mut Config| {
        config.connections.header_read_timeout_ms = 300;
        config.connections.idle_timeout_secs = 1;
    })
    .await;
    let answered = |raw: &[u8]| String::from_utf8_lossy(raw).starts_with("HTTP/1.1 200");
    // Idle after one answer: closed after the idle timeout, not before.
    let mut idle = connect_from(&h, "127.0.0.1").await.unwrap();
    idle.write_all(raw_ping(&h, "").as_bytes()).await.unwrap();
    let mut first = vec![0u8; 4096];
    let n = idle.read(&mut first).await.unwrap();
    assert!(answered(&first[..n]));
    let answered_at = Instant::now();
    let (_, closed) = until_closed(&mut idle, Duration::from_secs(5)).await;
    let idle_for = closed.expect("closed when idle") - answered_at;
    assert!(
        idle_for >= Duration::from_millis(900) && idle_for < Duration::from_secs(3),
        "{idle_for:?}"
    );
    // A next head that stalls: closed one header timeout after its first byte.
    let mut stalled = connect_from(&h, "127.0.0.1").await.unwrap();
    stalled
        .write_all(raw_ping(&h, "").as_bytes())
        .await
        .unwrap();
    let n = stalled.read(&mut first).await.unwrap();
    assert!(answered(&first[..n]));
    stalled.write_all(PARTIAL_HEAD).await.unwrap();
    let sent = Instant::now();
    let (_, closed) = until_closed(&mut stalled, Duration::from_secs(5)).await;
    let took = closed.expect("closed") - sent;
    assert!(
        took >= Duration::from_millis(250) && took < Duration::from_millis(900),
        "{took:?}"
    );
    h.shutdown().await;
}

#[tokio::test]
async fn http2_announces_its_stream_limit_and_serves() {
    let h = Harness::start_with(|config: &mut Config| {
        config.connections.http2.max_concurrent_streams = 7;
    })
    .await;
    let tcp = connect_from(&h, "127.0.0.1").await.unwrap();
    let (client, connection) = h2::client::handshake(tcp).await.unwrap();
    tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let request = http::Request::post(format!("{}/mcp/v1", h.base))
        .header("authorization", format!("Bearer {TOKEN_ALL}"))
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
        .body(())
        .unwrap();
    let (response, mut body) = client.send_request(request, false).unwrap();
    body.send_data(hyper::body::Bytes::from_static(PING.as_bytes()), true)
        .unwrap();
    let response = response.await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(client.current_max_send_streams(), 7);
    h.shutdown().await;
}
