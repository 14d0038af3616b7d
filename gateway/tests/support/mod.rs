//! Test harness: in-process fake auth-service and tool-service on port 0,
//! a gateway on port-0 listeners, and HTTP helpers for the MCP endpoint.
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use chataigne_common::ErrorCode;
use chataigne_common::codes::FieldViolation;
pub use chataigne_common::grpc_server::GrpcServerLimits;
use chataigne_gateway::{Allowlist, Config, EndpointConfig, Listeners, Profile};
use chataigne_proto::auth::v1::auth_service_server::{AuthService, AuthServiceServer};
use chataigne_proto::auth::v1::{
    AuthenticateRequest, AuthenticateResponse, AuthorizeRequest, AuthorizeResponse, Principal,
    ResolveAccessRequest, ResolveAccessResponse,
};
use chataigne_proto::tools::v1::tool_catalog_server::{ToolCatalog, ToolCatalogServer};
use chataigne_proto::tools::v1::{
    CallToolRequest, CallToolResponse, DeadlineClass, ListToolsRequest, ListToolsResponse,
    ToolAnnotations, ToolDescriptor, ToolKind,
};
use serde_json::{Value, json};
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::{Request, Response, Status};

/// The smallest JSON-RPC request, as a body.
pub const PING: &str = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;

/// Token with every fixture scope.
pub const TOKEN_ALL: &str = "tok-all-5f1c";
/// Token with `orders.read` only.
pub const TOKEN_READ: &str = "tok-read-9a2b";
/// Token the fake auth-service answers too late.
pub const TOKEN_SLOW: &str = "tok-slow-33de";
/// How long the fake auth-service takes over [`TOKEN_SLOW`].
pub const SLOW_AUTH_ANSWERS_AFTER: Duration = Duration::from_secs(3);
/// How long the fake tool-service takes over its `*_slow*` tools.
pub const SLOW_TOOL_ANSWERS_AFTER: Duration = Duration::from_millis(1500);
/// Token the fake auth-service fails with an internal error.
pub const TOKEN_BROKEN: &str = "tok-broken-77aa";
pub const GOOGLE_HOST: &str = "gemini.mcp.example.test";
pub const GOOGLE_ORIGIN: &str = "https://gemini.mcp.example.test";

pub fn assertion_for(user: &str) -> String {
    format!("assertion-of-{user}")
}

// ---------------------------------------------------------------- fake auth

#[derive(Default)]
pub struct AuthLog {
    /// (token, resource) of every Authenticate call.
    pub calls: Vec<(String, String)>,
    /// (caller credential in metadata, `valid_for_ms`) of every Authenticate call.
    pub presented: Vec<(Option<String>, i64)>,
    /// Canonical URLs the fake accepts as audiences.
    pub resources: Vec<String>,
}

#[derive(Clone, Default)]
pub struct FakeAuth(pub Arc<Mutex<AuthLog>>);

fn principal(user: &str, scopes: &[&str]) -> AuthenticateResponse {
    AuthenticateResponse {
        principal: Some(Principal {
            user_id: user.to_owned(),
            client_id: "client-1".to_owned(),
            session_id: "session-1".to_owned(),
            scopes: scopes.iter().map(|s| (*s).to_owned()).collect(),
            platform_admin: false,
            display_name: "Test User".to_owned(),
        }),
        assertion: assertion_for(user),
        assertion_expires_at: 0,
    }
}

#[tonic::async_trait]
impl AuthService for FakeAuth {
    async fn authenticate(
        &self,
        request: Request<AuthenticateRequest>,
    ) -> Result<Response<AuthenticateResponse>, Status> {
        let credential = request
            .metadata()
            .get(chataigne_common::assertion::AssertionContract::CALLER_METADATA)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        let request = request.into_inner();
        let audience_ok = {
            let mut log = self.0.lock().unwrap();
            log.presented.push((credential, request.valid_for_ms));
            log.calls
                .push((request.access_token.clone(), request.resource.clone()));
            log.resources.contains(&request.resource)
        };
        if !audience_ok {
            return Err(ErrorCode::Unauthenticated.status());
        }
        match request.access_token.as_str() {
            TOKEN_ALL => Ok(Response::new(principal(
                "user-1",
                &["orders.read", "orders.write", "analytics.read"],
            ))),
            TOKEN_READ => Ok(Response::new(principal("user-2", &["orders.read"]))),
            TOKEN_SLOW => {
                tokio::time::sleep(SLOW_AUTH_ANSWERS_AFTER).await;
                Ok(Response::new(principal("user-3", &["orders.read"])))
            }
            TOKEN_BROKEN => Err(Status::internal("database exploded")),
            _ => Err(ErrorCode::Unauthenticated.status()),
        }
    }

    async fn authorize(
        &self,
        _request: Request<AuthorizeRequest>,
    ) -> Result<Response<AuthorizeResponse>, Status> {
        Err(Status::unimplemented("not used by the gateway"))
    }

    async fn resolve_access(
        &self,
        _request: Request<ResolveAccessRequest>,
    ) -> Result<Response<ResolveAccessResponse>, Status> {
        Err(Status::unimplemented("not used by the gateway"))
    }

    async fn assertion_keys(
        &self,
        _request: Request<chataigne_proto::auth::v1::AssertionKeysRequest>,
    ) -> Result<Response<chataigne_proto::auth::v1::AssertionKeysResponse>, Status> {
        Err(Status::unimplemented("not used by the gateway"))
    }
}

// ---------------------------------------------------------------- fake tools

/// What the fake tool-service saw of one call.
#[derive(Debug, Clone)]
pub struct SeenCall {
    pub name: String,
    pub arguments_json: String,
    pub request_id: String,
    pub locale: String,
    /// Every metadata entry, lower-case key and value.
    pub metadata: Vec<(String, String)>,
}

#[derive(Default)]
pub struct ToolsLog {
    pub calls: Vec<SeenCall>,
    pub list_calls: usize,
}

#[derive(Clone, Default)]
pub struct FakeTools(pub Arc<Mutex<ToolsLog>>);

fn descriptor(name: &str, scope: &str, write: bool, deadline: DeadlineClass) -> ToolDescriptor {
    ToolDescriptor {
        name: name.to_owned(),
        title: format!("Title of {name}"),
        description: format!("Description of {name}."),
        input_schema_json: r#"{"type":"object","properties":{"note":{"type":"string"}},"additionalProperties":false}"#.to_owned(),
        output_schema_json: r#"{"type":"object"}"#.to_owned(),
        required_scope: scope.to_owned(),
        kind: if write { ToolKind::Write } else { ToolKind::Read } as i32,
        deadline: deadline as i32,
        idempotency_key_required: false,
        annotations: Some(ToolAnnotations {
            read_only_hint: !write,
            destructive_hint: write,
            idempotent_hint: !write,
            open_world_hint: false,
        }),
        rpc: format!("test.Fixture/{name}"),
        // A write's state is read with the fixture's list tool.
        state_read_tool: if write {
            "orders_list".to_owned()
        } else {
            String::new()
        },
        view_uri: String::new(),
    }
}

pub fn fixture_tools() -> Vec<ToolDescriptor> {
    use DeadlineClass::{Analytics, Read, Write};
    vec![
        descriptor("orders_list", "orders.read", false, Read),
        descriptor("order_status_update", "orders.write", true, Write),
        descriptor("analytics_query", "analytics.read", false, Analytics),
        descriptor("customers_list", "customers.read", false, Read),
        descriptor("order_get_missing", "orders.read", false, Read),
        descriptor("orders_rate_limited", "orders.read", false, Read),
        descriptor("orders_invalid", "orders.read", false, Read),
        descriptor("orders_slow", "orders.read", false, Read),
        descriptor("order_slow_write", "orders.write", true, Write),
        descriptor("orders_unavailable", "orders.read", false, Read),
    ]
}

/// The server instructions the fake catalogue gives.
pub const FIXTURE_INSTRUCTIONS: &str = "Fixture tools, run on behalf of the signed-in member.";

#[tonic::async_trait]
impl ToolCatalog for FakeTools {
    async fn list_tools(
        &self,
        _request: Request<ListToolsRequest>,
    ) -> Result<Response<ListToolsResponse>, Status> {
        self.0.lock().unwrap().list_calls += 1;
        Ok(Response::new(ListToolsResponse {
            tools: fixture_tools(),
            writes_enabled: true,
            instructions: FIXTURE_INSTRUCTIONS.to_owned(),
            ..Default::default()
        }))
    }

    async fn call_tool(
        &self,
        request: Request<CallToolRequest>,
    ) -> Result<Response<CallToolResponse>, Status> {
        let metadata = request
            .metadata()
            .iter()
            .filter_map(|entry| match entry {
                tonic::metadata::KeyAndValueRef::Ascii(key, value) => Some((
                    key.as_str().to_owned(),
                    value.to_str().unwrap_or_default().to_owned(),
                )),
                tonic::metadata::KeyAndValueRef::Binary(..) => None,
            })
            .collect();
        let call = request.into_inner();
        self.0.lock().unwrap().calls.push(SeenCall {
            name: call.name.clone(),
            arguments_json: call.arguments_json.clone(),
            request_id: call.request_id.clone(),
            locale: call.locale.clone(),
            metadata,
        });
        let ok = |data: Value, text: &str, cursor: &str| {
            Ok(Response::new(CallToolResponse {
                data_json: data.to_string(),
                text: text.to_owned(),
                next_cursor: cursor.to_owned(),
                truncated: false,
                replayed: false,
            }))
        };
        match call.name.as_str() {
            "orders_list" => ok(
                json!({"orders": [{"id": "ord_1", "status": "received"}]}),
                "1 order.",
                "cursor-abc",
            ),
            "order_status_update" => ok(
                json!({"order": {"id": "ord_1", "status": "accepted"}}),
                "Order ord_1 is now accepted.",
                "",
            ),
            "analytics_query" => ok(json!({"series": []}), "No data.", ""),
            "order_get_missing" => Err(ErrorCode::ResourceNotFound.status()),
            "orders_rate_limited" => Err(ErrorCode::RateLimited.to_status(
                "Too many calls. Retry after the suggested delay.",
                Some(Duration::from_millis(1500)),
                &[],
                &[],
            )),
            "orders_invalid" => Err(ErrorCode::InvalidArguments.to_status(
                "The arguments do not match the tool's input schema. Correct them and call again.",
                None,
                &[FieldViolation {
                    field: "limit".to_owned(),
                    description: "must be at most 50".to_owned(),
                }],
                &[],
            )),
            "orders_slow" | "order_slow_write" => {
                tokio::time::sleep(SLOW_TOOL_ANSWERS_AFTER).await;
                ok(json!({}), "late", "")
            }
            "orders_unavailable" => Err(Status::unavailable("connection refused to 10.0.0.7:5432")),
            _ => Err(ErrorCode::InvalidArguments.status()),
        }
    }
}

// ---------------------------------------------------------------- harness

async fn serve_grpc<S>(service: S, limits: &GrpcServerLimits) -> String
where
    S: tonic::server::NamedService
        + tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    // The fakes run behind the stack every Chataigne gRPC server declares.
    let mut server = chataigne_common::grpc_server::builder(limits);
    tokio::spawn(async move {
        let (_reporter, health) = tonic_health::server::health_reporter();
        server
            .add_service(health)
            .add_service(service)
            .serve_with_incoming(TcpListenerStream::new(listener))
            .await
            .unwrap();
    });
    format!("http://{addr}")
}

/// A port nothing listens on.
pub async fn closed_port_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}")
}

pub struct Harness {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The default MCP endpoint.
    pub mcp: String,
    pub internal: String,
    pub auth: FakeAuth,
    pub tools: FakeTools,
    pub client: reqwest::Client,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

/// Test configuration: short deadlines, a google profile chosen by Host,
/// loopback clients allowed.
pub fn test_config() -> Config {
    let mut config = Config {
        allowlist: Allowlist::loopback(),
        ..Config::default()
    };
    config.deadlines.read_ms = 400;
    config.deadlines.analytics_ms = 400;
    config.deadlines.write_ms = 400;
    config.deadlines.auth_ms = 500;
    config.deadlines.connect_ms = 1000;
    config.authorization_server = Some("https://auth.example.test".to_owned());
    config.allowed_origins = vec!["https://app.example.test".to_owned()];
    config.max_body_bytes = 64 * 1024;
    config.max_json_depth = 16;
    config.endpoints.push(EndpointConfig {
        path: "/mcp/v1".to_owned(),
        profile: Profile::Google,
        hosts: vec![GOOGLE_HOST.to_owned()],
        public_url: Some(GOOGLE_ORIGIN.to_owned()),
        ..EndpointConfig::default()
    });
    config
}

impl Harness {
    pub async fn start() -> Harness {
        Harness::start_with(|_| {}).await
    }

    /// Starts fakes and a gateway on `test_config()` adjusted by `adjust`
    /// (which may replace the backend URLs).
    pub async fn start_with(adjust: impl FnOnce(&mut Config)) -> Harness {
        Harness::start_on("127.0.0.1:0", adjust).await
    }

    /// [`Harness::start_with`] with the public listener bound on `public_bind`
    /// (e.g. `[::1]:0`).
    pub async fn start_on(public_bind: &str, adjust: impl FnOnce(&mut Config)) -> Harness {
        Harness::start_full(public_bind, &GrpcServerLimits::default(), adjust).await
    }

    /// [`Harness::start_with`] with the fake backends' gRPC servers under
    /// `limits`.
    pub async fn start_with_backend_limits(
        limits: &GrpcServerLimits,
        adjust: impl FnOnce(&mut Config),
    ) -> Harness {
        Harness::start_full("127.0.0.1:0", limits, adjust).await
    }

    async fn start_full(
        public_bind: &str,
        limits: &GrpcServerLimits,
        adjust: impl FnOnce(&mut Config),
    ) -> Harness {
        let auth = FakeAuth::default();
        let tools = FakeTools::default();
        let auth_url = serve_grpc(AuthServiceServer::new(auth.clone()), limits).await;
        let tools_url = serve_grpc(ToolCatalogServer::new(tools.clone()), limits).await;
        let public = TcpListener::bind(public_bind).await.unwrap();
        let internal = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", public.local_addr().unwrap());
        let internal_url = format!("http://{}", internal.local_addr().unwrap());
        let mut config = test_config();
        config.auth_service_url = auth_url;
        config.tool_service_url = tools_url;
        adjust(&mut config);
        // The fake auth-service issues for every configured endpoint.
        auth.0.lock().unwrap().resources = config
            .endpoints
            .iter()
            .map(|endpoint| {
                let origin = endpoint.public_url.as_deref().unwrap_or(&base);
                format!("{origin}{}", endpoint.path)
            })
            .collect();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(chataigne_gateway::run(
            config,
            Listeners { public, internal },
            async move {
                let _ = stopped.await;
            },
        ));
        Harness {
            mcp: format!("{base}/mcp/v1"),
            base,
            internal: internal_url,
            auth,
            tools,
            client: reqwest::Client::new(),
            stop: Some(stop),
            task: Some(task),
        }
    }

    /// A POST to the MCP endpoint with every header a good client sends.
    pub fn post(&self, token: &str) -> reqwest::RequestBuilder {
        self.post_with(&self.client, token)
    }

    /// [`Harness::post`] sent by `client` (e.g. one bound to a source address).
    pub fn post_with(&self, client: &reqwest::Client, token: &str) -> reqwest::RequestBuilder {
        client
            .post(&self.mcp)
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2025-11-25")
    }

    /// [`PING`] POSTed to the MCP endpoint with [`TOKEN_ALL`] and only the
    /// `headers` given (none of the ones [`Harness::post`] adds).
    pub async fn ping_with_headers(&self, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut request = self.client.post(&self.mcp).bearer_auth(TOKEN_ALL);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(PING).send().await.unwrap()
    }

    /// A GET of `path` on the public listener.
    pub async fn get_public(&self, path: &str) -> reqwest::Response {
        self.get_public_with(path, &[]).await
    }

    /// [`Harness::get_public`] with extra `headers` (e.g. a `Host`).
    pub async fn get_public_with(&self, path: &str, headers: &[(&str, &str)]) -> reqwest::Response {
        let mut request = self.client.get(format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.send().await.unwrap()
    }

    /// A GET of `path` on the internal listener.
    pub async fn get_internal(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.internal))
            .send()
            .await
            .unwrap()
    }

    /// The Prometheus text of the internal listener's `/metrics`.
    pub async fn metrics(&self) -> String {
        self.get_internal("/metrics").await.text().await.unwrap()
    }

    /// The protected-resource metadata document of the MCP endpoint at
    /// `endpoint` (e.g. `/mcp/v1`), as JSON.
    pub async fn resource_metadata(&self, endpoint: &str) -> Value {
        self.get_public(&format!("/.well-known/oauth-protected-resource{endpoint}"))
            .await
            .json()
            .await
            .unwrap()
    }

    /// Sends `message` with [`Harness::post`]; returns status and JSON body.
    pub async fn rpc(&self, token: &str, message: Value) -> (u16, Value) {
        let response = self
            .post(token)
            .body(message.to_string())
            .send()
            .await
            .unwrap();
        status_and_json(response).await
    }

    /// Same as [`Harness::rpc`] through the google-profile host.
    pub async fn rpc_google(&self, token: &str, message: Value) -> (u16, Value) {
        let response = self
            .post(token)
            .header("host", GOOGLE_HOST)
            .body(message.to_string())
            .send()
            .await
            .unwrap();
        status_and_json(response).await
    }

    pub async fn call_tool(&self, token: &str, name: &str, arguments: Value) -> Value {
        let (status, body) = self
            .rpc(
                token,
                json!({"jsonrpc":"2.0","id":1,"method":"tools/call",
                       "params":{"name":name,"arguments":arguments}}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    pub fn tool_calls(&self) -> Vec<SeenCall> {
        self.tools.0.lock().unwrap().calls.clone()
    }

    pub fn auth_calls(&self) -> Vec<(String, String)> {
        self.auth.0.lock().unwrap().calls.clone()
    }

    /// What each Authenticate call presented: (credential, `valid_for_ms`).
    pub fn auth_presented(&self) -> Vec<(Option<String>, i64)> {
        self.auth.0.lock().unwrap().presented.clone()
    }

    /// Stops the gateway and checks that it ended cleanly.
    pub async fn shutdown(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            tokio::time::timeout(Duration::from_secs(10), task)
                .await
                .expect("gateway stops")
                .expect("gateway task")
                .expect("gateway ran cleanly");
        }
    }
}

pub async fn status_and_json(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or_else(|_| panic!("not JSON: {text:?}"))
    };
    (status, body)
}
