//! Cross-service test support: a sandbox that starts the three services on
//! port 0 through their libraries (SQLite or PostgreSQL), raw MCP calls over
//! HTTP, and the official MCP SDK clients run as external processes.

use std::path::PathBuf;
use std::process::Command;

use chataigne::{Stack, StackConfig};
use serde_json::{Value, json};

pub mod forwarder;
pub mod process;
pub mod stores;

pub use chataigne_common::demo;
pub use chataigne_common::testing::{fresh_postgres_database, in_ci};

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
        let (status, body) = self
            .mcp(
                token,
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                       "params": {"name": name, "arguments": arguments}}),
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

/// The official MCP SDK clients, installed by the shared `setup.sh` into
/// `CHATAIGNE_TEST_MCP_CLIENTS` (see `.ci/run`). `None` outside CI when absent;
/// a panic in CI.
pub struct SdkClients {
    pub python: PathBuf,
    pub python_v1: PathBuf,
    pub pyclient: PathBuf,
    pub conformance: PathBuf,
    pub dir: PathBuf,
}

impl SdkClients {
    pub fn find() -> Option<SdkClients> {
        let dir = std::env::var_os("CHATAIGNE_TEST_MCP_CLIENTS").map(PathBuf::from);
        let scripts = std::env::var_os("CHATAIGNE_TEST_MCP_CLIENT_SCRIPTS").map(PathBuf::from);
        let found = dir.zip(scripts).map(|(dir, scripts)| SdkClients {
            python: dir.join("venv/bin/python"),
            python_v1: dir.join("venv-v1/bin/python"),
            pyclient: scripts.join("pyclient.py"),
            conformance: scripts.join("conformance.sh"),
            dir,
        });
        match found {
            Some(clients) if clients.python.exists() && clients.pyclient.exists() => Some(clients),
            _ if in_ci() => panic!(
                "the MCP SDK clients are required in CI: set CHATAIGNE_TEST_MCP_CLIENTS and CHATAIGNE_TEST_MCP_CLIENT_SCRIPTS (see .ci/run)"
            ),
            _ => {
                eprintln!("skipping: MCP SDK clients not installed (see .ci/run)");
                None
            }
        }
    }

    /// Runs `pyclient.py` with `python`; returns its exit code and JSON output.
    pub fn pyclient(&self, python: &PathBuf, args: &[&str]) -> (i32, Value, String) {
        let output = Command::new(python)
            .arg(&self.pyclient)
            .args(args)
            .output()
            .expect("python client runs");
        let stdout = String::from_utf8_lossy(&output.stdout).to_string();
        let stderr = String::from_utf8_lossy(&output.stderr).to_string();
        let json = serde_json::from_str(&stdout).unwrap_or(Value::Null);
        (output.status.code().unwrap_or(-1), json, stderr)
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
            403 if body["result"]["structuredContent"]["data"]["error"]["code"]
                == "MCP_SCOPE_REQUIRED" =>
            {
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
                match body["result"]["structuredContent"]["data"]["error"]["code"].as_str() {
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
