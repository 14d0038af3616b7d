//! Helpers for tests that drive a running service from outside: the embedded
//! binary started as a user starts it, a child process killed if the test
//! fails, polling until a condition holds, a raw `tools/call` with a bound
//! (also one left in flight, then checked once what it waits on is
//! released), and whether a listener still accepts connections.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// A child process killed and reaped when dropped (a failing test leaves no
/// service behind).
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// What the embedded binary prints on start: `KEY=value` lines (the MCP
/// URL, the profile, the OAuth issuer, the tool-service's gRPC address, a
/// token) and then a curl command line.
pub struct EmbeddedStart {
    pub url: String,
    pub token: String,
    pub profile: String,
    /// `AUTH_ISSUER=`: the auth-service's OAuth issuer URL.
    pub issuer: String,
    /// `TOOL_SERVICE_GRPC=`: the tool-service's gRPC URL.
    pub tool_service_grpc: String,
    pub curl: String,
}

/// Starts the embedded binary at `binary` on a free port with its data in
/// `data_dir`, and reads its start-up lines up to the curl line (blocking).
pub fn start_embedded(binary: &Path, data_dir: &Path) -> (KillOnDrop, EmbeddedStart) {
    start_embedded_with(binary, data_dir, &[])
}

/// Like [`start_embedded`], with extra command-line arguments.
pub fn start_embedded_with(
    binary: &Path,
    data_dir: &Path,
    args: &[&str],
) -> (KillOnDrop, EmbeddedStart) {
    let mut child = Command::new(binary)
        .args(["--port", "0", "--data-dir"])
        .arg(data_dir)
        .args(args)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("embedded binary starts");
    let stdout = child.stdout.take().expect("stdout");
    let child = KillOnDrop(child);
    let (mut url, mut token, mut profile, mut curl) = (None, None, None, None);
    let (mut issuer, mut tool_service_grpc) = (None, None);
    let mut lines = BufReader::new(stdout).lines();
    for line in lines.by_ref().take(10) {
        let line = line.expect("utf-8 line");
        if let Some(value) = line.strip_prefix("MCP_URL=") {
            url = Some(value.to_owned());
        } else if let Some(value) = line.strip_prefix("MCP_TOKEN=") {
            token = Some(value.to_owned());
        } else if let Some(value) = line.strip_prefix("MCP_PROFILE=") {
            profile = Some(value.to_owned());
        } else if let Some(value) = line.strip_prefix("AUTH_ISSUER=") {
            issuer = Some(value.to_owned());
        } else if let Some(value) = line.strip_prefix("TOOL_SERVICE_GRPC=") {
            tool_service_grpc = Some(value.to_owned());
        } else if line.starts_with("curl ") {
            curl = Some(line);
            break;
        }
    }
    // Keep reading what it prints later, so that its stdout never closes.
    std::thread::spawn(move || lines.for_each(drop));
    let start = EmbeddedStart {
        url: url.expect("MCP_URL printed"),
        token: token.expect("MCP_TOKEN printed"),
        profile: profile.expect("MCP_PROFILE printed"),
        issuer: issuer.expect("AUTH_ISSUER printed"),
        tool_service_grpc: tool_service_grpc.expect("TOOL_SERVICE_GRPC printed"),
        curl: curl.expect("a curl line printed"),
    };
    (child, start)
}

/// The shared wait for a condition outside the tokio clock.
pub use chataigne_common::testing::eventually;

/// POSTs one `tools/call` to `mcp_url`, waiting at most `limit`; returns
/// status and body.
pub async fn post_tool_call(
    mcp_url: &str,
    token: &str,
    name: &str,
    arguments: Value,
    limit: Duration,
) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(mcp_url)
        .bearer_auth(token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                      "params": {"name": name, "arguments": arguments}}))
        .timeout(limit)
        .send()
        .await
        .expect("the call is answered");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// A call in flight: its status and body, and when it was answered.
pub type InFlight = tokio::task::JoinHandle<((u16, Value), Instant)>;

/// Starts [`post_tool_call`] in a task of its own, recording when it is
/// answered.
pub fn spawn_tool_call(
    mcp_url: &str,
    token: &str,
    name: &str,
    arguments: Value,
    limit: Duration,
) -> InFlight {
    let (mcp_url, token, name) = (mcp_url.to_owned(), token.to_owned(), name.to_owned());
    tokio::spawn(async move {
        let answer = post_tool_call(&mcp_url, &token, &name, arguments, limit).await;
        (answer, Instant::now())
    })
}

/// Runs `release` (which frees what `in_flight` waits on), then waits at most
/// `limit` for the call: it must be answered only after the release, with
/// HTTP 200 and a normal (not failed) result. Returns its body.
pub async fn answered_after_release(
    release: impl std::future::Future<Output = ()>,
    in_flight: InFlight,
    limit: Duration,
) -> Value {
    let released = Instant::now();
    release.await;
    let ((status, body), answered) = tokio::time::timeout(limit, in_flight)
        .await
        .expect("the in-flight call finishes")
        .expect("call task");
    assert!(
        answered >= released,
        "answered only once the lock was released"
    );
    assert_eq!(status, 200, "{body}");
    assert_ne!(body["result"]["isError"], true, "a normal result: {body}");
    body
}

/// Whether a new TCP connection to `url`'s authority is refused.
pub async fn refuses_connections(url: &str) -> bool {
    let authority = url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    matches!(
        tokio::time::timeout(
            Duration::from_secs(5),
            tokio::net::TcpStream::connect(authority)
        )
        .await,
        Ok(Err(_))
    )
}
