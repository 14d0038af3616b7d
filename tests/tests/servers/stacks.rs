//! The declared stacks of the other servers, on the embedded stack: the
//! authorization server's HTTP listener has the public listener's
//! connection discipline (half-open connections closed within the header
//! read timeout while requests keep answering, a stalled body answered 408,
//! head and body bounds, connections closed counted), and both gRPC servers
//! run behind the shared gRPC server stack (its HTTP/2 stream limit is what
//! they announce).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use chataigne_tests::{Backend, Sandbox};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const HEADER_TIMEOUT: Duration = Duration::from_millis(500);

fn authority(url: &str) -> SocketAddr {
    url.trim_start_matches("http://")
        .split('/')
        .next()
        .and_then(|a| a.parse().ok())
        .expect("ip:port")
}

/// Reads until the server closes or `limit` passes: what was read and
/// whether it closed.
async fn until_closed(stream: &mut TcpStream, limit: Duration) -> (String, bool) {
    let mut read = Vec::new();
    let mut chunk = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut chunk)).await {
            Err(_) => return (String::from_utf8_lossy(&read).into_owned(), false),
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&read).into_owned(), true),
            Ok(Ok(n)) => read.extend_from_slice(&chunk[..n]),
        }
    }
}

/// The `SETTINGS_MAX_CONCURRENT_STREAMS` an HTTP/2 server at `addr`
/// announces, read after one request.
async fn announced_streams(addr: SocketAddr) -> usize {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let (client, connection) = h2::client::handshake(tcp).await.expect("h2 handshake");
    tokio::spawn(connection);
    let mut client = client.ready().await.expect("ready");
    let request = http::Request::post(format!("http://{addr}/grpc.health.v1.Health/Check"))
        .header("content-type", "application/grpc")
        .header("te", "trailers")
        .body(())
        .expect("request");
    let (response, _) = client.send_request(request, true).expect("sent");
    let _ = response.await;
    client.current_max_send_streams()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_authorization_server_listener_has_the_connection_discipline() {
    let sandbox = Sandbox::start_with(Backend::Sqlite, |config| {
        let http = &mut config.auth.http;
        http.connections.header_read_timeout_ms = 500;
        http.connections.body_read_timeout_ms = 400;
        http.connections.max_header_bytes = 8_192;
        http.max_body_bytes = 4_096;
    })
    .await
    .expect("sqlite sandbox");
    let auth = authority(&sandbox.auth_http_url);
    let metadata = format!(
        "{}/.well-known/oauth-authorization-server",
        sandbox.auth_http_url
    );

    // Half-open connections are closed within the header read timeout
    // while requests keep answering.
    let mut flood = Vec::new();
    for _ in 0..200 {
        let mut stream = TcpStream::connect(auth).await.expect("connect");
        let _ = stream
            .write_all(b"POST /token HTTP/1.1\r\nHost: auth\r\nContent-Ty")
            .await;
        flood.push(stream);
    }
    let opened = Instant::now();
    let status = reqwest::get(&metadata).await.expect("served").status();
    assert_eq!(status, 200);
    for stream in &mut flood {
        let (_, closed) = until_closed(stream, Duration::from_secs(5)).await;
        assert!(closed, "a half-open connection is closed");
    }
    let took = opened.elapsed();
    assert!(
        took < HEADER_TIMEOUT + Duration::from_secs(2),
        "all closed within the header timeout: {took:?}"
    );

    // A stalled body is answered 408 within the body read timeout.
    let mut stalled = TcpStream::connect(auth).await.expect("connect");
    stalled
        .write_all(
            b"POST /token HTTP/1.1\r\nHost: auth\r\nContent-Type: application/x-www-form-urlencoded\r\n\
              Content-Length: 200\r\n\r\ngrant_type=",
        )
        .await
        .expect("written");
    let sent = Instant::now();
    let (answer, closed) = until_closed(&mut stalled, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("invalid_request"), "{answer}");
    assert!(closed && sent.elapsed() < Duration::from_secs(3));

    // Head and body bounds.
    let mut big_head = TcpStream::connect(auth).await.expect("connect");
    let padding = "a".repeat(9_000);
    let request =
        format!("GET /.well-known/jwks.json HTTP/1.1\r\nHost: auth\r\nX-Pad: {padding}\r\n\r\n");
    let _ = big_head.write_all(request.as_bytes()).await;
    let (answer, _) = until_closed(&mut big_head, Duration::from_secs(5)).await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    let too_large = reqwest::Client::new()
        .post(format!("{}/token", sandbox.auth_http_url))
        .header("content-type", "application/x-www-form-urlencoded")
        .body("x".repeat(10_000))
        .send()
        .await
        .expect("answered");
    assert_eq!(too_large.status(), 413);

    let metrics = reqwest::get(&sandbox.auth_metrics_url)
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    let closed_for_timeout = metrics
        .lines()
        .find(|l| {
            l.starts_with("chataigne_auth_http_connections_closed_total{reason=\"header_timeout\"}")
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse::<f64>().ok());
    assert_eq!(closed_for_timeout, Some(200.0), "{metrics}");
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_grpc_servers_run_behind_the_shared_server_stack() {
    let sandbox = Sandbox::start_with(Backend::Sqlite, |config| {
        config.auth.grpc_server.max_concurrent_streams = 33;
        config.tools.grpc_server.max_concurrent_streams = 44;
    })
    .await
    .expect("sqlite sandbox");
    assert_eq!(
        announced_streams(authority(&sandbox.auth_grpc_url)).await,
        33
    );
    assert_eq!(
        announced_streams(authority(&sandbox.tools_grpc_url)).await,
        44
    );
    sandbox.shutdown().await;
}
