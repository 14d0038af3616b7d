//! What surrounds one tool call: the per client × user × tool rate limit, then
//! the idempotency cache for tools that take an `idempotency_key`, then the
//! backend call, then the cache entry settled (result stored or lock freed).
//!
//! Store failures: the rate limit fails open (the call is served, a warning
//! and a counter record it); the idempotency cache is bypassed and the call
//! goes on to the tool-service, whose database record decides (replay,
//! mismatch or in progress), so Redis being down never causes a second effect.

use std::time::Duration;

use chataigne_common::codes::DecodedStatus;
use chataigne_common::{Category, ErrorCode};
use serde_json::{Map, Value};

use crate::auth::Principal;
use crate::call::{self, CallInput, gateway_failure};
use crate::catalog::Tool;
use crate::counters::{Dependency, Limit, Store};
use crate::envelope::Success;
use crate::idempotency::{Begin, Cached};
use crate::rate_limit::{self, Decision};
use crate::state::AppState;

/// Suggested wait before retrying an operation still in progress.
const IN_PROGRESS_RETRY: Duration = Duration::from_secs(1);
/// How long the in-progress lock outlives the write deadline.
const LOCK_MARGIN: Duration = Duration::from_secs(5);

fn with_retry(code: ErrorCode, retry_after: Duration) -> DecodedStatus {
    DecodedStatus {
        retry_after: Some(retry_after),
        ..gateway_failure(code)
    }
}

/// Calls `tool` under the rate limit and, when it takes one, its idempotency key.
pub async fn call(
    state: &AppState,
    principal: &Principal,
    tool: &Tool,
    arguments: &Map<String, Value>,
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

    let claim = if tool.idempotent {
        state.hasher.claim(
            &principal.client_id,
            &principal.user_id,
            &tool.name,
            arguments,
        )
    } else {
        None
    };
    let Some(claim) = claim else {
        return counted(state, call::call(&state.backends.tools, tool, input).await);
    };
    let held = match state
        .idempotency
        .begin(&claim, input.deadline + LOCK_MARGIN)
        .await
    {
        Ok(Begin::Acquired) => true,
        Ok(Begin::Replay(cached)) => {
            state.metrics.idempotency_replay();
            return Ok(Success::from_cache(cached));
        }
        Ok(Begin::Mismatch) => return Err(gateway_failure(ErrorCode::IdempotencyMismatch)),
        Ok(Begin::InProgress) => {
            return Err(with_retry(
                ErrorCode::OperationInProgress,
                IN_PROGRESS_RETRY,
            ));
        }
        Err(error) => {
            state.metrics.served_without(Store::Idempotency);
            tracing::warn!(store = "idempotency", %error, "store unavailable: the tool-service's record decides");
            false
        }
    };
    let outcome = counted(state, call::call(&state.backends.tools, tool, input).await);
    if held {
        let ttl = Duration::from_secs(state.config.idempotency.replay_ttl_secs);
        let settled = match &outcome {
            Ok(success) => {
                state
                    .idempotency
                    .complete(&claim, &success.to_cache(), ttl)
                    .await
            }
            Err(_) => state.idempotency.release(&claim).await,
        };
        if let Err(error) = settled {
            state.metrics.dependency_error(Dependency::Redis);
            tracing::warn!(store = "idempotency", %error, "cache entry not settled; it expires by itself");
        }
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

impl Success {
    fn to_cache(&self) -> Cached {
        Cached {
            data_json: self.data.get().to_owned(),
            text: self.text.clone(),
            next_cursor: self.next_cursor.clone(),
            truncated: self.truncated,
        }
    }

    /// A cached result, replayed.
    fn from_cache(cached: Cached) -> Success {
        let data = serde_json::value::RawValue::from_string(cached.data_json).unwrap_or_default();
        Success {
            data,
            text: cached.text,
            next_cursor: cached.next_cursor,
            truncated: cached.truncated,
            replayed: true,
        }
    }
}
