//! W3C trace context across the services: one `tools/call` through the
//! sandbox (three services in this process) yields spans in the gateway, the
//! tool-service and the auth-service that share one trace id, captured with an
//! in-memory span exporter installed for this test process.

use chataigne_tests::{Backend, Sandbox, demo};
use opentelemetry::trace::{SpanId, TraceId, TracerProvider as _};
use opentelemetry::{Key, Value};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::json;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key == Key::from(key.to_owned()))
        .map(|kv| &kv.value)
}

/// `gateway` for the gateway's request and tool-call spans, the `service`
/// attribute of the backends' RPC spans.
fn service_of(span: &SpanData) -> Option<String> {
    match span.name.as_ref() {
        "http" | "tool_call" => Some("gateway".to_owned()),
        "grpc" => attribute(span, "service").map(|value| value.as_str().into_owned()),
        _ => None,
    }
}

fn rpc_of(span: &SpanData) -> String {
    attribute(span, "rpc").map_or_else(String::new, |value| value.as_str().into_owned())
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
    tracing_subscriber::registry()
        .with(
            tracing_opentelemetry::layer()
                .with_tracer(provider.tracer("tests"))
                .with_filter(ours),
        )
        .try_init()
        .expect("the only subscriber of this test process");

    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let token = sandbox.token(demo::USER_MANAGER).await;
    exporter.reset();
    sandbox
        .call_tool(
            &token,
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "limit": 1}),
        )
        .await;
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

    let call = spans
        .iter()
        .find(|span| {
            service_of(span).as_deref() == Some("tool-service")
                && rpc_of(span).ends_with("/CallTool")
        })
        .unwrap_or_else(|| panic!("no tool-service CallTool span: {described:#?}"));
    let trace: TraceId = call.span_context.trace_id();
    let in_trace: Vec<&SpanData> = spans
        .iter()
        .filter(|span| span.span_context.trace_id() == trace)
        .collect();
    let gateway = in_trace
        .iter()
        .find(|span| span.name == "http")
        .unwrap_or_else(|| panic!("no gateway request span in the trace: {described:#?}"));
    let tool_call = in_trace
        .iter()
        .find(|span| span.name == "tool_call")
        .unwrap_or_else(|| panic!("no gateway tool_call span in the trace: {described:#?}"));
    assert_eq!(tool_call.parent_span_id, gateway.span_context.span_id());
    assert_eq!(
        call.parent_span_id,
        tool_call.span_context.span_id(),
        "the CallTool span is a child of the gateway's tool_call span: {described:#?}"
    );
    assert_eq!(
        attribute(tool_call, "outcome").map(|value| value.as_str().into_owned()),
        Some("ok".to_owned())
    );
    assert_eq!(
        attribute(tool_call, "tool").map(|value| value.as_str().into_owned()),
        Some("chataigne_orders_list".to_owned())
    );
    assert!(attribute(tool_call, "request_id").is_some());
    let auth: Vec<&&SpanData> = in_trace
        .iter()
        .filter(|span| service_of(span).as_deref() == Some("auth-service"))
        .collect();
    assert!(
        auth.iter()
            .any(|span| rpc_of(span).ends_with("/Authenticate")
                && span.parent_span_id == gateway.span_context.span_id()),
        "the gateway's Authenticate call is in the trace: {described:#?}"
    );
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
}
