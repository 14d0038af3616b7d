//! Privacy canaries across the three services: with everything they emit
//! captured in this process (JSON logs at TRACE, and OpenTelemetry spans
//! through an in-memory exporter), distinct canary values go through every
//! tool's arguments (realistic calls and hostile ones), cursors, idempotency
//! keys, every OAuth flow over real HTTP (sign-in and consent, code + PKCE,
//! refresh, refresh reuse, revocation, client credentials, failed sign-ins)
//! and invalid bearer tokens. None of them — nor the real codes, tokens,
//! cursors and secrets the flows issue — may appear in a log line, a span
//! (name, attribute, event) or a `/metrics` page. The capture must hold every
//! response's `request_id`, so the test can fail.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::{Arc, Mutex};

use aws_lc_rs::digest::{SHA256, digest};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chataigne_proto::tools::v1::{ListOrdersRequest, Page, restaurant_client::RestaurantClient};
use chataigne_tests::{Backend, Sandbox, demo};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use serde_json::{Map, Value, json};
use tracing::Level;
use tracing_subscriber::filter::{LevelFilter, Targets};
use tracing_subscriber::prelude::*;

const REDIRECT: &str = "http://127.0.0.1/callback";

/// Everything written by the JSON log layer.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Capture {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner())).into_owned()
    }
}

/// The values that must never be seen, with what each one is.
#[derive(Default)]
struct Secrets {
    values: Vec<(String, String)>,
    request_ids: Vec<String>,
}

impl Secrets {
    /// A fresh canary for `what`: letters and digits only, so no encoding
    /// (JSON, URL) can hide it.
    fn canary(&mut self, what: &str) -> String {
        let value = format!("CNRY{}Z", uuid::Uuid::new_v4().simple());
        self.values.push((what.to_owned(), value.clone()));
        value
    }

    /// A real secret issued by a flow (code, token, cursor).
    fn issued(&mut self, what: &str, value: &str) {
        assert!(
            value.len() >= 16,
            "{what} looks too short to search: {value}"
        );
        self.values.push((what.to_owned(), value.to_owned()));
    }
}

/// Issues MCP requests and remembers every response's request id.
struct Client<'a> {
    sandbox: &'a Sandbox,
    http: reqwest::Client,
}

impl Client<'_> {
    async fn mcp(
        &self,
        secrets: &mut Secrets,
        token: &str,
        message: Value,
        extra_header: Option<(&str, &str)>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .post(&self.sandbox.mcp_url)
            .bearer_auth(token)
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(&message);
        if let Some((name, value)) = extra_header {
            request = request.header(name, value);
        }
        let response = request.send().await.expect("gateway reachable");
        let status = response.status().as_u16();
        let request_id = response
            .headers()
            .get("x-request-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no x-request-id on a {status} answer"));
        secrets.request_ids.push(request_id);
        let body: Value = response.json().await.unwrap_or(Value::Null);
        if let Some(id) = chataigne_tests::envelope(&body["result"])["meta"]["request_id"].as_str()
        {
            secrets.request_ids.push(id.to_owned());
        }
        (status, body)
    }

    /// `tools/list` with JSON-RPC id `id`.
    async fn list(&self, secrets: &mut Secrets, token: &str, id: u32) -> (u16, Value) {
        self.mcp(
            secrets,
            token,
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}),
            None,
        )
        .await
    }

    async fn call(
        &self,
        secrets: &mut Secrets,
        token: &str,
        name: &str,
        arguments: Value,
    ) -> (u16, Value) {
        self.mcp(
            secrets,
            token,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": name, "arguments": arguments}}),
            None,
        )
        .await
    }
}

/// Real identifiers harvested from list results, by argument name.
type Known = BTreeMap<String, String>;

/// Which arguments a call gets.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The required arguments only, realistic: the call does its work.
    Required,
    /// Every argument but the cursor, realistic (filters hold canaries).
    Full,
    /// A canary in every string, and an unexpected argument.
    Hostile,
}

/// Arguments for `schema`. Realistic: known identifiers, valid enums, dates
/// and units, canaries in every free text. Hostile: a canary in every string.
fn arguments(
    schema: &Value,
    mode: Mode,
    known: &Known,
    secrets: &mut Secrets,
    tool: &str,
) -> Value {
    let realistic = mode != Mode::Hostile;
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut out = Map::new();
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            let wanted = match mode {
                Mode::Required => required.contains(&name.as_str()),
                Mode::Full => name != "cursor",
                Mode::Hostile => true,
            };
            if wanted {
                let value = value_for(name, property, realistic, known, secrets, tool);
                out.insert(name.clone(), value);
            }
        }
    }
    if !realistic {
        out.insert(
            "unexpected_note".to_owned(),
            json!(secrets.canary(&format!("{tool}.unexpected_note"))),
        );
    }
    Value::Object(out)
}

/// The schema of `property`, following a single `$ref`, `allOf` or
/// nullable `anyOf`/`oneOf` wrapper.
fn resolved<'a>(property: &'a Value, root: &'a Value) -> &'a Value {
    if let Some(reference) = property["$ref"].as_str() {
        let path = reference.trim_start_matches("#/");
        let mut target = root;
        for part in path.split('/') {
            target = &target[part];
        }
        return resolved(target, root);
    }
    for wrapper in ["allOf", "anyOf", "oneOf"] {
        if let Some(options) = property[wrapper].as_array()
            && let Some(first) = options.iter().find(|option| option["type"] != "null")
        {
            return resolved(first, root);
        }
    }
    property
}

fn value_for(
    name: &str,
    property: &Value,
    realistic: bool,
    known: &Known,
    secrets: &mut Secrets,
    tool: &str,
) -> Value {
    let root = ROOT.with(|root| root.borrow().clone());
    let property = resolved(property, &root).clone();
    let kind = match &property["type"] {
        Value::Array(kinds) => kinds
            .iter()
            .find(|kind| *kind != "null")
            .cloned()
            .unwrap_or(Value::Null),
        other => other.clone(),
    };
    let label = format!("{tool}.{name}");
    match kind.as_str() {
        Some("integer") | Some("number") => {
            let minimum = property["minimum"].as_i64().unwrap_or(1).max(1);
            json!(if name == "limit" {
                2.max(minimum)
            } else {
                minimum
            })
        }
        Some("boolean") => json!(true),
        Some("array") => {
            let item = value_for(name, &property["items"], realistic, known, secrets, tool);
            json!([item])
        }
        Some("object") => {
            let mut out = Map::new();
            if let Some(properties) = property["properties"].as_object() {
                for (inner, schema) in properties {
                    let value = value_for(inner, schema, realistic, known, secrets, tool);
                    out.insert(inner.clone(), value);
                }
            }
            Value::Object(out)
        }
        _ if !realistic => json!(secrets.canary(&label)),
        _ => {
            if let Some(first) = property["enum"].as_array().and_then(|v| v.first()) {
                return first.clone();
            }
            if let Some(constant) = property.get("const") {
                return constant.clone();
            }
            if let Some(id) = known.get(name) {
                return json!(id);
            }
            match (name, property["format"].as_str()) {
                (_, Some("date")) => json!("2026-01-01"),
                (_, Some("date-time")) => json!("2026-01-01T00:00:00Z"),
                ("date_from", _) => json!("2025-10-01"),
                ("date_to", _) => json!("2025-10-31"),
                ("timezone", _) => json!("Europe/Paris"),
                ("currency", _) => json!("EUR"),
                ("country", _) => json!("FR"),
                ("postal_code", _) => json!("75011"),
                _ => json!(secrets.canary(&label)),
            }
        }
    }
}

thread_local! {
    /// The input schema being filled (for `$ref`s into its `$defs`).
    static ROOT: std::cell::RefCell<Value> = const { std::cell::RefCell::new(Value::Null) };
}

/// Remembers the first identifier of each harvested list.
fn harvest(known: &mut Known, data: &Value) {
    for (list, argument) in [
        ("orders", "order_id"),
        ("conversations", "conversation_id"),
        ("customers", "customer_id"),
        ("items", "item_id"),
        ("categories", "category_id"),
    ] {
        if let Some(id) = data[list][0]["id"].as_str() {
            known
                .entry(argument.to_owned())
                .or_insert_with(|| id.to_owned());
        }
    }
}

/// A browser without redirects, keeping cookies by name.
struct Browser {
    http: reqwest::Client,
    base: String,
    cookies: Vec<(String, String)>,
}

impl Browser {
    fn new(base: &str) -> Browser {
        Browser {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .expect("client"),
            base: base.to_owned(),
            cookies: Vec::new(),
        }
    }

    fn keep(&mut self, response: &reqwest::Response) {
        for value in response.headers().get_all("set-cookie") {
            let value = value.to_str().expect("ascii cookie");
            let (pair, _) = value.split_once(';').unwrap_or((value, ""));
            let (name, v) = pair.split_once('=').expect("name=value");
            self.cookies.retain(|(k, _)| k != name);
            self.cookies.push((name.to_owned(), v.to_owned()));
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    async fn get(&mut self, path: &str) -> (u16, Option<String>, String) {
        let url = if path.starts_with("http") {
            path.to_owned()
        } else {
            format!("{}{path}", self.base)
        };
        let request = self.http.get(url);
        self.send(request).await
    }

    async fn post(
        &mut self,
        path: &str,
        form: &[(String, String)],
    ) -> (u16, Option<String>, String) {
        let request = self.http.post(format!("{}{path}", self.base)).form(form);
        self.send(request).await
    }

    /// Sends `request` with the cookies kept so far, keeps the ones it sets;
    /// returns status, `Location` and body.
    async fn send(&mut self, request: reqwest::RequestBuilder) -> (u16, Option<String>, String) {
        let response = request
            .header("cookie", self.cookie_header())
            .send()
            .await
            .expect("auth-service reachable");
        self.keep(&response);
        let status = response.status().as_u16();
        let location = location(&response);
        (status, location, response.text().await.unwrap_or_default())
    }
}

fn location(response: &reqwest::Response) -> Option<String> {
    response
        .headers()
        .get("location")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned)
}

/// The value of the hidden field `name` in an HTML page.
fn field(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("{name} in {html}"))
        + marker.len();
    let end = html[start..].find('"').expect("closing quote") + start;
    html[start..end].replace("&amp;", "&")
}

/// The hidden authorization fields of a form page, plus `extra`.
fn form_of(html: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut form: Vec<(String, String)> = [
        "response_type",
        "client_id",
        "redirect_uri",
        "scope",
        "state",
        "code_challenge",
        "code_challenge_method",
        "resource",
        "csrf",
    ]
    .iter()
    .map(|name| ((*name).to_owned(), field(html, name)))
    .collect();
    form.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    form
}

/// The `/authorize` query of the demo client for `challenge`.
fn authorize_path(sandbox: &Sandbox, challenge: &str, state: &str) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query
        .append_pair("response_type", "code")
        .append_pair("client_id", demo::DEMO_CLIENT_ID)
        .append_pair("redirect_uri", REDIRECT)
        .append_pair("scope", "orders.read location.read")
        .append_pair("state", state)
        .append_pair("code_challenge", challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("resource", &sandbox.mcp_url);
    format!("/authorize?{}", query.finish())
}

/// POSTs a form to the token or revocation endpoint; returns status and JSON.
async fn post_form(
    sandbox: &Sandbox,
    path: &str,
    form: &[(&str, &str)],
    basic: Option<(&str, &str)>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .post(format!("{}{path}", sandbox.auth_http_url))
        .form(form);
    if let Some((id, secret)) = basic {
        request = request.basic_auth(id, Some(secret));
    }
    let response = request.send().await.expect("auth-service reachable");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Signs in through the pages (a failed attempt with canaries first) and
/// approves; returns the code and the verifier of a fresh PKCE pair.
async fn authorization_code(
    sandbox: &Sandbox,
    secrets: &mut Secrets,
    email: &str,
    password: &str,
) -> (String, String) {
    let verifier = format!(
        "{}{}",
        secrets.canary("code_verifier"),
        uuid::Uuid::new_v4().simple()
    );
    let challenge = URL_SAFE_NO_PAD.encode(digest(&SHA256, verifier.as_bytes()));
    let state = format!("st{}", uuid::Uuid::new_v4().simple());
    let mut browser = Browser::new(&sandbox.auth_http_url);
    let (status, _, page) = browser
        .get(&authorize_path(sandbox, &challenge, &state))
        .await;
    assert_eq!(status, 200, "{page}");
    // A failed sign-in: canary email, canary password; then the right email
    // with a canary password.
    let wrong_email = format!(
        "{}@example.com",
        secrets.canary("email of a failed sign-in")
    );
    let wrong_password = secrets.canary("password of a failed sign-in");
    let (status, _, _) = browser
        .post(
            "/authorize/login",
            &form_of(
                &page,
                &[("email", &wrong_email), ("password", &wrong_password)],
            ),
        )
        .await;
    assert_eq!(status, 401);
    let wrong_password = secrets.canary("wrong password of a real account");
    let (status, _, _) = browser
        .post(
            "/authorize/login",
            &form_of(&page, &[("email", email), ("password", &wrong_password)]),
        )
        .await;
    assert_eq!(status, 401);
    let (status, next, html) = browser
        .post(
            "/authorize/login",
            &form_of(&page, &[("email", email), ("password", password)]),
        )
        .await;
    assert_eq!(status, 303, "{html}");
    let (status, _, consent) = browser.get(&next.expect("redirect to consent")).await;
    assert_eq!(status, 200, "{consent}");
    let (status, _, back) = browser
        .post(
            "/authorize/consent",
            &form_of(&consent, &[("decision", "approve")]),
        )
        .await;
    assert_eq!(status, 200, "{back}");
    let href = field(&back.replace("href=", "name=\"href\" value="), "href");
    let code = url::Url::parse(&href)
        .expect("redirect URL")
        .query_pairs()
        .find(|(k, _)| k == "code")
        .map(|(_, v)| v.into_owned())
        .expect("a code");
    secrets.issued("authorization code", &code);
    for (name, value) in &browser.cookies {
        secrets.issued(&format!("cookie {name}"), value);
    }
    (code, verifier)
}

/// POSTs the demo client's authorization-code grant of `code` and
/// `verifier` to the token endpoint, naming `resource` if given.
async fn redeem_code(
    sandbox: &Sandbox,
    code: &str,
    verifier: &str,
    resource: Option<&str>,
) -> (u16, Value) {
    let mut form = vec![
        ("grant_type", "authorization_code"),
        ("code", code),
        ("redirect_uri", REDIRECT),
        ("code_verifier", verifier),
        ("client_id", demo::DEMO_CLIENT_ID),
    ];
    form.extend(resource.map(|resource| ("resource", resource)));
    post_form(sandbox, "/token", &form, None).await
}

/// POSTs the demo client's refresh grant of `token` to the token endpoint.
async fn redeem_refresh(sandbox: &Sandbox, token: &str) -> (u16, Value) {
    let form = [
        ("grant_type", "refresh_token"),
        ("refresh_token", token),
        ("client_id", demo::DEMO_CLIENT_ID),
    ];
    post_form(sandbox, "/token", &form, None).await
}

/// POSTs `token` to the revocation endpoint as the demo client; the status.
async fn revoke(sandbox: &Sandbox, token: &str) -> u16 {
    let form = [("token", token), ("client_id", demo::DEMO_CLIENT_ID)];
    post_form(sandbox, "/revoke", &form, None).await.0
}

/// Exchanges a code; returns (access token, refresh token).
async fn exchange(
    sandbox: &Sandbox,
    secrets: &mut Secrets,
    code: &str,
    verifier: &str,
) -> (String, String) {
    let (status, body) = redeem_code(sandbox, code, verifier, Some(&sandbox.mcp_url)).await;
    assert_eq!(status, 200, "{body}");
    let access = body["access_token"]
        .as_str()
        .expect("access token")
        .to_owned();
    let refresh = body["refresh_token"]
        .as_str()
        .expect("refresh token")
        .to_owned();
    secrets.issued("access token", &access);
    secrets.issued("refresh token", &refresh);
    (access, refresh)
}

/// Where `needle` occurs in `haystack`, with some context.
fn hits(haystack: &str, needle: &str) -> Vec<String> {
    haystack
        .match_indices(needle)
        .take(3)
        .map(|(at, _)| {
            let start = haystack.floor_char_boundary(at.saturating_sub(200));
            let end = haystack.ceil_char_boundary((at + needle.len() + 200).min(haystack.len()));
            haystack[start..end].to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_canary_reaches_logs_spans_or_metrics() {
    let capture = Capture::default();
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    let ours = Targets::new()
        .with_target("chataigne_gateway", Level::TRACE)
        .with_target("chataigne_common", Level::TRACE)
        .with_target("chataigne_tools", Level::TRACE)
        .with_target("chataigne_auth", Level::TRACE)
        .with_target("chataigne", Level::TRACE);
    let writer = capture.clone();
    tracing_subscriber::registry()
        .with(
            // The services' own JSON format (trace and span ids included).
            chataigne_common::telemetry::json_layer(move || writer.clone())
                .with_filter(LevelFilter::TRACE),
        )
        .with(
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("privacy"))
                .with_filter(ours),
        )
        .try_init()
        .expect("the only subscriber of this test process");

    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let mut secrets = Secrets::default();
    let client = Client {
        sandbox: &sandbox,
        http: reqwest::Client::new(),
    };
    let admin_scopes: Vec<&str> = chataigne_common::scopes::all().collect();
    let admin = sandbox.token_with(demo::USER_ADMIN, &admin_scopes).await;
    let manager = sandbox.token(demo::USER_MANAGER).await;
    secrets.issued("admin token", &admin);
    secrets.issued("manager token", &manager);

    // Every tool, realistic then hostile.
    let (status, listed) = client.list(&mut secrets, &admin, 1).await;
    assert_eq!(status, 200, "{listed}");
    let mut tools: Vec<Value> = listed["result"]["tools"].as_array().expect("tools").clone();
    assert!(tools.len() >= 20, "every tool is listed: {}", tools.len());
    // Lists first: they provide the identifiers the others need.
    tools.sort_by_key(|tool| !tool["name"].as_str().unwrap_or_default().ends_with("_list"));
    let mut known: Known = [
        ("location_id", demo::LOC_PARIS),
        ("organization_id", demo::ORG_BISTRO),
    ]
    .iter()
    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
    .collect();
    let mut succeeded = Vec::new();
    for tool in &tools {
        let name = tool["name"].as_str().expect("tool name").to_owned();
        let schema = tool["inputSchema"].clone();
        ROOT.with(|root| *root.borrow_mut() = schema.clone());
        let token = if name.contains("_create") {
            &admin
        } else {
            &manager
        };
        let realistic = arguments(&schema, Mode::Required, &known, &mut secrets, &name);
        let (status, body) = client
            .call(&mut secrets, token, &name, realistic.clone())
            .await;
        let data = &body["result"]["structuredContent"]["data"];
        if status == 200 && body["result"]["isError"] != true {
            succeeded.push(name.clone());
            harvest(&mut known, data);
        }
        if let Some(cursor) = body["result"]["structuredContent"]["meta"]["next_cursor"].as_str() {
            secrets.issued(&format!("{name} cursor"), cursor);
            let mut next = realistic.clone();
            next["cursor"] = json!(cursor);
            client.call(&mut secrets, token, &name, next).await;
        }
        // The same call again: an idempotent replay where there is a key.
        if realistic.get("idempotency_key").is_some() {
            client.call(&mut secrets, token, &name, realistic).await;
        }
        let full = arguments(&schema, Mode::Full, &known, &mut secrets, &name);
        client.call(&mut secrets, token, &name, full).await;
        let hostile = arguments(&schema, Mode::Hostile, &known, &mut secrets, &name);
        client.call(&mut secrets, token, &name, hostile).await;
    }
    for expected in [
        "chataigne_orders_list",
        "chataigne_conversation_message_send",
        "chataigne_conversation_instruction_send",
        "chataigne_conversation_get",
    ] {
        assert!(
            succeeded.iter().any(|name| name == expected),
            "{expected} ran for real; succeeded: {succeeded:?}"
        );
    }
    // A canary tool name, a canary list cursor, a canary request id.
    let tool_name = secrets.canary("tool name");
    client
        .mcp(
            &mut secrets,
            &manager,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": tool_name, "arguments": {}}}),
            None,
        )
        .await;
    let list_cursor = secrets.canary("tools/list cursor");
    let request_id = secrets.canary("client-supplied request id");
    client
        .mcp(
            &mut secrets,
            &manager,
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list",
                   "params": {"cursor": list_cursor}}),
            Some(("x-request-id", &request_id)),
        )
        .await;

    // Invalid bearer tokens.
    for shape in ["opaque", "jwt"] {
        let bad = secrets.canary("invalid bearer token");
        let bad = if shape == "jwt" {
            format!(
                "eyJhbGciOiJFUzI1NiJ9.{bad}.{}",
                secrets.canary("invalid signature")
            )
        } else {
            bad
        };
        let (status, _) = client.list(&mut secrets, &bad, 4).await;
        assert_eq!(status, 401);
    }

    // The authorization code flow, through the pages, with a canary password.
    let password = secrets.canary("password");
    sandbox
        .auth
        .set_user_password(demo::USER_STAFF, &password)
        .await
        .expect("password set");
    let staff_email = "louis.bernard@bistro.example";
    let (code, verifier) = authorization_code(&sandbox, &mut secrets, staff_email, &password).await;
    let (access, refresh) = exchange(&sandbox, &mut secrets, &code, &verifier).await;
    let (status, body) = client
        .call(
            &mut secrets,
            &access,
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "limit": 1}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // Code replay: refused, and the session it led to ends.
    let (status, _) = redeem_code(&sandbox, &code, &verifier, None).await;
    assert_eq!(status, 400);
    // A second grant: refresh, then reuse of the spent refresh token.
    let (code, verifier) = authorization_code(&sandbox, &mut secrets, staff_email, &password).await;
    let (_, refresh2) = exchange(&sandbox, &mut secrets, &code, &verifier).await;
    let (status, rotated) = redeem_refresh(&sandbox, &refresh2).await;
    assert_eq!(status, 200, "{rotated}");
    secrets.issued(
        "rotated access token",
        rotated["access_token"].as_str().expect("access"),
    );
    secrets.issued(
        "rotated refresh token",
        rotated["refresh_token"].as_str().expect("refresh"),
    );
    let (status, reused) = redeem_refresh(&sandbox, &refresh2).await;
    assert_eq!(
        (status, reused["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let (status, _) = client
        .call(
            &mut secrets,
            rotated["access_token"].as_str().expect("access"),
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS}),
        )
        .await;
    assert_eq!(status, 401, "reuse revoked the family");
    // Revocation of the first grant's refresh token, and of a canary.
    assert_eq!(revoke(&sandbox, &refresh).await, 200);
    let revoked_canary = secrets.canary("revoked unknown token");
    assert_eq!(revoke(&sandbox, &revoked_canary).await, 200);
    // Unknown codes and refresh tokens.
    let bad_code = secrets.canary("unknown code");
    let bad_verifier = format!(
        "{}{}",
        secrets.canary("verifier of an unknown code"),
        "x".repeat(10)
    );
    let (status, _) = redeem_code(&sandbox, &bad_code, &bad_verifier, None).await;
    assert_eq!(status, 400);
    let bad_refresh = secrets.canary("unknown refresh token");
    let (status, _) = redeem_refresh(&sandbox, &bad_refresh).await;
    assert_eq!(status, 400);

    // Client credentials: a real secret, and a canary secret.
    let (client_id, secret) = sandbox
        .service_account(
            "privacy-reporting",
            "orders.read location.read",
            demo::ORG_BISTRO,
            "analyst",
        )
        .await;
    secrets.issued("service secret", &secret);
    let service_token = sandbox.client_credentials_token(&client_id, &secret).await;
    secrets.issued("service token", &service_token);
    let wrong_secret = secrets.canary("wrong client secret");
    let (status, _) = post_form(
        &sandbox,
        "/token",
        &[("grant_type", "client_credentials")],
        Some((&client_id, &wrong_secret)),
    )
    .await;
    assert_eq!(status, 401);
    let form_secret = secrets.canary("client secret in the form");
    let (status, _) = post_form(
        &sandbox,
        "/token",
        &[
            ("grant_type", "client_credentials"),
            ("client_id", &client_id),
            ("client_secret", &form_secret),
        ],
        None,
    )
    .await;
    assert_eq!(status, 401);
    // The typed API with the service token (a canary cursor) and with a canary credential.
    let mut typed = RestaurantClient::connect(sandbox.tools_grpc_url.clone())
        .await
        .expect("tool-service reachable");
    for (credential, cursor) in [
        (service_token.clone(), String::new()),
        (service_token.clone(), secrets.canary("typed API cursor")),
        (secrets.canary("typed API credential"), String::new()),
    ] {
        let mut request = tonic::Request::new(ListOrdersRequest {
            location_id: demo::LOC_LYON.to_owned(),
            page: Some(Page { limit: 2, cursor }),
            ..ListOrdersRequest::default()
        });
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {credential}").parse().expect("ascii"),
        );
        let _ = typed.list_orders(request).await;
    }

    // Metrics pages, before the services stop.
    let mut metrics = String::new();
    for url in [
        format!("{}/metrics", sandbox.gateway_internal_url),
        sandbox.auth_metrics_url.clone(),
        sandbox.tools_metrics_url.clone(),
    ] {
        let response = reqwest::get(&url).await.expect("metrics reachable");
        assert_eq!(response.status(), 200, "{url}");
        let page = response.text().await.expect("metrics text");
        assert!(!page.trim().is_empty(), "{url} is empty");
        metrics.push_str(&page);
    }
    assert!(
        metrics.contains("chataigne_orders_list"),
        "the gateway's metrics name the tools"
    );

    sandbox.shutdown().await;
    provider.force_flush().expect("flush");
    let logs = capture.text();
    let spans = exporter.get_finished_spans().expect("finished spans");
    let mut traced = String::new();
    for span in &spans {
        traced.push_str(&format!("span {} {:?}\n", span.name, span.status));
        for kv in &span.attributes {
            traced.push_str(&format!("  {}={}\n", kv.key, kv.value));
        }
        for event in span.events.iter() {
            traced.push_str(&format!("  event {}\n", event.name));
            for kv in &event.attributes {
                traced.push_str(&format!("    {}={}\n", kv.key, kv.value));
            }
        }
    }

    // The capture is real: not empty, and it holds every request id.
    assert!(logs.lines().count() > 100, "logs captured: {}", logs.len());
    assert!(spans.len() > 20, "spans captured: {}", spans.len());
    assert!(!secrets.request_ids.is_empty());
    for request_id in &secrets.request_ids {
        assert!(
            logs.contains(request_id.as_str()),
            "request id {request_id} is in the logs"
        );
    }
    assert!(traced.contains("request_id="), "spans carry request ids");

    let mut leaks = Vec::new();
    for (what, value) in &secrets.values {
        for (place, text) in [("logs", &logs), ("spans", &traced), ("metrics", &metrics)] {
            for context in hits(text, value) {
                leaks.push(format!("{what} in {place}: …{context}…"));
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "{} leak(s) of {} secret values:\n{}",
        leaks.len(),
        secrets.values.len(),
        leaks.join("\n\n")
    );
}
