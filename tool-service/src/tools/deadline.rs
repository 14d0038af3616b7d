//! The caller's deadline inside the tool-service: the gRPC runner reads the
//! RPC's deadline (the caller's `grpc-timeout` or the server's cap, from the
//! request's arrival) and runs every RPC within it; the store
//! reads what remains to bound its own work (PostgreSQL's statement timeout
//! of each connection taken during the call, `SET LOCAL statement_timeout`
//! in write transactions and the analytics query), so work stops downstream
//! when the caller has given up.

use std::future::Future;
use std::time::{Duration, Instant};

use crate::domain::DomainError;

tokio::task_local! {
    static DEADLINE: Instant;
}

/// Time kept back so the answer reaches the caller before its own expiry:
/// a tenth of the deadline, at least 20 ms and at most 50 ms (a loaded
/// host may take tens of milliseconds to hand the answer over).
fn margin(timeout: Duration) -> Duration {
    (timeout / 10).clamp(Duration::from_millis(20), Duration::from_millis(50))
}

/// How close to the end of its budget a dependency's failure counts as the
/// call's deadline: a dependency's own bound is what remained, and the
/// dependency answers its deadline a little ahead of it (a timer tick, the
/// way back), more so on a loaded host.
const AT_THE_DEADLINE: Duration = Duration::from_millis(20);

/// Runs `work` until `deadline` (minus a small [`margin`], at most half of
/// what remains); past it, the work is dropped (an open transaction rolls
/// back) and `DeadlineExceeded` returned. The answer is thus ready before
/// the RPC's own deadline (`chataigne_common::grpc_deadline`) passes.
pub async fn within<T>(
    deadline: Option<tokio::time::Instant>,
    work: impl Future<Output = Result<T, DomainError>>,
) -> Result<T, DomainError> {
    let Some(deadline) = deadline else {
        return work.await;
    };
    let now = tokio::time::Instant::now();
    let remaining = deadline.saturating_duration_since(now);
    let budget = remaining - margin(remaining).min(remaining / 2);
    let ends = now + budget;
    DEADLINE
        .scope(Instant::now() + budget, async move {
            match tokio::time::timeout_at(ends, work).await {
                // A dependency bounded by what remained (the auth-service's
                // check) that failed as the time ran out: the deadline.
                Ok(Err(DomainError::Dependency(..)))
                    if ends.saturating_duration_since(tokio::time::Instant::now())
                        <= AT_THE_DEADLINE =>
                {
                    Err(DomainError::DeadlineExceeded)
                }
                Ok(answered) => answered,
                Err(_) => Err(DomainError::DeadlineExceeded),
            }
        })
        .await
}

/// What remains of the current call's deadline, if it has one.
pub fn remaining() -> Option<Duration> {
    DEADLINE
        .try_with(|deadline| deadline.saturating_duration_since(Instant::now()))
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_kept_a_tenth_of_the_deadline_ahead_within_bounds() {
        assert_eq!(margin(Duration::from_millis(50)), Duration::from_millis(20));
        assert_eq!(
            margin(Duration::from_millis(400)),
            Duration::from_millis(40)
        );
        assert_eq!(
            margin(Duration::from_millis(1_500)),
            Duration::from_millis(50)
        );
        assert_eq!(margin(Duration::from_secs(15)), Duration::from_millis(50));
    }

    #[tokio::test(start_paused = true)]
    async fn a_dependency_failing_as_the_time_runs_out_is_the_deadline() {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(100);
        let cut = within(Some(deadline), async {
            let left = remaining().unwrap_or_default();
            tokio::time::sleep(left).await;
            Err::<(), _>(DomainError::Dependency(
                crate::domain::Dependency::AuthService,
                "deadline".to_owned(),
            ))
        });
        assert!(matches!(cut.await, Err(DomainError::DeadlineExceeded)));
        let deadline = tokio::time::Instant::now() + Duration::from_millis(100);
        let down = within(Some(deadline), async {
            Err::<(), _>(DomainError::Dependency(
                crate::domain::Dependency::AuthService,
                "down".to_owned(),
            ))
        });
        assert!(
            matches!(down.await, Err(DomainError::Dependency(..))),
            "a dependency down well before the deadline stays so"
        );
    }

    #[tokio::test]
    async fn work_past_the_deadline_is_stopped() {
        let deadline = tokio::time::Instant::now() + Duration::from_millis(50);
        let slow = within(Some(deadline), async {
            assert!(remaining().is_some_and(|r| r <= Duration::from_millis(50)));
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok(())
        });
        assert!(matches!(slow.await, Err(DomainError::DeadlineExceeded)));
        assert_eq!(remaining(), None);
        let fast = within(None, async { Ok(1) }).await;
        assert_eq!(fast.ok(), Some(1));
    }
}
