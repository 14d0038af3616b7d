//! The embedded binary as a user runs it: it prints `MCP_URL=` and
//! `MCP_TOKEN=`, and the official Python SDK client lists tools and reads
//! orders with them; SIGTERM stops it cleanly.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use chataigne_tests::{SdkClients, TempDir};

/// Kills the embedded process if the test fails before stopping it.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn embedded_binary_prints_a_working_url_and_token() {
    let data = TempDir::new("embedded");
    let mut child = Command::new(env!("CARGO_BIN_EXE_chataigne"))
        .args(["--port", "0", "--data-dir"])
        .arg(&data.0)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("embedded binary starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut child = Running(child);
    let mut lines = BufReader::new(stdout).lines();
    let mut url = None;
    let mut token = None;
    for line in lines.by_ref().take(3) {
        let line = line.expect("utf-8 line");
        if let Some(value) = line.strip_prefix("MCP_URL=") {
            url = Some(value.to_owned());
        } else if let Some(value) = line.strip_prefix("MCP_TOKEN=") {
            token = Some(value.to_owned());
        } else {
            assert!(
                line.starts_with("curl "),
                "third line is a curl command: {line}"
            );
        }
    }
    let (url, token) = (
        url.expect("MCP_URL printed"),
        token.expect("MCP_TOKEN printed"),
    );
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with("/mcp/v1"));

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listed: serde_json::Value = runtime.block_on(async {
        reqwest::Client::new()
            .post(&url)
            .bearer_auth(&token)
            .header("accept", "application/json, text/event-stream")
            .json(&serde_json::json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}))
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .expect("gateway answers")
            .json()
            .await
            .expect("json body")
    });
    assert!(
        listed["result"]["tools"]
            .as_array()
            .is_some_and(|tools| tools.iter().any(|t| t["name"] == "chataigne_orders_list")),
        "{listed}"
    );

    if let Some(clients) = SdkClients::find() {
        let (code, out, stderr) = clients.pyclient(
            &clients.python,
            &[
                &url,
                &token,
                "chataigne_orders_list",
                "{}",
                "--expect-protocol",
                "2025-11-25",
            ],
        );
        assert_eq!(code, 0, "{stderr}");
        assert_eq!(
            out["call"]["structuredContent"]["data"]["orders"]
                .as_array()
                .map(Vec::len),
            Some(20)
        );
    }

    let pid = child.0.id().to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(killed.success());
    let status = child.0.wait().unwrap();
    assert!(status.success(), "clean exit on SIGTERM: {status:?}");
}
