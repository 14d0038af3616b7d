//! Cross-service test support: a sandbox that starts the three services on
//! port 0 through their libraries (SQLite or PostgreSQL), raw MCP calls over
//! HTTP, and the official MCP SDK clients run as external processes.

use std::ffi::OsStr;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use chataigne::{Stack, StackConfig};
use serde_json::{Value, json};

pub mod certs;
pub mod forwarder;
pub mod grpc_tools;
pub mod process;
pub mod stores;
pub mod typed_rpc;

pub use chataigne_common::demo;
pub use chataigne_common::testing::{envelope, fresh_postgres_database, in_ci};

/// Which database backend a sandbox runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A running stack plus the temporary files it owns.
pub struct Sandbox {
    pub stack: Stack,
    _dir: Option<TempDir>,
}

impl std::ops::Deref for Sandbox {
    type Target = Stack;
    fn deref(&self) -> &Stack {
        &self.stack
    }
}

impl Sandbox {
    /// Starts the stack on `backend` with the demo data set. Returns `None` only
    /// for Postgres outside CI when no server is reachable.
    pub async fn start(backend: Backend) -> Option<Sandbox> {
        Sandbox::start_with(backend, |_| {}).await
    }

    /// Like [`Sandbox::start`], with a hook to adjust the configuration.
    pub async fn start_with(
        backend: Backend,
        adjust: impl FnOnce(&mut StackConfig),
    ) -> Option<Sandbox> {
        let (mut config, dir) = match backend {
            Backend::Sqlite => {
                let dir = TempDir::new("sandbox");
                (StackConfig::embedded(&dir.0), Some(dir))
            }
            Backend::Postgres => {
                let auth = fresh_postgres_database("sbx_auth").await?;
                let tools = fresh_postgres_database("sbx_tools").await?;
                (StackConfig::with_databases(&auth, &tools), None)
            }
        };
        // Two months of history cover every test and keep start-up quick.
        config.tools.demo_days = 60;
        adjust(&mut config);
        let stack = chataigne::start(config).await.expect("stack starts");
        Some(Sandbox { stack, _dir: dir })
    }

    /// A token of `user_id` with every business scope.
    pub async fn token(&self, user_id: &str) -> String {
        self.stack
            .token_for(user_id, &demo::demo_token_scopes(), None)
            .await
            .expect("token issued")
    }

    /// The URL of `/mcp/v2` (MCP 2026-07-28) and a token of `user_id` with
    /// every business scope for that endpoint's audience.
    pub async fn modern_endpoint(&self, user_id: &str) -> (String, String) {
        let url = self.stack.endpoint_url("/mcp/v2");
        let token = self
            .stack
            .token_for_resource(user_id, &demo::demo_token_scopes(), None, &url)
            .await
            .expect("token issued");
        (url, token)
    }

    /// The raw body of `message` POSTed to `/mcp/v1` (2025-11-25) with
    /// `token`, on the profile `host` selects (the catch-all when `None`);
    /// the answer must be HTTP 200.
    pub async fn mcp_text(&self, token: &str, host: Option<&str>, message: &Value) -> String {
        let mut request = reqwest::Client::new()
            .post(&self.stack.mcp_url)
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(host) = host {
            request = request.header("host", host);
        }
        let response = request
            .json(message)
            .send()
            .await
            .expect("gateway reachable");
        assert_eq!(response.status(), 200);
        response.text().await.expect("body")
    }

    /// POSTs one JSON-RPC message to the MCP endpoint; returns status and body.
    pub async fn mcp(&self, token: &str, message: Value) -> (u16, Value) {
        let response = reqwest::Client::new()
            .post(&self.stack.mcp_url)
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&message)
            .send()
            .await
            .expect("gateway reachable");
        let status = response.status().as_u16();
        let body = response.json().await.unwrap_or(Value::Null);
        (status, body)
    }

    /// `tools/call` of `name` with `arguments`; returns the JSON-RPC `result`.
    pub async fn call_tool(&self, token: &str, name: &str, arguments: Value) -> Value {
        self.call_tool_in(token, None, name, arguments).await
    }

    /// [`Sandbox::call_tool`] in the user's `locale` (`_meta.user_locale`),
    /// when one is given.
    pub async fn call_tool_in(
        &self,
        token: &str,
        locale: Option<&str>,
        name: &str,
        arguments: Value,
    ) -> Value {
        let mut params = json!({"name": name, "arguments": arguments});
        if let Some(locale) = locale {
            params["_meta"] = json!({"user_locale": locale});
        }
        let (status, body) = self
            .mcp(
                token,
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}),
            )
            .await;
        assert_eq!(status, 200, "tools/call {name}: {body}");
        body.get("result")
            .cloned()
            .unwrap_or_else(|| panic!("no result for {name}: {body}"))
    }

    pub async fn shutdown(self) {
        self.stack.shutdown().await.expect("clean shutdown");
    }
}

/// A directory removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(prefix: &str) -> TempDir {
        let dir = std::env::temp_dir().join(format!(
            "chataigne-{prefix}-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&dir).expect("temp dir");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The official MCP clients the tests drive as external processes: installed
/// by `tests/clients/setup.sh` into `CHATAIGNE_TEST_MCP_CLIENTS` (see
/// `scripts/test.sh`), run through the project's scripts in `tests/clients/`.
/// `None` outside CI when they are not installed; a panic in CI.
pub struct SdkClients {
    /// Python with the `mcp` SDK 2.x.
    pub python: PathBuf,
    /// Python with the `mcp` SDK 1.x.
    pub python_v1: PathBuf,
    /// Node.js 22, for the TypeScript SDK, the Inspector and the conformance suite.
    pub node22: PathBuf,
    /// One call through the Python SDK (`pyclient.py`).
    pub pyclient: PathBuf,
    /// Plan runners (`sdk_session.py`, `ts_session.mjs`, `inspector_session.mjs`).
    pub sdk_session: PathBuf,
    pub ts_session: PathBuf,
    pub inspector_session: PathBuf,
    /// Strict AJV compilation of listed tool schemas (`schema_check.mjs`).
    pub schema_check: PathBuf,
    /// The conformance suite runner (`conformance.sh`).
    pub conformance: PathBuf,
    /// Where `setup.sh` installed the clients.
    pub dir: PathBuf,
}

/// A client that runs a plan of tool calls (see `tests/clients/sdk_session.py`
/// for the plan and report formats, shared by every driver).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// Python SDK 2.x (`sdk_session.py`).
    Python,
    /// Python SDK 1.x (`sdk_session.py`).
    PythonV1,
    /// TypeScript SDK (`ts_session.mjs`).
    TypeScript,
    /// TypeScript SDK v2 client, `@modelcontextprotocol/client`
    /// (`ts_session.mjs --sdk v2`); not in [`Driver::ALL`], which holds the
    /// clients of the 2025 protocol versions.
    TypeScriptV2,
    /// MCP Inspector 2, `--cli` (`inspector_session.mjs`).
    Inspector,
    /// MCP Inspector CLI 1.x (`inspector_session.mjs`).
    InspectorV1,
}

impl Driver {
    pub const ALL: [Driver; 5] = [
        Driver::Python,
        Driver::PythonV1,
        Driver::TypeScript,
        Driver::Inspector,
        Driver::InspectorV1,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Driver::Python => "Python SDK 2.x",
            Driver::PythonV1 => "Python SDK 1.x",
            Driver::TypeScript => "TypeScript SDK",
            Driver::TypeScriptV2 => "TypeScript SDK v2 client",
            Driver::Inspector => "Inspector 2",
            Driver::InspectorV1 => "Inspector CLI 1.x",
        }
    }

    /// Whether the plan's `protocolVersion` can choose what the client offers
    /// in `initialize` (the Inspector always offers its own).
    pub fn offers_any_protocol_version(self) -> bool {
        !matches!(self, Driver::Inspector | Driver::InspectorV1)
    }
}

/// Runs `program args` with `stdin`; returns the exit code, stdout parsed as
/// JSON (`null` when it is not) and stderr.
fn run_json(program: &Path, args: &[&OsStr], stdin: &[u8]) -> (i32, Value, String) {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{} starts: {e}", program.display()));
    let mut input = child.stdin.take().expect("stdin");
    input.write_all(stdin).expect("stdin written");
    drop(input);
    let output = child.wait_with_output().expect("client ends");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
    (output.status.code().unwrap_or(-1), json, stderr)
}

impl SdkClients {
    pub fn find() -> Option<SdkClients> {
        let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients");
        let found = std::env::var_os("CHATAIGNE_TEST_MCP_CLIENTS").map(|dir| {
            let dir = PathBuf::from(dir);
            SdkClients {
                python: dir.join("venv/bin/python"),
                python_v1: dir.join("venv-v1/bin/python"),
                node22: dir.join("node22/node"),
                pyclient: scripts.join("pyclient.py"),
                sdk_session: scripts.join("sdk_session.py"),
                ts_session: scripts.join("ts_session.mjs"),
                inspector_session: scripts.join("inspector_session.mjs"),
                schema_check: scripts.join("schema_check.mjs"),
                conformance: scripts.join("conformance.sh"),
                dir,
            }
        });
        match found {
            Some(clients)
                if [&clients.python, &clients.python_v1, &clients.node22]
                    .iter()
                    .all(|p| p.exists())
                    && clients.dir.join("versions").exists() =>
            {
                Some(clients)
            }
            _ if in_ci() => panic!(
                "the MCP clients are required in CI: install them with tests/clients/setup.sh DIR and set CHATAIGNE_TEST_MCP_CLIENTS=DIR (scripts/test.sh does both)"
            ),
            _ => {
                eprintln!(
                    "skipping: MCP clients not installed (scripts/test.sh installs them with tests/clients/setup.sh)"
                );
                None
            }
        }
    }

    /// The installed clients beside a SQLite sandbox with the demo data:
    /// `None` when [`SdkClients::find`] finds none.
    pub async fn with_sqlite_sandbox() -> Option<(SdkClients, Sandbox)> {
        let clients = SdkClients::find()?;
        let sandbox = Sandbox::start(Backend::Sqlite)
            .await
            .expect("sqlite sandbox");
        Some((clients, sandbox))
    }

    /// Runs `pyclient.py` with `python`; returns its exit code and JSON output.
    pub fn pyclient(&self, python: &Path, args: &[&str]) -> (i32, Value, String) {
        let mut all: Vec<&OsStr> = vec![self.pyclient.as_os_str()];
        all.extend(args.iter().map(OsStr::new));
        run_json(python, &all, b"")
    }

    /// Runs `plan` through `driver`; returns the exit code, the report and
    /// stderr. The Inspector drivers add the plan's `"inspector"` line.
    pub fn run_plan(&self, driver: Driver, plan: &Value) -> (i32, Value, String) {
        let mut plan = plan.clone();
        let clients = ["--clients".as_ref(), self.dir.as_os_str()];
        let (program, args): (&Path, Vec<&OsStr>) = match driver {
            Driver::Python => (&self.python, vec![self.sdk_session.as_os_str()]),
            Driver::PythonV1 => (&self.python_v1, vec![self.sdk_session.as_os_str()]),
            Driver::TypeScript => (
                &self.node22,
                [&[self.ts_session.as_os_str()], &clients[..]].concat(),
            ),
            Driver::TypeScriptV2 => (
                &self.node22,
                [
                    &[self.ts_session.as_os_str()],
                    &clients[..],
                    &["--sdk".as_ref(), "v2".as_ref()],
                ]
                .concat(),
            ),
            Driver::Inspector | Driver::InspectorV1 => {
                plan["inspector"] = json!(if driver == Driver::Inspector {
                    "v2"
                } else {
                    "v1"
                });
                (
                    &self.node22,
                    [&[self.inspector_session.as_os_str()], &clients[..]].concat(),
                )
            }
        };
        let (code, report, stderr) = run_json(program, &args, plan.to_string().as_bytes());
        assert!(
            report.is_object(),
            "{}: the report is JSON (exit {code})\n{stderr}",
            driver.label()
        );
        (code, report, stderr)
    }

    /// Compiles every schema of `listed` (a `tools/list` result) with AJV in
    /// strict mode; returns the exit code and the report
    /// `{"tools", "errors", "warnings"}`.
    pub fn schema_check(&self, listed: &Value) -> (i32, Value, String) {
        let args = [
            self.schema_check.as_os_str(),
            "--clients".as_ref(),
            self.dir.as_os_str(),
        ];
        run_json(&self.node22, &args, listed.to_string().as_bytes())
    }
}

/// What a `tools/call` over MCP HTTP ended in, as the authorization tests
/// classify it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A result without `isError`.
    Ok,
    /// `MCP_RESOURCE_FORBIDDEN`.
    Forbidden,
    /// `MCP_RESOURCE_NOT_FOUND`.
    NotFound,
    /// `MCP_SCOPE_REQUIRED` (HTTP 403 with an `insufficient_scope` challenge).
    ScopeRequired,
    /// JSON-RPC -32602 "Unknown tool": hidden or absent.
    Hidden,
    /// HTTP 401.
    Unauthenticated,
    /// Anything else (reported with the body).
    Other,
}

impl Sandbox {
    /// A token of `user_id` with exactly `scopes`.
    pub async fn token_with(&self, user_id: &str, scopes: &[&str]) -> String {
        self.stack
            .token_for(user_id, scopes, None)
            .await
            .expect("token issued")
    }

    /// `tools/call` classified; also returns the HTTP status and body.
    pub async fn call_outcome(
        &self,
        token: &str,
        name: &str,
        arguments: Value,
    ) -> (Outcome, u16, Value) {
        let (status, body) = self
            .mcp(
                token,
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}),
            )
            .await;
        let outcome = match status {
            401 => Outcome::Unauthenticated,
            403 if envelope(&body["result"])["data"]["error"]["code"] == "MCP_SCOPE_REQUIRED" => {
                Outcome::ScopeRequired
            }
            200 if body["error"]["code"] == -32602
                && body["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with("Unknown tool")) =>
            {
                Outcome::Hidden
            }
            200 if body["result"]["isError"] == true => {
                match envelope(&body["result"])["data"]["error"]["code"].as_str() {
                    Some("MCP_RESOURCE_FORBIDDEN") => Outcome::Forbidden,
                    Some("MCP_RESOURCE_NOT_FOUND") => Outcome::NotFound,
                    Some("MCP_SCOPE_REQUIRED") => Outcome::ScopeRequired,
                    _ => Outcome::Other,
                }
            }
            200 if body["result"].is_object() => Outcome::Ok,
            _ => Outcome::Other,
        };
        (outcome, status, body)
    }

    /// Registers a service account with `scopes` and a `role` membership on
    /// `organization_id`; returns its client id and secret.
    pub async fn service_account(
        &self,
        client_id: &str,
        scopes: &str,
        organization_id: &str,
        role: &str,
    ) -> (String, String) {
        let registered = self
            .stack
            .auth
            .add_client(chataigne_auth::NewClientRequest {
                client_id: client_id.to_owned(),
                name: format!("Service {client_id}"),
                kind: chataigne_auth::ClientKind::Service,
                redirect_uris: Vec::new(),
                allowed_scopes: vec![scopes.to_owned()],
            })
            .await
            .expect("service client registered");
        let user = registered.service_user_id.expect("service user");
        self.stack
            .auth
            .add_membership(&user, organization_id, None, role)
            .await
            .expect("membership added");
        (registered.client_id, registered.secret.expect("secret"))
    }

    /// A service-account token from the token endpoint (`client_credentials`).
    pub async fn client_credentials_token(&self, client_id: &str, secret: &str) -> String {
        let response = reqwest::Client::new()
            .post(format!("{}/token", self.stack.auth_http_url))
            .basic_auth(client_id, Some(secret))
            .form(&[("grant_type", "client_credentials")])
            .send()
            .await
            .expect("token endpoint reachable");
        let body: Value = response.json().await.expect("token response");
        body["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("no access token: {body}"))
            .to_owned()
    }
}
