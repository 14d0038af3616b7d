//! What surrounds one tool call: the per client × user × tool rate limit,
//! then the backend call.
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
//! Store failures: the rate limit fails open (the call is served, a warning
//! and a counter record it).

use std::time::Duration;

use chataigne_common::codes::DecodedStatus;
use chataigne_common::{Category, ErrorCode};

use crate::auth::Principal;
use crate::call::{self, CallInput, gateway_failure};
use crate::catalog::Tool;
use crate::counters::{Dependency, Limit, Store};
use crate::envelope::Success;
use crate::rate_limit::{self, Decision};
use crate::state::AppState;

fn with_retry(code: ErrorCode, retry_after: Duration) -> DecodedStatus {
    DecodedStatus {
        retry_after: Some(retry_after),
        ..gateway_failure(code)
    }
}

/// Calls `tool` under the rate limit.
pub async fn call(
    state: &AppState,
    principal: &Principal,
    tool: &Tool,
    input: CallInput<'_>,
) -> Result<Success, DecodedStatus> {
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
    match state.limiter.check(&key, per_minute).await {
        Ok(Decision::Allowed) => {}
        Ok(Decision::Limited(wait)) => {
            state.metrics.rate_limited(Limit::Tool(&tool.name));
            return Err(with_retry(ErrorCode::RateLimited, wait));
        }
        Err(error) => {
            state.metrics.served_without(Store::RateLimit);
            tracing::warn!(store = "rate_limit", %error, "store unavailable: call served without a limit check");
        }
    }
    let outcome = counted(state, call::call(&state.backends.tools, tool, input).await);
    if tool.idempotent && outcome.as_ref().is_ok_and(|success| success.replayed) {
        state.metrics.idempotency_replay();
    }
    outcome
}

/// Counts a tool-service failure (unreachable, timed out, or unavailable
/// itself) as a dependency error; the outcome is returned unchanged.
fn counted(
    state: &AppState,
    outcome: Result<Success, DecodedStatus>,
) -> Result<Success, DecodedStatus> {
    if let Err(failure) = &outcome
        && matches!(
            failure.code.category(),
            Category::Dependency | Category::Timeout
        )
    {
        state.metrics.dependency_error(Dependency::ToolService);
    }
    outcome
}
