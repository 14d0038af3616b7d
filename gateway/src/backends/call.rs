//! One tool call over gRPC: the principal assertion and request id as
//! metadata, the deadline of the tool's class, and every failure (backend
//! status, expired deadline, unreadable output) decoded into a shared code.

use std::time::Duration;
use tokio::time::Instant;

use chataigne_common::ErrorCode;
use chataigne_common::balance::Balanced;
use chataigne_common::codes::{DecodedStatus, decode_status_with};
use chataigne_proto::tools::v1::CallToolRequest;
use chataigne_proto::tools::v1::tool_catalog_client::ToolCatalogClient;
use tonic::metadata::MetadataValue;
use tracing::Instrument;

use crate::access::auth::Principal;
use crate::backends::catalog::{DeadlineClass, Snapshot, Tool};
use crate::config::Deadlines;
use crate::wire::envelope::Success;

/// A failure the gateway itself detects, with the code's safe message.
pub fn gateway_failure(code: ErrorCode) -> DecodedStatus {
    DecodedStatus::of(code)
}

/// The deadline of `class`.
pub fn deadline(deadlines: &Deadlines, class: DeadlineClass) -> Duration {
    Duration::from_millis(match class {
        DeadlineClass::Read => deadlines.read_ms,
        DeadlineClass::Analytics => deadlines.analytics_ms,
        DeadlineClass::Write => deadlines.write_ms,
    })
}

/// The code of an expired deadline: a write may have taken effect.
fn timeout_code(tool: &Tool) -> ErrorCode {
    if tool.write {
        ErrorCode::OutcomeUnknown
    } else {
        ErrorCode::ToolTimeout
    }
}

/// The failure of an expired deadline, naming the next call: the same tool
/// again for a read; for a write, the read tool the catalogue gives for its
/// state, before the write is tried again.
fn timeout_failure(tool: &Tool) -> DecodedStatus {
    let code = timeout_code(tool);
    let message = match (code, tool.state_read_tool.as_deref()) {
        (ErrorCode::OutcomeUnknown, Some(read)) => format!(
            "The change did not finish in time and may have taken effect. Read the current \
             state with {read} before calling {} again.",
            tool.name
        ),
        (ErrorCode::OutcomeUnknown, None) => format!(
            "The change did not finish in time and may have taken effect. Read the current \
             state before calling {} again.",
            tool.name
        ),
        _ => format!(
            "The read did not finish in time. Call {} again, or narrow it (a shorter period, \
             narrower filters, a smaller limit).",
            tool.name
        ),
    };
    DecodedStatus {
        message,
        ..gateway_failure(code)
    }
}

/// What a tool call needs besides the tool itself.
pub struct CallInput<'a> {
    pub principal: &'a Principal,
    /// The arguments object, serialized.
    pub arguments_json: String,
    pub locale: String,
    pub request_id: &'a str,
    pub deadline: Duration,
    /// The catalogue the tool was found in: its domain error codes are
    /// answered by name.
    pub catalogue: &'a Snapshot,
    /// The caller's trace context, when its revision carries one: the
    /// call's span continues that trace.
    pub trace_parent: Option<crate::ops::http_telemetry::TraceParent>,
}

/// Calls `tool` on the tool-service, in one span per tool call carrying the
/// tool name, the request id and the failure code (never the arguments).
pub async fn call(
    client: &ToolCatalogClient<Balanced>,
    tool: &Tool,
    input: CallInput<'_>,
) -> Result<Success, DecodedStatus> {
    // The MCP server span of the call (semantic conventions: named
    // `tools/call {tool}`, `error.type` and an error status on failure).
    let span = tracing::info_span!(
        "tools/call",
        otel.name = %format!("tools/call {}", tool.name),
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        mcp.method.name = "tools/call",
        gen_ai.operation.name = "execute_tool",
        gen_ai.tool.name = %tool.name,
        request_id = %input.request_id,
        error.type = tracing::field::Empty,
    );
    if let Some(parent) = &input.trace_parent {
        chataigne_common::trace_context::continue_trace(
            &span,
            &parent.traceparent,
            parent.tracestate.as_deref(),
        );
    }
    let result = exchange(client, tool, input).instrument(span.clone()).await;
    if let Err(failure) = &result {
        span.record("error.type", failure.code.as_str());
        span.record("otel.status_code", "error");
    }
    result
}

async fn exchange(
    client: &ToolCatalogClient<Balanced>,
    tool: &Tool,
    input: CallInput<'_>,
) -> Result<Success, DecodedStatus> {
    let mut request = tonic::Request::new(CallToolRequest {
        name: tool.name.clone(),
        arguments_json: input.arguments_json,
        request_id: input.request_id.to_owned(),
        locale: input.locale,
    });
    let authorization = MetadataValue::try_from(format!("Bearer {}", input.principal.assertion))
        .map_err(|_| gateway_failure(ErrorCode::InternalError))?;
    let request_id = MetadataValue::try_from(input.request_id)
        .map_err(|_| gateway_failure(ErrorCode::InternalError))?;
    request
        .metadata_mut()
        .insert("authorization", authorization);
    request.metadata_mut().insert("x-request-id", request_id);
    request.set_timeout(input.deadline);
    chataigne_common::trace_context::inject(request.metadata_mut());

    let started = Instant::now();
    let mut client = client.clone();
    let response = match tokio::time::timeout(input.deadline, client.call_tool(request)).await {
        Err(_elapsed) => return Err(timeout_failure(tool)),
        Ok(Ok(response)) => response.into_inner(),
        Ok(Err(status)) => {
            // The channel reports its own expiry of `grpc-timeout` as CANCELLED.
            let expired = status.code() == tonic::Code::DeadlineExceeded
                || (status.code() == tonic::Code::Cancelled && started.elapsed() >= input.deadline);
            let catalogue = input.catalogue;
            let mut decoded = decode_status_with(&status, |reason| catalogue.error_code(reason));
            if (expired || decoded.code == ErrorCode::ToolTimeout)
                && decoded.code != timeout_code(tool)
            {
                decoded = timeout_failure(tool);
            }
            return Err(decoded);
        }
    };
    let data = serde_json::value::RawValue::from_string(response.data_json).map_err(|_| {
        tracing::error!(tool = %tool.name, "tool-service returned data that is not JSON");
        gateway_failure(ErrorCode::InternalError)
    })?;
    Ok(Success {
        data,
        text: response.text,
        next_cursor: response.next_cursor,
        truncated: response.truncated,
        replayed: response.replayed,
    })
}
