//! What surrounds one tool call: the tool-service's breaker (a call to a
//! backend known down fails at once), the rate limits — the request's
//! per-address limit and the per client × user × tool limit, checked
//! together in one step (one Redis round trip), the address first — then the
//! backend call.
//!
//! Tools that take an `idempotency_key` get nothing more here: the gateway
//! never answers a replay, a mismatch or an "in progress" itself. Those
//! answers depend on who may still act on the target (its real owner, the
//! caller's membership and role there), which only the tool-service resolves;
//! it gives them from its durable record (written in the same transaction as
//! the effect) *after* the same live authorization as a fresh call. So a
//! removed membership is refused at the next request whatever the key, and
//! exactly-once needs no second store: the tool-service's record, in-flight
//! set and database locks decide alone. A cache here would save one hop on a
//! retry (a replay through the tool-service costs about as much as a small
//! write) at the price of answering before that check.
//!
//! Store failures: the rate limits fail open (the call is served, a warning
//! and a counter record it; at once while Redis's breaker is open).

use std::time::Duration;

use chataigne_common::codes::DecodedStatus;
use chataigne_common::{Category, ErrorCode};

use crate::access::address_limit::AddressLimit;
use crate::access::auth::Principal;
use crate::access::rate_limit::{self, Quota, Verdict};
use crate::backends::call::{self, CallInput, gateway_failure};
use crate::backends::catalog::Tool;
use crate::error::GatewayError;
use crate::ops::counters::{Dependency, Limit};
use crate::state::AppState;
use crate::wire::envelope::Success;

/// The refusal of a call of `tool` by its per-user limit: the next call is
/// the same one, after the delay (spoken in words when rendered).
fn rate_limited(tool: &Tool, retry_after: Duration) -> DecodedStatus {
    DecodedStatus {
        message: format!(
            "Too many calls of {tool} for this user. Call {tool} again after the suggested \
             delay, with the same arguments.",
            tool = tool.name
        ),
        retry_after: Some(retry_after),
        ..gateway_failure(ErrorCode::RateLimited)
    }
}

/// The refusal of a call of `tool` while the tool-service is known down.
fn tool_service_down(tool: &Tool) -> DecodedStatus {
    DecodedStatus {
        message: format!(
            "A service {tool} depends on is unavailable. Call {tool} again in a few seconds.",
            tool = tool.name
        ),
        ..gateway_failure(ErrorCode::DependencyUnavailable)
    }
}

/// Calls `tool` under the rate limits. The call's own failures are
/// [`GatewayError::Tool`] (answered as the tool's result or error by the
/// profile); any other error is the request's refusal by its address limit
/// or the store policy, answered like one before the token.
pub async fn call(
    state: &AppState,
    principal: &Principal,
    address: &AddressLimit,
    tool: &Tool,
    input: CallInput<'_>,
) -> Result<Success, GatewayError> {
    // Known down or hung (its breaker is open): refused at once, not sent.
    if state.backends.tools_breaker.is_open() {
        state.metrics.dependency_error(Dependency::ToolService);
        return Err(GatewayError::Tool(tool_service_down(tool)));
    }
    let limits = &state.config.rate_limits;
    let per_minute = if tool.write {
        limits.writes_per_minute
    } else {
        limits.reads_per_minute
    };
    let key = rate_limit::key(
        "tool",
        &[&principal.client_id, &principal.user_id, &tool.name],
    );
    let tool_quota = Quota {
        key: &key,
        limit: per_minute,
    };
    let address_quota = address.take();
    let quotas: &[Quota<'_>] = match &address_quota {
        Some(address_quota) => &[*address_quota, tool_quota],
        None => &[tool_quota],
    };
    match state.limiter.check_all(quotas).await {
        Ok(Verdict::Allowed) => {}
        Ok(Verdict::Limited { which, retry_after }) if which + 1 < quotas.len() => {
            return Err(address.refused(&state.metrics, retry_after));
        }
        Ok(Verdict::Limited { retry_after, .. }) => {
            state.metrics.rate_limited(Limit::Tool(&tool.name));
            return Err(GatewayError::Tool(rate_limited(tool, retry_after)));
        }
        Err(error) => address.store_failed(&state.metrics, &error)?,
    }
    // Boxed: the gRPC call's future is large, and would otherwise be copied
    // through every layer above it on each call. A call already sent when
    // the tool-service is found unreachable or hung ends then, with the
    // typed error, not at its deadline: a read is unavailable, a write may
    // have reached the tool-service (its outcome is unknown; its idempotency
    // key makes the retry safe). A tool-service that answers NOT_SERVING
    // (draining, database down) answers its calls in flight itself.
    let outcome = tokio::select! {
        outcome = Box::pin(call::call(&state.backends.tools, tool, input)) => outcome,
        () = state.backends.tools_breaker.hung() => Err(gateway_failure(if tool.write {
            ErrorCode::OutcomeUnknown
        } else {
            ErrorCode::DependencyUnavailable
        })),
    };
    let outcome = counted(state, outcome);
    if tool.idempotent && outcome.as_ref().is_ok_and(|success| success.replayed) {
        state.metrics.idempotency_replay();
    }
    outcome.map_err(GatewayError::Tool)
}

/// Counts a tool-service failure (unreachable, timed out, or unavailable
/// itself) as a dependency error — not `MCP_OVERLOADED`, a busy tool-service
/// shedding one class of calls, which is no outage; the outcome is returned
/// unchanged.
fn counted(
    state: &AppState,
    outcome: Result<Success, DecodedStatus>,
) -> Result<Success, DecodedStatus> {
    if let Err(failure) = &outcome
        && failure.code != ErrorCode::Overloaded
        && matches!(
            failure.code.category(),
            Category::Dependency | Category::Timeout
        )
    {
        state.metrics.dependency_error(Dependency::ToolService);
    }
    outcome
}
