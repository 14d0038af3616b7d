//! The baselines served beside the stack: a bare axum JSON endpoint (the
//! HTTP ceiling of this machine: it parses the request and answers a fixed
//! body as large as the full stack's answer) and the Python MCP SDK peer
//! (bench/python/peer.py) in a virtual environment the benchmark creates,
//! and the rmcp peer (this binary's `rmcp-peer` subcommand), each of the two
//! peers in a process of its own.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::Context;
use axum::Router;
use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::routing::post;
use tokio::net::TcpListener;

/// Serves `answer` to every JSON POST on `/mcp` on a loopback port; returns
/// the URL. The server stops when the runtime does.
pub async fn bare_http(answer: Bytes) -> anyhow::Result<String> {
    let app = Router::new().route(
        "/mcp",
        post(move |axum::Json(request): axum::Json<serde_json::Value>| {
            let answer = answer.clone();
            async move {
                // The request is parsed like any JSON endpoint would; its id is not echoed
                // so the answer keeps exactly the size of the full stack's.
                drop(request);
                ([(CONTENT_TYPE, "application/json")], answer)
            }
        }),
    );
    let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
    let url = format!("http://{}/mcp", listener.local_addr()?);
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, app).await {
            eprintln!("bare HTTP server stopped: {error}");
        }
    });
    Ok(url)
}

/// The Python peer's virtual environment, created and filled from
/// `requirements.txt` when missing or outdated.
pub fn python_venv(python_dir: &Path) -> anyhow::Result<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| PathBuf::from(home).join(".cache")))
        .context("neither XDG_CACHE_HOME nor HOME is set")?;
    let venv = cache.join("chataigne").join("bench-venv");
    let python = venv.join("bin").join("python");
    let requirements = python_dir.join("requirements.txt");
    let wanted = std::fs::read_to_string(&requirements)
        .with_context(|| format!("reading {}", requirements.display()))?;
    let stamp = venv.join("requirements.installed");
    if python.exists() && std::fs::read_to_string(&stamp).is_ok_and(|done| done == wanted) {
        return Ok(python);
    }
    eprintln!(
        "installing the Python peer's packages into {}…",
        venv.display()
    );
    if !python.exists() {
        let interpreter = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
        let status = std::process::Command::new(interpreter)
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .context("running python3 -m venv")?;
        anyhow::ensure!(status.success(), "python3 -m venv failed");
    }
    let status = std::process::Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&requirements)
        .status()
        .context("running pip")?;
    anyhow::ensure!(status.success(), "pip install failed");
    std::fs::write(&stamp, wanted)?;
    Ok(python)
}

/// A running peer process, leader of a process group of its own (a
/// multi-worker server's workers join it); the whole group is stopped on drop.
pub struct PeerProcess {
    pub url: String,
    child: Child,
}

impl PeerProcess {
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The peer's processes now: its own and every member of its group.
    pub fn processes(&self) -> Vec<u32> {
        let leader = self.pid();
        let mut pids = vec![leader];
        if let Ok(entries) = std::fs::read_dir("/proc") {
            for pid in entries
                .flatten()
                .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            {
                if pid != leader && process_group(pid) == Some(leader) {
                    pids.push(pid);
                }
            }
        }
        pids
    }
}

/// The process group of `pid` (field 5 of `/proc/<pid>/stat`).
fn process_group(pid: u32) -> Option<u32> {
    crate::budget::stat_fields(pid)?.get(2)?.parse().ok()
}

impl Drop for PeerProcess {
    fn drop(&mut self) {
        // The members of its group first (a multi-process server's
        // workers), each by its own id, then the leader.
        let leader = self.pid();
        for pid in self.processes().into_iter().filter(|pid| *pid != leader) {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .stderr(Stdio::null())
                .status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `peer.py` on a free loopback port against `database_url` and
/// waits until it accepts connections.
pub async fn python_peer(
    python: &Path,
    python_dir: &Path,
    database_url: &str,
) -> anyhow::Result<PeerProcess> {
    let mut command = Command::new(python);
    command.arg(python_dir.join("peer.py"));
    spawn_peer(command, database_url, "the Python peer").await
}

/// Starts this binary's `rmcp-peer` subcommand like [`python_peer`].
#[cfg(feature = "rmcp-peer")]
pub async fn rmcp_peer(database_url: &str) -> anyhow::Result<PeerProcess> {
    let mut command = Command::new(std::env::current_exe().context("locating this binary")?);
    command.arg("rmcp-peer");
    spawn_peer(command, database_url, "the rmcp peer").await
}

async fn spawn_peer(
    mut command: Command,
    database_url: &str,
    what: &str,
) -> anyhow::Result<PeerProcess> {
    let port = crate::topology::free_port()?;
    let child = command
        .process_group(0)
        .args(["--port", &port.to_string(), "--database-url", database_url])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .with_context(|| format!("starting {what}"))?;
    let peer = PeerProcess {
        url: format!("http://127.0.0.1:{port}/mcp"),
        child,
    };
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(30),
            "{what} did not listen within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(peer)
}
