//! Rate limits with the generic cell rate algorithm (GCRA): a limit of `n`
//! calls per minute emits one call every `60 s / n` and tolerates a burst of
//! `n`, so at most `n` calls pass in any minute window. The state of a key is
//! one number, its theoretical arrival time (TAT).
//!
//! With Redis, the check-and-update is one Lua script run atomically on the
//! server with the server's clock, so the limit is exact across replicas.
//! Without Redis, the same algorithm runs in process (embedded mode).

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use redis::Script;
use sha2::{Digest, Sha256};

use crate::redis_conn::{RedisHandle, StoreUnavailable};

/// GCRA on Redis. KEYS[1]: the key; ARGV[1]: emission interval (µs);
/// ARGV[2]: burst tolerance (µs). Returns `{allowed, retry_after_µs}`.
static GCRA: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local interval = tonumber(ARGV[1])
local tolerance = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local allow_at = tat - tolerance
if now < allow_at then
  return {0, allow_at - now}
end
local new_tat = tat + interval
redis.call('SET', KEYS[1], string.format('%d', new_tat), 'PX', math.ceil((new_tat - now) / 1000) + 1)
return {1, 0}
",
    )
});

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    /// Refused; the earliest time the same call may pass.
    Limited(Duration),
}

/// Where the limiter keeps its state.
pub enum RateLimiter {
    Redis(RedisHandle),
    Local(Mutex<LocalCells>),
}

/// In-process TATs, pruned as they expire.
#[derive(Default)]
pub struct LocalCells {
    tats: HashMap<String, Instant>,
    checks: u64,
}

/// `(interval, tolerance)` of `per_minute` calls per minute, in µs.
fn parameters(per_minute: u32) -> (u64, u64) {
    let interval = 60_000_000 / u64::from(per_minute.max(1));
    (interval, interval * u64::from(per_minute.max(1) - 1))
}

/// The store key of `parts` (never the raw identifiers).
pub fn key(kind: &str, parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0u8]);
    }
    let digest = hasher.finalize();
    let hex: String = digest.iter().take(16).map(|b| format!("{b:02x}")).collect();
    format!("rl:{kind}:{hex}")
}

impl RateLimiter {
    pub fn new(redis: Option<RedisHandle>) -> RateLimiter {
        match redis {
            Some(handle) => RateLimiter::Redis(handle),
            None => RateLimiter::Local(Mutex::new(LocalCells::default())),
        }
    }

    /// Counts one call against `key` limited to `per_minute` (0: no limit).
    pub async fn check(&self, key: &str, per_minute: u32) -> Result<Decision, StoreUnavailable> {
        if per_minute == 0 {
            return Ok(Decision::Allowed);
        }
        let (interval, tolerance) = parameters(per_minute);
        match self {
            RateLimiter::Redis(redis) => {
                let (allowed, retry_us): (i64, i64) = redis
                    .run(GCRA.key(redis.key(key)).arg(interval).arg(tolerance))
                    .await?;
                Ok(if allowed == 1 {
                    Decision::Allowed
                } else {
                    Decision::Limited(retry_after(retry_us.max(0).unsigned_abs()))
                })
            }
            RateLimiter::Local(cells) => {
                let mut cells = cells.lock().unwrap_or_else(|p| p.into_inner());
                Ok(cells.check(key, interval, tolerance, Instant::now()))
            }
        }
    }
}

/// A retry hint rounded up to the millisecond.
fn retry_after(micros: u64) -> Duration {
    Duration::from_millis(micros.div_ceil(1000).max(1))
}

impl LocalCells {
    fn check(&mut self, key: &str, interval: u64, tolerance: u64, now: Instant) -> Decision {
        self.checks += 1;
        if self.checks.is_multiple_of(4096) {
            self.tats.retain(|_, tat| *tat > now);
        }
        let tat = self
            .tats
            .get(key)
            .copied()
            .filter(|t| *t > now)
            .unwrap_or(now);
        let allow_at = tat.checked_sub(Duration::from_micros(tolerance));
        if let Some(allow_at) = allow_at.filter(|at| now < *at) {
            let wait = allow_at.duration_since(now);
            return Decision::Limited(retry_after(
                u64::try_from(wait.as_micros()).unwrap_or(u64::MAX),
            ));
        }
        self.tats
            .insert(key.to_owned(), tat + Duration::from_micros(interval));
        Decision::Allowed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_of_exactly_the_limit_passes_then_one_per_interval() {
        let mut cells = LocalCells::default();
        let (interval, tolerance) = parameters(10);
        let start = Instant::now();
        let passed = (0..20)
            .filter(|_| cells.check("k", interval, tolerance, start) == Decision::Allowed)
            .count();
        assert_eq!(passed, 10);
        let Decision::Limited(wait) = cells.check("k", interval, tolerance, start) else {
            panic!("the 11th call is limited");
        };
        assert_eq!(wait, Duration::from_secs(6));
        let later = start + Duration::from_secs(6);
        assert_eq!(
            cells.check("k", interval, tolerance, later),
            Decision::Allowed
        );
        assert!(matches!(
            cells.check("k", interval, tolerance, later),
            Decision::Limited(_)
        ));
        assert_eq!(
            cells.check("other", interval, tolerance, later),
            Decision::Allowed
        );
    }

    #[test]
    fn keys_hide_the_identifiers() {
        let key = key("tool", &["client", "user-42", "tool"]);
        assert!(key.starts_with("rl:tool:"));
        assert!(!key.contains("user-42"));
    }
}
