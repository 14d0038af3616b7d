//! The caller's deadline inside the tool-service: the gRPC runner reads the
//! `grpc-timeout` the caller set and runs every RPC within it; the store
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

/// Runs `work` within `timeout` (minus a small [`margin`]); past it, the work
/// is dropped (an open transaction rolls back) and `DeadlineExceeded` returned.
pub async fn within<T>(
    timeout: Option<Duration>,
    work: impl Future<Output = Result<T, DomainError>>,
) -> Result<T, DomainError> {
    let Some(timeout) = timeout else {
        return work.await;
    };
    let budget = timeout
        .checked_sub(margin(timeout))
        .filter(|b| !b.is_zero())
        .unwrap_or(timeout);
    let deadline = Instant::now() + budget;
    DEADLINE
        .scope(deadline, async move {
            tokio::time::timeout(budget, work)
                .await
                .unwrap_or(Err(DomainError::DeadlineExceeded))
        })
        .await
}

/// What remains of the current call's deadline, if it has one.
pub fn remaining() -> Option<Duration> {
    DEADLINE
        .try_with(|deadline| deadline.saturating_duration_since(Instant::now()))
        .ok()
}

/// Parses a `grpc-timeout` value: up to 8 digits and a unit (H, M, S, m, u, n).
pub fn parse_grpc_timeout(value: &str) -> Option<Duration> {
    let digits = value.get(..value.len().checked_sub(1)?)?;
    if digits.is_empty() || digits.len() > 8 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let amount: u64 = digits.parse().ok()?;
    Some(match value.as_bytes().last()? {
        b'H' => Duration::from_secs(amount * 3600),
        b'M' => Duration::from_secs(amount * 60),
        b'S' => Duration::from_secs(amount),
        b'm' => Duration::from_millis(amount),
        b'u' => Duration::from_micros(amount),
        b'n' => Duration::from_nanos(amount),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grpc_timeouts_parse() {
        assert_eq!(parse_grpc_timeout("20000m"), Some(Duration::from_secs(20)));
        assert_eq!(parse_grpc_timeout("15S"), Some(Duration::from_secs(15)));
        assert_eq!(parse_grpc_timeout("1H"), Some(Duration::from_secs(3600)));
        assert_eq!(parse_grpc_timeout("100u"), Some(Duration::from_micros(100)));
        for bad in ["", "m", "123456789m", "12x", "-1S", "1.5S"] {
            assert_eq!(parse_grpc_timeout(bad), None, "{bad}");
        }
    }

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
    async fn work_past_the_deadline_is_stopped() {
        let slow = within(Some(Duration::from_millis(50)), async {
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
