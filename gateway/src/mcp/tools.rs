//! `tools/list` (the cached catalogue filtered by the principal's scopes and
//! the two write switches) and `tools/call` (parameter checks, visibility,
//! the deploy-time write switch, then the rate limits and backend call, then
//! its envelope, written into the response in one pass).
//!
//! Writes run only when both switches allow them: the gateway's static
//! `writes_enabled` (a deploy-time edge override, refused here without
//! reaching the backend) and the tool-service's run-time operator flag, which
//! the tool-service reads live on every write and refuses with
//! `MCP_WRITES_DISABLED`; `tools/list` hides write tools when either is off,
//! the run-time one as of the cached catalogue (its TTL applies).

use std::time::Duration;

use chataigne_common::ErrorCode;
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::access::auth::Principal;
use crate::backends::call::{self, CallInput, gateway_failure};
use crate::backends::catalog::{Snapshot, Tool};
use crate::error::GatewayError;
use crate::mcp::context::Context;
use crate::mcp::guard;
use crate::mcp::params::{CallToolParams, Field};
use crate::mcp::protocol::{self, Caching, Protocol};
use crate::ops::counters::Dependency;
use crate::wire::envelope::{self, Reply};
use crate::wire::jsonrpc::{self, Id};

/// Whether `principal` may see `tool` at all (hidden tools are unknown tools).
fn visible(tool: &Tool, principal: &Principal) -> bool {
    principal.has_scope(&tool.required_scope)
}

#[derive(Serialize)]
struct ListResult<'a> {
    tools: Vec<&'a RawValue>,
}

/// The catalogue snapshot a listing or a read is served from; when none was
/// ever fetched, the method's failure (a dependency error in the client's
/// profile).
pub(crate) async fn catalogue(
    ctx: &mut Context<'_>,
    id: &Id,
) -> Result<std::sync::Arc<Snapshot>, GatewayError> {
    match ctx.state.catalog.snapshot().await {
        Ok(snapshot) => Ok(snapshot),
        Err(status) => {
            let failure = chataigne_common::codes::decode_status(&status);
            ctx.state.metrics.dependency_error(Dependency::ToolService);
            tracing::warn!(code = failure.code.as_str(), "tool catalogue unavailable");
            ctx.log.outcome = failure.code.as_str();
            let error =
                envelope::method_failure(ctx.endpoint.profile, &ctx.log.request_id, &failure);
            Err(GatewayError::ToolFatal(id.clone(), error))
        }
    }
}

/// The tools of `snapshot` the caller sees listed: those its scopes grant,
/// writes only while both write switches allow them.
pub(crate) fn listed<'s>(ctx: &Context<'_>, snapshot: &'s Snapshot) -> Vec<&'s Tool> {
    let writes_enabled = ctx.state.config.writes_enabled && snapshot.writes_enabled();
    snapshot
        .tools()
        .filter(|tool| visible(tool, ctx.principal))
        .filter(|tool| writes_enabled || !tool.write)
        .collect()
}

/// How long a listing stays fresh: it depends on the caller's scopes and is
/// as fresh as the catalogue snapshot it comes from.
pub(crate) fn listing_ttl(ctx: &Context<'_>) -> Duration {
    Duration::from_secs(ctx.state.config.tool_catalog_ttl_secs)
}

/// `tools/list`. A `cursor` is accepted and ignored: the list is never paginated.
/// `revision` is the endpoint's.
pub async fn list(
    mut ctx: Context<'_>,
    id: &Id,
    revision: &dyn Protocol,
) -> Result<Vec<u8>, GatewayError> {
    let snapshot = catalogue(&mut ctx, id).await?;
    let annotated = revision.lists_header_annotations();
    let tools = listed(&ctx, &snapshot)
        .into_iter()
        .map(|tool| tool.listing(ctx.endpoint.profile, annotated))
        .collect();
    Ok(protocol::success(
        revision,
        id,
        &ListResult { tools },
        Caching::Private(listing_ttl(&ctx)),
    ))
}

/// The locale of `_meta.user_locale`: a BCP 47 string, or the Connected Apps
/// object `{language_code, region_code}`.
fn locale(meta: Option<&Map<String, Value>>) -> String {
    let Some(locale) = meta.and_then(|meta| meta.get("user_locale")) else {
        return String::new();
    };
    match locale {
        Value::String(tag) => tag.clone(),
        Value::Object(parts) => {
            let part = |key: &str| parts.get(key).and_then(Value::as_str).unwrap_or_default();
            match (part("language_code"), part("region_code")) {
                ("", _) => String::new(),
                (language, "") => language.to_owned(),
                (language, region) => format!("{language}-{region}"),
            }
        }
        _ => String::new(),
    }
}

fn unknown_tool(id: &Id, name: &str) -> GatewayError {
    let shown: String = name.chars().take(128).collect();
    GatewayError::InvalidParams(id.clone(), format!("Unknown tool: {shown}"))
}

/// The response body of a tool result; a fatal failure as its error.
fn reply(revision: &dyn Protocol, reply: Reply<'_>, id: &Id) -> Result<Vec<u8>, GatewayError> {
    match reply {
        Reply::Result(result) => Ok(protocol::success(revision, id, &result, Caching::None)),
        Reply::Error(error) => Err(GatewayError::ToolFatal(id.clone(), error)),
    }
}

/// `tools/call`; `revision` is the endpoint's.
pub async fn call(
    ctx: Context<'_>,
    id: &Id,
    params: CallToolParams,
    revision: &dyn Protocol,
) -> Result<Vec<u8>, GatewayError> {
    let Field::Valid(name) = &params.name else {
        return Err(GatewayError::InvalidParams(
            id.clone(),
            "params.name must be a string".to_owned(),
        ));
    };
    let arguments_json = match &params.arguments {
        Field::Absent => "{}".to_owned(),
        Field::Valid(arguments) => serde_json::to_string(arguments).unwrap_or_default(),
        Field::Invalid => {
            return Err(GatewayError::InvalidParams(
                id.clone(),
                "params.arguments must be an object".to_owned(),
            ));
        }
    };
    let profile = ctx.endpoint.profile;
    let request_id = ctx.log.request_id.clone();
    let snapshot = match ctx.state.catalog.snapshot().await {
        Ok(snapshot) => snapshot,
        Err(status) => {
            let failure = chataigne_common::codes::decode_status(&status);
            ctx.state.metrics.dependency_error(Dependency::ToolService);
            ctx.log.outcome = failure.code.as_str();
            return reply(
                revision,
                envelope::failure(profile, &request_id, &failure),
                id,
            );
        }
    };
    let tool = match snapshot.get(name) {
        Some(tool) if visible(tool, ctx.principal) => tool,
        _ => return Err(unknown_tool(id, name)),
    };
    ctx.log.tool = Some(tool.name.clone());
    revision.check_tool_headers(id, ctx.headers, tool, params.arguments.as_valid())?;
    if tool.write && !ctx.state.config.writes_enabled {
        let failure = gateway_failure(ErrorCode::WritesDisabled);
        ctx.log.outcome = failure.code.as_str();
        return reply(
            revision,
            envelope::failure(profile, &request_id, &failure),
            id,
        );
    }
    let meta = params.meta.as_valid();
    let input = CallInput {
        principal: ctx.principal,
        arguments_json,
        locale: locale(meta),
        request_id: &request_id,
        deadline: call::deadline(&ctx.state.config.deadlines, tool.deadline),
        catalogue: &snapshot,
        trace_parent: revision.trace_parent(meta),
    };
    // The call's own failure is its answer; any other error refuses the request.
    let outcome = match guard::call(ctx.state, ctx.principal, ctx.address, tool, input).await {
        Ok(success) => Ok(success),
        Err(GatewayError::Tool(failure)) => Err(failure),
        Err(refusal) => return Err(refusal),
    };
    let shaped = match &outcome {
        Ok(success) => envelope::success(profile, &request_id, success),
        Err(failure) if failure.code == ErrorCode::ScopeRequired => {
            return Err(step_up(&ctx, revision, id, &request_id, failure));
        }
        Err(failure) => {
            ctx.log.outcome = failure.code.as_str();
            envelope::failure(profile, &request_id, failure)
        }
    };
    reply(revision, shaped, id)
}

/// A scope missing inside a tool (per-section checks, scope checks in the
/// tool): HTTP 403 with the step-up challenge, carrying the
/// `MCP_SCOPE_REQUIRED` reply of the client's profile as body.
fn step_up(
    ctx: &Context<'_>,
    revision: &dyn Protocol,
    id: &Id,
    request_id: &str,
    failure: &chataigne_common::codes::DecodedStatus,
) -> GatewayError {
    let required = failure
        .detail(chataigne_common::status_details::DetailKey::Scope)
        .unwrap_or_default();
    let body = match envelope::failure(ctx.endpoint.profile, request_id, failure) {
        Reply::Result(result) => protocol::success(revision, id, &result, Caching::None),
        Reply::Error(error) => jsonrpc::error(Some(id), &error),
    };
    GatewayError::InsufficientScope {
        body,
        challenge: crate::error::insufficient_scope_challenge(
            &ctx.endpoint.metadata_url,
            &ctx.principal.scopes,
            required,
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(value: Value) -> Option<Map<String, Value>> {
        let parsed = CallToolParams::take(&Id::Number(1.into()), Some(value)).unwrap();
        parsed.meta.valid()
    }

    #[test]
    fn locale_comes_from_a_string_or_the_platform_object() {
        assert_eq!(
            locale(params(json!({"_meta": {"user_locale": "fr-FR"}})).as_ref()),
            "fr-FR"
        );
        assert_eq!(
            locale(
                params(
                    json!({"_meta": {"user_locale": {"language_code": "en", "region_code": "US"}}})
                )
                .as_ref()
            ),
            "en-US"
        );
        assert_eq!(
            locale(params(json!({"_meta": {"user_locale": 3}})).as_ref()),
            ""
        );
        assert_eq!(locale(params(json!({})).as_ref()), "");
        assert_eq!(locale(params(json!({"_meta": ["fr-FR"]})).as_ref()), "");
    }
}
