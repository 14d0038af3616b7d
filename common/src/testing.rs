//! Test support shared by every crate's test suites: fresh PostgreSQL databases
//! on the machine's server, failing (not skipping) under `CI=true`, the
//! services' binaries run with only the configuration a test gives them, and
//! the one way to wait for something outside the tokio clock (`eventually`).

use std::time::Duration;

use sqlx::{Connection, Executor, PgConnection};

pub use crate::eventually::{
    POLL_EVERY, eventually, eventually_blocking, eventually_every, eventually_some,
    eventually_some_every,
};

/// The server tests create their databases on; `CHATAIGNE_TEST_POSTGRES_URL`
/// overrides the default local trust-auth server.
pub fn postgres_admin_url() -> String {
    std::env::var("CHATAIGNE_TEST_POSTGRES_URL")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned())
}

/// Runs `binary` with `args` and only the environment `env` (none of the
/// test run's own `CHATAIGNE_*` variables); returns whether it succeeded,
/// its stdout and its stderr.
pub fn run_with_env(binary: &str, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    let output = std::process::Command::new(binary)
        .args(args)
        .env_clear()
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|error| panic!("{binary} runs: {error}"));
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The revision a build of this checkout embeds, asked of git now:
/// `CHATAIGNE_BUILD_REVISION` when set, else `git rev-parse --short=12
/// HEAD`, else `unknown` (no git, no repository).
pub fn checkout_revision() -> String {
    if let Some(given) = std::env::var("CHATAIGNE_BUILD_REVISION")
        .ok()
        .map(|revision| revision.trim().to_owned())
        .filter(|revision| !revision.is_empty())
    {
        return given;
    }
    std::process::Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|output| output.status.success())
        .and_then(|output| String::from_utf8(output.stdout).ok())
        .map(|line| line.trim().to_owned())
        .filter(|line| !line.is_empty())
        .unwrap_or_else(|| "unknown".to_owned())
}

/// Asserts that `binary --version` prints the binary's name, then this
/// release's version and the revision of the checkout it was built from
/// (the commit git names HEAD now).
pub fn assert_prints_its_version(binary: &str) {
    let (ok, out, err) = run_with_env(binary, &["--version"], &[]);
    assert!(ok, "{err}");
    let line = out.trim();
    assert!(line.starts_with("chataigne"), "{line}");
    let revision = checkout_revision();
    assert_eq!(crate::metrics::REVISION, revision, "built from HEAD");
    assert!(
        line.ends_with(&format!(
            " {} (revision {revision})",
            crate::metrics::VERSION
        )),
        "{line}"
    );
}

/// Asserts that each of `commands` of `binary`, run with no configuration
/// at all in an empty directory, refuses naming `CHATAIGNE_DATABASE__URL`
/// and `--data-dir`, prints nothing (no secret for a database nobody
/// configured) and creates no file.
pub fn assert_commands_need_a_database(binary: &str, commands: &[&[&str]]) {
    let dir = std::env::temp_dir().join(format!("chataigne-noconfig-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|error| panic!("{dir:?}: {error}"));
    for args in commands {
        let output = std::process::Command::new(binary)
            .args(*args)
            .current_dir(&dir)
            .env_clear()
            .output()
            .unwrap_or_else(|error| panic!("{binary} runs: {error}"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(!output.status.success(), "{args:?}: {stdout}");
        assert!(
            stderr.contains("CHATAIGNE_DATABASE__URL"),
            "{args:?}: {stderr}"
        );
        assert!(stderr.contains("--data-dir"), "{args:?}: {stderr}");
        assert!(stdout.is_empty(), "nothing printed (no secret): {stdout}");
    }
    let created: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|error| panic!("{dir:?}: {error}"))
        .collect();
    assert!(created.is_empty(), "no file created: {created:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// Asserts the hardening every answer of a public listener carries
/// (`crate::hardening`): `nosniff`, HSTS exactly as `hsts` says, and on an
/// HTML page a CSP with `frame-ancestors 'none'` and a `Referrer-Policy`.
pub fn assert_hardened_headers(what: &str, headers: &http::HeaderMap, hsts: Option<&str>) {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    assert_eq!(header("x-content-type-options"), Some("nosniff"), "{what}");
    assert_eq!(header("strict-transport-security"), hsts, "{what}");
    if header("content-type").is_some_and(|v| v.starts_with("text/html")) {
        let csp = header("content-security-policy").unwrap_or_default();
        assert!(csp.contains("frame-ancestors 'none'"), "{what}: {csp}");
        assert!(headers.contains_key("referrer-policy"), "{what}");
    }
}

/// Whether the tests run in CI, where every backend must be tested for real.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true" || v == "1")
}

/// Creates an empty database with a unique name and returns its URL.
///
/// Returns `None` (after saying so on stderr) when no server is reachable
/// outside CI; panics in CI, where a missing Postgres is a failure.
pub async fn fresh_postgres_database(prefix: &str) -> Option<String> {
    let admin_url = postgres_admin_url();
    let connect = tokio::time::timeout(Duration::from_secs(5), PgConnection::connect(&admin_url));
    let mut admin = match connect.await {
        Ok(Ok(conn)) => conn,
        Ok(Err(error)) => return unreachable_postgres(&admin_url, &error.to_string()),
        Err(_) => return unreachable_postgres(&admin_url, "connection timed out"),
    };
    let name = format!(
        "{prefix}_{}",
        uuid::Uuid::new_v4()
            .simple()
            .to_string()
            .get(..16)
            .unwrap_or("x")
    );
    let create = format!("CREATE DATABASE \"{name}\"");
    if let Err(error) = admin.execute(sqlx::AssertSqlSafe(create)).await {
        panic!("could not create test database {name}: {error}");
    }
    let base = admin_url
        .rsplit_once('/')
        .map(|(base, _)| base.to_owned())
        .unwrap_or(admin_url);
    Some(format!("{base}/{name}"))
}

fn unreachable_postgres(url: &str, error: &str) -> Option<String> {
    if in_ci() {
        panic!("PostgreSQL at {url} is required in CI and unreachable: {error}");
    }
    eprintln!("skipping PostgreSQL tests: {url} unreachable ({error})");
    None
}

/// URL of the Redis server tests use; `CHATAIGNE_TEST_REDIS_URL` overrides it.
pub fn redis_url() -> String {
    std::env::var("CHATAIGNE_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// The Chataigne envelope `{data, meta}` of a `CallToolResult` (as JSON),
/// whatever the profile and outcome: its `structuredContent` when it has one,
/// else the JSON of its last text block (failures, and every result of the
/// Connected Apps profile); `null` when neither holds it.
pub fn envelope(result: &serde_json::Value) -> serde_json::Value {
    if let Some(structured) = result.get("structuredContent") {
        return structured.clone();
    }
    result["content"]
        .as_array()
        .and_then(|blocks| blocks.last())
        .and_then(|block| block["text"].as_str())
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(serde_json::Value::Null)
}

/// Runs each named test scenario once per database backend: for every name it
/// defines a module of that name holding a `sqlite` and a `postgres` test.
///
/// `sqlite:` builds the SQLite fixture; `postgres:` evaluates to an `Option`
/// of the PostgreSQL fixture, `None` when no server is reachable (a failure in
/// CI, reported by [`fresh_postgres_database`], and asserted here again; a
/// skip, said on stderr, elsewhere). `run: |fixture| (args…)` is the argument
/// list each scenario is called with; the optional `finish:` expression tears
/// the fixture down afterwards, and the optional `runtime:` holds the
/// arguments of `#[tokio::test]` (current-thread by default). A test name may
/// be `behaviour = scenario` to call a scenario function of another name.
/// The modules `use super::*`, so the expressions are written as in the
/// calling module.
///
/// ```text
/// chataigne_common::on_both_backends! {
///     sqlite: support::loaded_sqlite(data()).await,
///     postgres: support::loaded_postgres("tools", data()).await,
///     run: |store| (&store, data()),
///     tests: [load_is_idempotent, orders_paginate_exactly_once],
/// }
/// ```
#[macro_export]
macro_rules! on_both_backends {
    (
        $(runtime: $runtime:tt,)?
        sqlite: $sqlite:expr,
        postgres: $postgres:expr,
        run: |$fixture:ident| $args:tt,
        $(finish: $finish:expr,)?
        tests: [$($name:ident $(= $scenario:ident)?),* $(,)?] $(,)?
    ) => {
        $crate::on_both_backends!(@expand
            runtime: [$($runtime)? (flavor = "current_thread")],
            sqlite: $sqlite,
            postgres: $postgres,
            run: |$fixture| $args,
            finish: { $($finish;)? },
            tests: [$($name $(= $scenario)?),*]
        );
    };
    (@expand
        runtime: [$runtime:tt $($_default:tt)*],
        sqlite: $sqlite:expr,
        postgres: $postgres:expr,
        run: |$fixture:ident| $args:tt,
        finish: $finish:block,
        tests: [$($name:ident $(= $scenario:ident)?),*]
    ) => {$(
        mod $name {
            #[allow(unused_imports)]
            use super::*;

            #[tokio::test $runtime]
            async fn sqlite() {
                let $fixture = $sqlite;
                ($crate::on_both_backends!(@scenario $name $($scenario)?)) $args.await;
                $finish
            }

            #[tokio::test $runtime]
            async fn postgres() {
                match $postgres {
                    Some($fixture) => {
                        ($crate::on_both_backends!(@scenario $name $($scenario)?)) $args.await;
                        $finish
                    }
                    None => assert!(
                        !$crate::testing::in_ci(),
                        "PostgreSQL is required in CI"
                    ),
                }
            }
        }
    )*};
    (@scenario $name:ident) => { $name };
    (@scenario $name:ident $scenario:ident) => { $scenario };
}

/// A Redis Cluster of three masters on free local ports, started by the
/// tests themselves (`redis-server --cluster-enabled yes` ×3, joined by
/// `redis-cli --cluster create`), in a temporary directory; the servers are
/// killed and the directory removed when it drops.
pub struct RedisCluster {
    servers: Vec<std::process::Child>,
    ports: Vec<u16>,
    dir: std::path::PathBuf,
}

impl RedisCluster {
    /// Starts the cluster and waits until every slot is served. `None`
    /// (after saying so on stderr) when `redis-server` is not installed
    /// outside CI; panics in CI, where a missing binary is a failure.
    pub async fn start() -> Option<RedisCluster> {
        use std::process::{Command, Stdio};
        if Command::new("redis-server")
            .arg("--version")
            .output()
            .is_err()
        {
            if in_ci() {
                panic!("redis-server is required in CI to test Redis Cluster and is not installed");
            }
            eprintln!("skipping Redis Cluster tests: redis-server is not installed");
            return None;
        }
        let dir = std::env::temp_dir().join(format!(
            "chataigne-redis-cluster-{}",
            uuid::Uuid::new_v4().simple()
        ));
        let mut cluster = RedisCluster {
            servers: Vec::new(),
            ports: Vec::new(),
            dir,
        };
        for node in 0..3 {
            let port = cluster_port();
            let dir = cluster.dir.join(node.to_string());
            std::fs::create_dir_all(&dir)
                .unwrap_or_else(|error| panic!("temporary directory: {error}"));
            let server = Command::new("redis-server")
                .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
                .args([
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                ])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|error| panic!("redis-server starts: {error}"));
            cluster.servers.push(server);
            cluster.ports.push(port);
        }
        for port in cluster.ports.clone() {
            eventually(
                &format!("redis-server on {port} answers"),
                Duration::from_secs(20),
                || async move { redis_cli(port, &["PING"]).is_some_and(|out| out.contains("PONG")) },
            )
            .await;
        }
        let nodes: Vec<String> = cluster
            .ports
            .iter()
            .map(|port| format!("127.0.0.1:{port}"))
            .collect();
        let created = Command::new("redis-cli")
            .args(["--cluster", "create"])
            .args(&nodes)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .unwrap_or_else(|error| panic!("redis-cli runs: {error}"));
        assert!(
            created.status.success(),
            "redis-cli --cluster create: {}",
            String::from_utf8_lossy(&created.stdout)
        );
        for port in cluster.ports.clone() {
            eventually(
                &format!("the cluster node on {port} serves every slot"),
                Duration::from_secs(20),
                || async move {
                    redis_cli(port, &["CLUSTER", "INFO"])
                        .is_some_and(|out| out.contains("cluster_state:ok"))
                },
            )
            .await;
        }
        Some(cluster)
    }

    /// The URL of one node (the cluster client's seed).
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.ports[0])
    }

    /// The ports of the three masters.
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for server in &mut self.servers {
            let _ = server.kill();
            let _ = server.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A free port whose cluster bus port (+10000) is free too.
fn cluster_port() -> u16 {
    loop {
        let Ok(port) = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .map(|address| address.port())
        else {
            continue;
        };
        if port < 55_000 && std::net::TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

/// `redis-cli -p port args…`'s output, when it succeeded.
fn redis_cli(port: u16, args: &[&str]) -> Option<String> {
    let output = std::process::Command::new("redis-cli")
        .args(["-p", &port.to_string()])
        .args(args)
        .output()
        .ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).into_owned())
}
