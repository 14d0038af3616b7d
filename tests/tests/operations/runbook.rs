//! The production runbook as an operator runs it: `scripts/runbook.sh` with
//! the three service binaries on fresh PostgreSQL databases and the test
//! Redis, from migrations to the smoke tests' tool calls; docs/runbook.md
//! shows exactly the script's steps. And the
//! administration commands' `--data-dir` against a running embedded stack.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use chataigne::StackConfig;
use chataigne_tests::{TempDir, demo, fresh_postgres_database};

const ADMIN_PASSWORD: &str = "runbook admin passphrase";
const MANAGER_PASSWORD: &str = "runbook manager passphrase";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("workspace root")
        .to_path_buf()
}

/// The directory of the three service binaries: the one this test's
/// executable sits under, where `cargo test --workspace` has just built them
/// (each service crate's own tests need them) with the same features.
/// Building them from here instead would resolve features differently and
/// recompile half the workspace, then again for the next test run.
fn service_binaries() -> PathBuf {
    let exe = std::env::current_exe().expect("test executable");
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("target profile directory")
        .to_path_buf();
    for binary in [
        "chataigne-auth-service",
        "chataigne-tool-service",
        "chataigne-gateway",
    ] {
        assert!(
            dir.join(binary).is_file(),
            "{binary} is not built in {dir:?}: run the workspace's tests \
             (`cargo test --workspace`) or `cargo test -p chataigne-auth -p chataigne-tools \
             -p chataigne-gateway --no-run` first"
        );
    }
    dir
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The command lines of the runbook (`docs/runbook.md`): every line of its
/// `sh` blocks, trimmed, without blanks.
fn documented_runbook_lines() -> Vec<String> {
    let section =
        std::fs::read_to_string(workspace().join("docs/runbook.md")).expect("docs/runbook.md");
    let mut lines = Vec::new();
    let mut in_block = false;
    for line in section.lines() {
        match line.trim() {
            "```sh" => in_block = true,
            "```" => in_block = false,
            code if in_block && !code.is_empty() => lines.push(code.to_owned()),
            _ => {}
        }
    }
    lines
}

#[test]
fn the_documented_runbook_shows_the_scripts_steps() {
    let script =
        std::fs::read_to_string(workspace().join("scripts/runbook.sh")).expect("runbook script");
    let script_lines: Vec<&str> = script.lines().map(str::trim).collect();
    let documented = documented_runbook_lines();
    assert!(documented.len() > 10, "{documented:?}");
    for line in &documented {
        assert!(
            script_lines.contains(&line.as_str()),
            "docs/runbook.md line not in scripts/runbook.sh: {line}"
        );
    }
    for step in script_lines.iter().filter(|l| l.starts_with("# step ")) {
        assert!(
            documented.iter().any(|l| l == step),
            "script step missing from docs/runbook.md: {step}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_runbook_script_goes_from_empty_databases_to_tool_calls() {
    let Some(auth_db) = fresh_postgres_database("runbook_auth").await else {
        return;
    };
    let Some(tools_db) = fresh_postgres_database("runbook_tools").await else {
        return;
    };
    let bin = service_binaries();
    let work = TempDir::new("runbook");
    let mut script = Command::new("bash");
    script
        .arg(workspace().join("scripts/runbook.sh"))
        .current_dir(workspace())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("BIN", &bin)
        .env("WORK", &work.0)
        .env("AUTH_DATABASE_URL", &auth_db)
        .env("TOOLS_DATABASE_URL", &tools_db)
        .env("REDIS_URL", chataigne_common::testing::redis_url())
        .env("ADMIN_PASSWORD", ADMIN_PASSWORD)
        .env("MANAGER_PASSWORD", MANAGER_PASSWORD)
        .env("RUST_LOG", "info");
    let mut ports = Vec::new();
    for name in [
        "AUTH_HTTP_PORT",
        "AUTH_GRPC_PORT",
        "TOOLS_GRPC_PORT",
        "GATEWAY_PORT",
        "GATEWAY_INTERNAL_PORT",
    ] {
        let port = free_port();
        ports.push(port);
        script.env(name, port.to_string());
    }
    let output = tokio::task::spawn_blocking(move || script.output())
        .await
        .expect("script task")
        .expect("bash runs");
    let (out, err) = text(&output);
    let logs: String = ["auth-service", "tool-service", "gateway"]
        .iter()
        .map(|name| {
            let log =
                std::fs::read_to_string(work.0.join(format!("{name}.log"))).unwrap_or_default();
            format!("--- {name}\n{log}\n")
        })
        .collect();
    assert!(
        output.status.success(),
        "stdout:\n{out}\nstderr:\n{err}\n{logs}"
    );
    assert!(out.contains("runbook complete"), "{out}");
    // The script stops what it started: no service still listens.
    for port in ports {
        chataigne_common::testing::eventually_blocking(
            &format!("nothing listens on port {port} after the script"),
            std::time::Duration::from_secs(5),
            || std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        );
    }
    let organization = out
        .lines()
        .find_map(|l| l.strip_prefix("organization="))
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("{out}"));
    assert!(organization.starts_with("org_"), "{out}");
    // The manager's MCP call lists exactly the organization they belong to;
    // the service account's gRPC call lists its location.
    let bodies: Vec<serde_json::Value> = json_documents(&out);
    let organizations = bodies
        .iter()
        .find_map(|b| b["data"]["organizations"].as_array())
        .unwrap_or_else(|| panic!("no organizations listed: {out}"));
    assert_eq!(organizations.len(), 1, "{out}");
    assert_eq!(organizations[0]["id"], organization);
    assert_eq!(organizations[0]["name"], "Bistro Runbook");
    let locations = bodies
        .iter()
        .find_map(|b| b["data"]["locations"].as_array())
        .unwrap_or_else(|| panic!("no locations listed: {out}"));
    assert!(
        locations.iter().any(|l| l["name"] == "Bistro Runbook Lyon"),
        "{out}"
    );
    // Passwords reach the commands on stdin only: no output or log has them.
    let everything = format!("{out}{err}{logs}");
    for password in [ADMIN_PASSWORD, MANAGER_PASSWORD] {
        assert!(!everything.contains(password), "a password was printed");
    }
}

/// The pretty-printed JSON documents of the smoke tests' output.
fn json_documents(out: &str) -> Vec<serde_json::Value> {
    let mut documents = Vec::new();
    let mut current = String::new();
    for line in out.lines() {
        if line == "{" {
            current.clear();
        }
        current.push_str(line);
        current.push('\n');
        if line == "}" {
            if let Ok(document) = serde_json::from_str(&current) {
                documents.push(document);
            }
            current.clear();
        }
    }
    documents
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_commands_with_data_dir_act_on_the_running_embedded_stack() {
    let bin = service_binaries();
    let data = TempDir::new("datadir");
    let mut config = StackConfig::embedded(&data.0);
    config.tools.demo_days = 7;
    let stack = chataigne::start(config)
        .await
        .expect("embedded stack starts");
    let run = |binary: &str, args: &[&str], stdin: &str| {
        use std::io::Write;
        let mut child = Command::new(bin.join(binary))
            .args(args)
            .arg("--data-dir")
            .arg(&data.0)
            .env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("binary runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(stdin.as_bytes())
            .expect("stdin written");
        let output = child.wait_with_output().expect("binary ends");
        let (out, err) = text(&output);
        assert!(output.status.success(), "{binary} {args:?}: {err}");
        out
    };
    let password = "a long dining-room passphrase";
    let added = tokio::task::block_in_place(|| {
        run(
            "chataigne-auth-service",
            &[
                "users",
                "add",
                "--email",
                "new.manager@bistro.example",
                "--name",
                "New Manager",
                "--password-stdin",
            ],
            &format!("{password}\n"),
        )
    });
    let user_id = added.trim().trim_start_matches("user_id=").to_owned();
    tokio::task::block_in_place(|| {
        run(
            "chataigne-auth-service",
            &[
                "memberships",
                "grant",
                &user_id,
                "--organization",
                demo::ORG_BISTRO,
                "--role",
                "manager",
            ],
            "",
        );
        let writes = run("chataigne-tool-service", &["writes", "status"], "");
        assert!(writes.contains("enabled"), "{writes}");
    });
    // The running stack signs the new user in and serves their first call.
    let mcp_url = stack.mcp_url.clone();
    let issuer = stack.auth_http_url.clone();
    let listed = tokio::task::block_in_place(|| {
        run(
            "chataigne-auth-service",
            &[
                "smoke-test",
                "--issuer",
                &issuer,
                "--mcp-url",
                &mcp_url,
                "--client-id",
                demo::DEMO_CLIENT_ID,
                "--redirect-uri",
                "http://127.0.0.1:8976/callback",
                "--email",
                "new.manager@bistro.example",
                "--password-stdin",
                "--print",
                "/data/organizations/0/id",
            ],
            &format!("{password}\n"),
        )
    });
    assert_eq!(listed.trim(), demo::ORG_BISTRO);
    // A data directory without a stack is refused, not created.
    let empty = TempDir::new("datadir-empty");
    let refused = Command::new(bin.join("chataigne-auth-service"))
        .args(["users", "list", "--data-dir"])
        .arg(&empty.0)
        .env_clear()
        .output()
        .expect("binary runs");
    let (_, err) = text(&refused);
    assert!(
        !refused.status.success() && err.contains("auth.db is missing"),
        "{err}"
    );
    assert!(!empty.0.join("auth.db").exists());
    stack.shutdown().await.expect("clean shutdown");
}
