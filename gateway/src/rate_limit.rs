//! Rate limits as exact rolling windows: a limit of `n` calls per minute lets
//! at most `n` calls pass in any 60-second window. Each key keeps the times
//! of the calls it let pass during the last window (a sliding log); a call
//! passes while fewer than `n` are logged, and a refused call is told when
//! the oldest logged call leaves the window, which is exactly when the next
//! call will pass. Refused calls are not logged: retrying early never pushes
//! the window further.
//!
//! With Redis, the log of a key is a sorted set (score: Redis `TIME` in µs)
//! checked and updated by one Lua script, in one round trip, atomically on
//! the server's clock: the limit is exact across every gateway sharing that
//! Redis. Without Redis, the same algorithm runs in process (embedded mode).
//! A key holds at most `n` entries and expires one window after its newest.

use std::collections::{HashMap, VecDeque};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use redis::Script;
use sha2::{Digest, Sha256};
use tokio::time::Instant;

use crate::redis_conn::{RedisHandle, StoreUnavailable};

/// The window of every "per minute" limit.
pub const WINDOW: Duration = Duration::from_secs(60);

/// Sliding log on Redis. KEYS[1]: the key; ARGV[1]: the limit; ARGV[2]: the
/// window (µs); ARGV[3]: a unique suffix for this call's entry. Returns
/// `{allowed, retry_after_µs}`.
static SLIDING_LOG: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', now - window))
local count = redis.call('ZCARD', KEYS[1])
if count < limit then
  local stamp = string.format('%d', now)
  redis.call('ZADD', KEYS[1], stamp, stamp .. ':' .. ARGV[3])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
  return {1, 0}
end
local oldest = redis.call('ZRANGE', KEYS[1], count - limit, count - limit, 'WITHSCORES')
return {0, tonumber(oldest[2]) + window - now}
",
    )
});

/// The outcome of one check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Allowed,
    /// Refused; the time until the same call will pass.
    Limited(Duration),
}

/// Where the limiter keeps its logs.
pub struct RateLimiter {
    window: Duration,
    store: Logs,
}

enum Logs {
    Redis(RedisHandle),
    Local(Mutex<LocalLogs>),
}

/// In-process sliding logs, pruned as they empty.
#[derive(Default)]
pub struct LocalLogs {
    logs: HashMap<String, VecDeque<Instant>>,
    checks: u64,
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
    /// A limiter of `window`-long windows on Redis, or in process without it.
    pub fn new(redis: Option<RedisHandle>, window: Duration) -> RateLimiter {
        RateLimiter {
            window,
            store: match redis {
                Some(handle) => Logs::Redis(handle),
                None => Logs::Local(Mutex::new(LocalLogs::default())),
            },
        }
    }

    /// Counts one call against `key` limited to `limit` per window (0: no
    /// limit).
    pub async fn check(&self, key: &str, limit: u32) -> Result<Decision, StoreUnavailable> {
        if limit == 0 {
            return Ok(Decision::Allowed);
        }
        match &self.store {
            Logs::Redis(redis) => {
                let window_us = u64::try_from(self.window.as_micros()).unwrap_or(u64::MAX);
                let entry = uuid::Uuid::new_v4().simple().to_string();
                let (allowed, retry_us): (i64, i64) = redis
                    .run(
                        SLIDING_LOG
                            .key(redis.key(key))
                            .arg(limit)
                            .arg(window_us)
                            .arg(&entry[..16]),
                    )
                    .await?;
                Ok(if allowed == 1 {
                    Decision::Allowed
                } else {
                    Decision::Limited(retry_after(Duration::from_micros(
                        retry_us.max(0).unsigned_abs(),
                    )))
                })
            }
            Logs::Local(logs) => {
                let mut logs = logs.lock().unwrap_or_else(|p| p.into_inner());
                Ok(logs.check(key, limit, self.window, Instant::now()))
            }
        }
    }
}

/// A retry hint rounded up to the millisecond (never zero).
fn retry_after(wait: Duration) -> Duration {
    let millis = u64::try_from(wait.as_micros().div_ceil(1000)).unwrap_or(u64::MAX);
    Duration::from_millis(millis.max(1))
}

impl LocalLogs {
    /// One call against `key` at `now`.
    pub fn check(&mut self, key: &str, limit: u32, window: Duration, now: Instant) -> Decision {
        let horizon = now.checked_sub(window);
        let left = |at: &Instant| horizon.is_some_and(|h| *at <= h);
        self.checks += 1;
        if self.checks.is_multiple_of(4096) {
            self.logs
                .retain(|_, log| log.back().is_some_and(|newest| !left(newest)));
        }
        let log = self.logs.entry(key.to_owned()).or_default();
        while log.front().is_some_and(left) {
            log.pop_front();
        }
        let limit = usize::try_from(limit).unwrap_or(usize::MAX);
        if log.len() < limit {
            log.push_back(now);
            return Decision::Allowed;
        }
        // The call passes once all but `limit - 1` logged calls have left.
        let oldest = log[log.len() - limit];
        Decision::Limited(retry_after(
            (oldest + window).saturating_duration_since(now),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// Whether no `window`-long window of `passed` (sorted) holds more than
    /// `limit` calls.
    fn at_most_in_any_window(passed: &[Instant], limit: usize, window: Duration) -> bool {
        passed.iter().enumerate().all(|(i, start)| {
            passed[i..]
                .iter()
                .take_while(|t| **t < *start + window)
                .count()
                <= limit
        })
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_window_of_bursts_passes_exactly_the_seed_quota() {
        // Seed 001: 1,000 calls per minute per read tool.
        let mut logs = LocalLogs::default();
        let start = Instant::now();
        let mut passed = Vec::new();
        let mut hints = Vec::new();
        // A burst of 2,000 at once, then 100 more every second for a minute
        // and a half, as fast as possible.
        for second in 0..90u64 {
            let now = start + Duration::from_secs(second);
            let burst = if second == 0 { 2_000 } else { 100 };
            for _ in 0..burst {
                match logs.check("k", 1_000, WINDOW, now) {
                    Decision::Allowed => passed.push(now),
                    Decision::Limited(wait) => hints.push((now, wait)),
                }
            }
        }
        let first_window = passed.iter().filter(|t| **t < start + WINDOW).count();
        assert_eq!(first_window, 1_000, "the first 60 s pass exactly the quota");
        assert!(at_most_in_any_window(&passed, 1_000, WINDOW));
        // At 60 s the first burst leaves the window at once: 100 pass each
        // second from then until the log is full again (at 69 s).
        assert_eq!(passed.len(), 2_000);
        // Every hint names the moment the next call passes: the end of the
        // first burst's window, then the end of the window of the call
        // logged at 60 s.
        let (at, wait) = hints[0];
        assert_eq!(at + wait, start + WINDOW);
        let (at, wait) = hints[hints.len() - 1];
        assert_eq!(at, start + Duration::from_secs(89));
        assert_eq!(at + wait, start + Duration::from_secs(120));
    }

    #[tokio::test(start_paused = true)]
    async fn the_retry_hint_is_when_the_oldest_counted_call_leaves() {
        let mut logs = LocalLogs::default();
        let window = Duration::from_secs(60);
        let start = Instant::now();
        for i in 0..10u64 {
            let now = start + Duration::from_secs(i);
            assert_eq!(logs.check("k", 10, window, now), Decision::Allowed);
        }
        let at = start + Duration::from_secs(30);
        let Decision::Limited(wait) = logs.check("k", 10, window, at) else {
            panic!("the 11th call within the window is limited");
        };
        assert_eq!(
            wait,
            Duration::from_secs(30),
            "the call of t=0 leaves at 60 s"
        );
        let just_before = start + window - MS;
        assert!(matches!(
            logs.check("k", 10, window, just_before),
            Decision::Limited(left) if left == MS
        ));
        assert_eq!(
            logs.check("k", 10, window, start + window),
            Decision::Allowed
        );
        assert!(matches!(
            logs.check("k", 10, window, start + window),
            Decision::Limited(left) if left == Duration::from_secs(1)
        ));
        assert_eq!(logs.check("other", 10, window, at), Decision::Allowed);
    }

    #[tokio::test(start_paused = true)]
    async fn irregular_traffic_never_exceeds_the_limit_in_any_window() {
        let mut logs = LocalLogs::default();
        let start = Instant::now();
        let mut passed = Vec::new();
        // Arrivals with varying gaps (1 to 97 ms) for three minutes.
        let mut now = start;
        let mut step = 1u64;
        while now < start + Duration::from_secs(180) {
            if logs.check("k", 500, WINDOW, now) == Decision::Allowed {
                passed.push(now);
            }
            step = (step * 31 + 7) % 97 + 1;
            now += Duration::from_millis(step);
        }
        assert!(at_most_in_any_window(&passed, 500, WINDOW));
        assert_eq!(passed.len(), 1_500, "the quota of each of three windows");
    }

    #[tokio::test(start_paused = true)]
    async fn the_limiter_counts_on_the_runtime_clock() {
        let limiter = RateLimiter::new(None, Duration::from_secs(1));
        for _ in 0..3 {
            assert_eq!(limiter.check("k", 3).await.unwrap(), Decision::Allowed);
        }
        assert!(matches!(
            limiter.check("k", 3).await.unwrap(),
            Decision::Limited(_)
        ));
        assert_eq!(limiter.check("k", 0).await.unwrap(), Decision::Allowed);
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(limiter.check("k", 3).await.unwrap(), Decision::Allowed);
    }

    /// Two gateways sharing the real Redis: bursts from both within one
    /// short window pass the limit once, the hint is when the first call
    /// leaves, and then the quota is back.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn redis_logs_are_exact_across_two_gateways() {
        let config = crate::store_config::RedisConfig {
            url: Some(secrecy::SecretString::from(
                chataigne_common::testing::redis_url(),
            )),
            key_prefix: format!("t{}", uuid::Uuid::new_v4().simple()),
            ..crate::store_config::RedisConfig::default()
        };
        let window = Duration::from_millis(1_500);
        let one = RateLimiter::new(RedisHandle::new(&config).unwrap(), window);
        let two = RateLimiter::new(RedisHandle::new(&config).unwrap(), window);
        let start = std::time::Instant::now();
        let mut passed = 0;
        for i in 0..60 {
            let limiter = if i % 2 == 0 { &one } else { &two };
            if limiter.check("k", 20).await.expect("redis answers") == Decision::Allowed {
                passed += 1;
            }
        }
        assert_eq!(passed, 20, "one quota for both gateways");
        // Half a window later: nothing more passes, and the hint is when the
        // first call of the burst leaves the window.
        tokio::time::sleep(window / 2).await;
        let mut hint = Duration::ZERO;
        for _ in 0..10 {
            match two.check("k", 20).await.unwrap() {
                Decision::Allowed => panic!("passed inside the first window"),
                Decision::Limited(wait) => hint = wait,
            }
        }
        let burst_took = start.elapsed() - window / 2;
        assert!(
            hint <= window / 2 + MS && hint + burst_took + 50 * MS >= window / 2,
            "hint {hint:?}"
        );
        assert!(
            start.elapsed() < window,
            "still inside the first window: the count above is over a full window"
        );
        tokio::time::sleep(hint + 100 * MS).await;
        let mut again = 0;
        for _ in 0..40 {
            if one.check("k", 20).await.unwrap() == Decision::Allowed {
                again += 1;
            }
        }
        assert_eq!(again, 20, "the quota is back once the burst has left");
    }

    #[test]
    fn keys_hide_the_identifiers() {
        let key = key("tool", &["client", "user-42", "tool"]);
        assert!(key.starts_with("rl:tool:"));
        assert!(!key.contains("user-42"));
    }
}
