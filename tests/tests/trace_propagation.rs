//! W3C trace context across the services: one `tools/call` through the
//! sandbox (three services in this process) yields spans in the gateway, the
//! tool-service and the auth-service that share one trace id, captured with an
//! in-memory span exporter installed for this test process. The spans follow
//! the OpenTelemetry semantic conventions (HTTP server span `POST /mcp/v1`,
//! MCP span `tools/call <tool>`, RPC server spans `<service>/<method>`), and
//! every JSON log line written while serving the call carries the trace and
//! span ids of the span it was written in. A caller's trace context is
//! continued across the services: in `_meta` on `/mcp/v2`, in the HTTP
//! `traceparent` header on either endpoint.

use std::io::Write;
use std::sync::{Arc, Mutex};

use chataigne_tests::{Backend, Sandbox, demo};
use opentelemetry::trace::{SpanId, SpanKind, TraceId, TracerProvider as _};
use opentelemetry::{Key, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

/// Everything the JSON log layer writes.
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
    fn lines(&self) -> Vec<serde_json::Value> {
        String::from_utf8_lossy(&self.0.lock().unwrap_or_else(|e| e.into_inner()))
            .lines()
            .map(|line| serde_json::from_str(line).expect("one JSON object per line"))
            .collect()
    }
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key == Key::from(key.to_owned()))
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> Option<String> {
    attribute(span, key).map(|value| value.as_str().into_owned())
}

fn int(span: &SpanData, key: &str) -> Option<i64> {
    match attribute(span, key) {
        Some(Value::I64(value)) => Some(*value),
        _ => None,
    }
}

/// `gateway` for the gateway's HTTP and MCP spans, the `service` attribute
/// of the backends' RPC spans.
fn service_of(span: &SpanData) -> Option<String> {
    if attribute(span, "http.request.method").is_some() || span.name.starts_with("tools/call ") {
        return Some("gateway".to_owned());
    }
    attribute(span, "rpc.system").and_then(|_| text(span, "service"))
}

/// `<rpc.service>/<rpc.method>` of an RPC span.
fn rpc_of(span: &SpanData) -> String {
    match (text(span, "rpc.service"), text(span, "rpc.method")) {
        (Some(service), Some(method)) => format!("{service}/{method}"),
        _ => String::new(),
    }
}

#[tokio::test]
async fn one_tool_call_is_one_trace_across_the_three_services() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    let ours = Targets::new()
        .with_target("chataigne_gateway", Level::INFO)
        .with_target("chataigne_common", Level::INFO)
        .with_target("chataigne_tools", Level::INFO)
        .with_target("chataigne_auth", Level::INFO);
    let logs = Capture::default();
    let writer = logs.clone();
    tracing_subscriber::registry()
        .with(
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("tests"))
                .with_filter(ours.clone()),
        )
        .with(chataigne_common::telemetry::json_layer(move || writer.clone()).with_filter(ours))
        .try_init()
        .expect("the only subscriber of this test process");

    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let token = sandbox.token(demo::USER_MANAGER).await;
    exporter.reset();
    logs.0.lock().unwrap_or_else(|e| e.into_inner()).clear();
    sandbox
        .call_tool(
            &token,
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "limit": 1}),
        )
        .await;
    // The same call on `/mcp/v2`, carrying the caller's W3C trace context in
    // `_meta` (MCP 2026-07-28): the call continues the caller's trace.
    let (modern_url, modern_token) = sandbox.modern_endpoint(demo::USER_MANAGER).await;
    let caller_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let caller_span = "00f067aa0ba902b7";
    let modern = reqwest::Client::new()
        .post(&modern_url)
        .bearer_auth(&modern_token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/call")
        .header("mcp-name", "chataigne_orders_list")
        .header("mcp-param-locationid", demo::LOC_PARIS)
        .json(
            &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "chataigne_orders_list",
            "arguments": {"location_id": demo::LOC_PARIS, "limit": 1},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "traceparent": format!("00-{caller_trace}-{caller_span}-01"),
            }}}),
        )
        .send()
        .await
        .expect("gateway reachable");
    assert_eq!(
        modern.status(),
        200,
        "{}",
        modern.text().await.unwrap_or_default()
    );
    // On `/mcp/v1`, the caller's W3C trace context in the HTTP headers: the
    // request, and the call behind it, continue that trace.
    let header_trace = "0af7651916cd43dd8448eb211c80319c";
    let header_span = "b7ad6b7169203331";
    let answered = reqwest::Client::new()
        .post(&sandbox.mcp_url)
        .bearer_auth(&token)
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header("traceparent", format!("00-{header_trace}-{header_span}-01"))
        .json(
            &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "chataigne_orders_list",
            "arguments": {"location_id": demo::LOC_PARIS, "limit": 1}}}),
        )
        .send()
        .await
        .expect("gateway reachable");
    assert_eq!(answered.status(), 200);
    sandbox.shutdown().await;
    provider.force_flush().expect("flush");
    let spans = exporter.get_finished_spans().expect("finished spans");
    let described: Vec<String> = spans
        .iter()
        .map(|span| {
            format!(
                "{} {:?} {} trace={} id={} parent={}",
                span.name,
                service_of(span),
                rpc_of(span),
                span.span_context.trace_id(),
                span.span_context.span_id(),
                span.parent_span_id
            )
        })
        .collect();

    let caller: TraceId = TraceId::from_hex(caller_trace).expect("trace id");
    let modern_call = spans
        .iter()
        .find(|span| {
            span.name == "tools/call chataigne_orders_list"
                && span.span_context.trace_id() == caller
        })
        .unwrap_or_else(|| panic!("the v2 call continues the caller's trace: {described:#?}"));
    assert_eq!(
        modern_call.parent_span_id,
        SpanId::from_hex(caller_span).expect("span id"),
        "a child of the caller's span"
    );
    assert!(
        spans
            .iter()
            .any(|span| span.span_context.trace_id() == caller
                && service_of(span).as_deref() == Some("tool-service")
                && rpc_of(span).ends_with("/CallTool")),
        "the tool-service's CallTool span is in the caller's trace: {described:#?}"
    );
    let headed: TraceId = TraceId::from_hex(header_trace).expect("trace id");
    let headed_request = spans
        .iter()
        .find(|span| span.name == "POST /mcp/v1" && span.span_context.trace_id() == headed)
        .unwrap_or_else(|| panic!("the v1 request continues its header's trace: {described:#?}"));
    assert_eq!(
        headed_request.parent_span_id,
        SpanId::from_hex(header_span).expect("span id"),
        "a child of the caller's span"
    );
    assert!(
        spans
            .iter()
            .any(|span| span.span_context.trace_id() == headed
                && service_of(span).as_deref() == Some("tool-service")
                && rpc_of(span).ends_with("/CallTool")),
        "the tool-service's CallTool span is in the header's trace: {described:#?}"
    );
    let call = spans
        .iter()
        .find(|span| {
            service_of(span).as_deref() == Some("tool-service")
                && rpc_of(span).ends_with("/CallTool")
                && span.span_context.trace_id() != caller
                && span.span_context.trace_id() != headed
        })
        .unwrap_or_else(|| panic!("no tool-service CallTool span: {described:#?}"));
    let trace: TraceId = call.span_context.trace_id();
    let in_trace: Vec<&SpanData> = spans
        .iter()
        .filter(|span| span.span_context.trace_id() == trace)
        .collect();
    let gateway = in_trace
        .iter()
        .find(|span| span.name == "POST /mcp/v1")
        .unwrap_or_else(|| panic!("no gateway HTTP server span in the trace: {described:#?}"));
    let tool_call = in_trace
        .iter()
        .find(|span| span.name == "tools/call chataigne_orders_list")
        .unwrap_or_else(|| panic!("no gateway MCP tools/call span in the trace: {described:#?}"));
    assert_eq!(tool_call.parent_span_id, gateway.span_context.span_id());
    assert_eq!(
        call.parent_span_id,
        tool_call.span_context.span_id(),
        "the CallTool span is a child of the gateway's tools/call span: {described:#?}"
    );

    // HTTP semantic conventions, and the MCP ones on the request span.
    assert_eq!(gateway.span_kind, SpanKind::Server);
    assert_eq!(
        gateway.parent_span_id,
        SpanId::INVALID,
        "the root of the trace"
    );
    for (key, value) in [
        ("http.request.method", "POST"),
        ("http.route", "/mcp/v1"),
        ("url.path", "/mcp/v1"),
        ("url.scheme", "http"),
        ("mcp.method.name", "tools/call"),
        ("mcp.protocol.version", "2025-11-25"),
        ("gen_ai.tool.name", "chataigne_orders_list"),
        ("gen_ai.operation.name", "execute_tool"),
    ] {
        assert_eq!(
            text(gateway, key).as_deref(),
            Some(value),
            "{key}: {gateway:#?}"
        );
    }
    assert_eq!(int(gateway, "http.response.status_code"), Some(200));
    assert!(attribute(gateway, "error.type").is_none(), "{gateway:#?}");
    let request_id = text(gateway, "request_id").expect("the request id");
    assert!(request_id.starts_with("req_"), "{request_id}");
    // The MCP span of the call.
    assert_eq!(tool_call.span_kind, SpanKind::Server);
    for (key, value) in [
        ("mcp.method.name", "tools/call"),
        ("gen_ai.tool.name", "chataigne_orders_list"),
        ("gen_ai.operation.name", "execute_tool"),
        ("request_id", request_id.as_str()),
    ] {
        assert_eq!(
            text(tool_call, key).as_deref(),
            Some(value),
            "{key}: {tool_call:#?}"
        );
    }
    assert!(attribute(tool_call, "error.type").is_none());
    // RPC semantic conventions on the backend's server span.
    assert_eq!(call.span_kind, SpanKind::Server);
    assert_eq!(call.name, "chataigne.tools.v1.ToolCatalog/CallTool");
    assert_eq!(text(call, "rpc.system").as_deref(), Some("grpc"));
    assert_eq!(
        text(call, "rpc.service").as_deref(),
        Some("chataigne.tools.v1.ToolCatalog")
    );
    assert_eq!(text(call, "rpc.method").as_deref(), Some("CallTool"));
    assert_eq!(int(call, "rpc.grpc.status_code"), Some(0), "{call:#?}");
    let auth: Vec<&&SpanData> = in_trace
        .iter()
        .filter(|span| service_of(span).as_deref() == Some("auth-service"))
        .collect();
    let authenticate = auth
        .iter()
        .find(|span| {
            rpc_of(span).ends_with("/Authenticate")
                && span.parent_span_id == gateway.span_context.span_id()
        })
        .unwrap_or_else(|| {
            panic!("the gateway's Authenticate call is in the trace: {described:#?}")
        });
    assert_eq!(
        authenticate.name,
        "chataigne.auth.v1.AuthService/Authenticate"
    );
    assert_eq!(int(authenticate, "rpc.grpc.status_code"), Some(0));
    let tool_spans: Vec<SpanId> = in_trace
        .iter()
        .filter(|span| service_of(span).as_deref() == Some("tool-service"))
        .map(|span| span.span_context.span_id())
        .collect();
    let from_tools: Vec<String> = auth
        .iter()
        .filter(|span| tool_spans.contains(&span.parent_span_id))
        .map(|span| rpc_of(span))
        .collect();
    // The assertion carries the grants read by Authenticate: the tool-service
    // decides locally, and its only call to the auth-service is the first
    // fetch of the keys that verify assertions.
    assert!(
        from_tools.iter().any(|rpc| rpc.ends_with("/AssertionKeys")),
        "the tool-service's key fetch is in the trace: {described:#?}"
    );
    assert!(
        !from_tools
            .iter()
            .any(|rpc| rpc.ends_with("/Authorize") || rpc.ends_with("/ResolveAccess")),
        "no Authorize / ResolveAccess hop for a user's call: {described:#?}"
    );

    // Every JSON line written inside a span carries that span's ids; the
    // three services' lines about this call share its trace id.
    let lines = logs.lines();
    let span_ids: Vec<String> = in_trace
        .iter()
        .map(|span| span.span_context.span_id().to_string())
        .collect();
    let mut seen = Vec::new();
    for line in &lines {
        if line["spans"].as_array().is_none_or(Vec::is_empty) {
            continue;
        }
        let trace_id = line["trace_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no trace_id: {line}"));
        let span_id = line["span_id"]
            .as_str()
            .unwrap_or_else(|| panic!("no span_id: {line}"));
        if trace_id == trace.to_string() {
            assert!(
                span_ids.iter().any(|id| id == span_id),
                "a span of the trace: {line}"
            );
            seen.push(line["message"].as_str().unwrap_or_default().to_owned());
        }
    }
    for message in ["mcp request", "tool call", "auth rpc"] {
        assert!(
            seen.iter().any(|seen| seen == message),
            "the {message:?} line is in the trace: {seen:?}"
        );
    }
    let request_line = lines
        .iter()
        .find(|line| line["message"] == "mcp request" && line["request_id"] == request_id.as_str())
        .expect("the gateway's request line");
    assert_eq!(
        request_line["span_id"],
        gateway.span_context.span_id().to_string()
    );
}
