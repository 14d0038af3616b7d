//! Rate limits as exact rolling windows: a limit of `n` calls per minute lets
//! at most `n` calls pass in any 60-second window. Each key keeps the times
//! of the calls it let pass during the last window (a sliding log); a call
//! passes while fewer than `n` are logged, and a refused call is told when
//! the oldest logged call leaves the window, which is exactly when the next
//! call will pass. Refused calls are not logged: retrying early never pushes
//! the window further.
//!
//! A call may count against several limits at once ([`RateLimiter::check_all`]):
//! they are checked in order, each one that passes logs the call, and the
//! first that refuses stops the check (the later ones are neither checked
//! nor logged), exactly as separate checks one after the other would.
//!
//! With Redis, the logs are sorted sets (score: Redis `TIME` in µs) checked
//! and updated by one Lua script for all the call's limits, in one round
//! trip, atomically on the server's clock: the limits are exact across every
//! gateway sharing that Redis. Without Redis, the same algorithm runs in
//! process (embedded mode). A key holds at most `n` entries and expires one
//! window after its newest.
//!
//! A refusal from Redis is remembered until the moment it names (measured
//! from before the script was sent, so never later than Redis's own): until
//! then nothing can pass on that key, so a check whose first limit is known
//! refused is answered without a round trip, and [`RateLimiter::known_refusal`]
//! lets the gateway refuse such a key before doing any other work.

use std::collections::{HashMap, VecDeque};
use std::sync::{LazyLock, Mutex};
use std::time::Duration;

use aws_lc_rs::digest::{Context, SHA256};
use redis::Script;
use tokio::time::Instant;

use crate::error::GatewayError;
use crate::stores::redis_conn::RedisHandle;

/// The window of every "per minute" limit.
pub const WINDOW: Duration = Duration::from_secs(60);

/// Remembered refusals kept before expired ones are pruned.
const REMEMBERED_REFUSALS: usize = 4096;

/// Sliding logs on Redis. KEYS: the call's keys, in order; ARGV[1]: the
/// window (µs); ARGV[2]: a unique suffix for this call's entries; ARGV[2 + i]:
/// the limit of KEYS[i]. Returns `{0, 0}` when every limit passed, else
/// `{i, retry_after_µs}` for the first key that refused.
static SLIDING_LOGS: LazyLock<Script> = LazyLock::new(|| {
    Script::new(
        r"
local window = tonumber(ARGV[1])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local stamp = string.format('%d', now)
local horizon = string.format('%d', now - window)
for i, key in ipairs(KEYS) do
  local limit = tonumber(ARGV[i + 2])
  redis.call('ZREMRANGEBYSCORE', key, '-inf', horizon)
  local count = redis.call('ZCARD', key)
  if count >= limit then
    local oldest = redis.call('ZRANGE', key, count - limit, count - limit, 'WITHSCORES')
    return {i, tonumber(oldest[2]) + window - now}
  end
  redis.call('ZADD', key, stamp, stamp .. ':' .. ARGV[2])
  redis.call('PEXPIRE', key, math.ceil(window / 1000))
end
return {0, 0}
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

/// One limit a call counts against: its key and its quota per window (0:
/// no limit).
#[derive(Debug, Clone, Copy)]
pub struct Quota<'a> {
    pub key: &'a str,
    pub limit: u32,
}

/// The outcome of a check of several limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allowed,
    /// Refused by the limit at index `which` of the check; the time until
    /// the same call will pass it.
    Limited {
        which: usize,
        retry_after: Duration,
    },
}

/// Where the limiter keeps its logs.
pub struct RateLimiter {
    window: Duration,
    store: Logs,
}

enum Logs {
    Redis {
        handle: RedisHandle,
        /// Key → the moment its remembered refusal ends.
        refused: Mutex<HashMap<String, Instant>>,
    },
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
    let mut hasher = Context::new(&SHA256);
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update(&[0u8]);
    }
    let digest = hasher.finish();
    let hex: String = digest
        .as_ref()
        .iter()
        .take(16)
        .map(|b| format!("{b:02x}"))
        .collect();
    format!("rl:{kind}:{hex}")
}

impl RateLimiter {
    /// A limiter of `window`-long windows on Redis, or in process without it.
    pub fn new(redis: Option<RedisHandle>, window: Duration) -> RateLimiter {
        RateLimiter {
            window,
            store: match redis {
                Some(handle) => Logs::Redis {
                    handle,
                    refused: Mutex::new(HashMap::new()),
                },
                None => Logs::Local(Mutex::new(LocalLogs::default())),
            },
        }
    }

    /// Counts one call against `key` limited to `limit` per window (0: no
    /// limit).
    #[cfg(test)]
    pub async fn check(&self, key: &str, limit: u32) -> Result<Decision, GatewayError> {
        Ok(match self.check_all(&[Quota { key, limit }]).await? {
            Verdict::Allowed => Decision::Allowed,
            Verdict::Limited { retry_after, .. } => Decision::Limited(retry_after),
        })
    }

    /// Counts one call against every limit of `quotas`, in order, in one
    /// step (one Redis round trip at most; none when no quota limits, or
    /// when the first limit is known refused).
    pub async fn check_all(&self, quotas: &[Quota<'_>]) -> Result<Verdict, GatewayError> {
        let limited: Vec<(usize, &Quota<'_>)> = quotas
            .iter()
            .enumerate()
            .filter(|(_, q)| q.limit > 0)
            .collect();
        let Some(&(first, first_quota)) = limited.first() else {
            return Ok(Verdict::Allowed);
        };
        match &self.store {
            Logs::Redis { handle, refused } => {
                if let Some(retry_after) = self.known_refusal(first_quota.key) {
                    return Ok(Verdict::Limited {
                        which: first,
                        retry_after,
                    });
                }
                let window_us = u64::try_from(self.window.as_micros()).unwrap_or(u64::MAX);
                let entry = uuid::Uuid::new_v4().simple().to_string();
                let mut invocation = SLIDING_LOGS.prepare_invoke();
                for (_, quota) in &limited {
                    invocation.key(handle.key(quota.key));
                }
                invocation.arg(window_us).arg(&entry[..16]);
                for (_, quota) in &limited {
                    invocation.arg(quota.limit);
                }
                let sent = Instant::now();
                let (refused_by, retry_us): (i64, i64) = handle.run(&invocation).await?;
                let Some(&(which, quota)) = usize::try_from(refused_by)
                    .ok()
                    .and_then(|i| i.checked_sub(1))
                    .and_then(|i| limited.get(i))
                else {
                    return Ok(Verdict::Allowed);
                };
                let wait = Duration::from_micros(retry_us.max(0).unsigned_abs());
                remember(refused, quota.key, sent + wait);
                Ok(Verdict::Limited {
                    which,
                    retry_after: retry_after(wait),
                })
            }
            Logs::Local(logs) => {
                let mut logs = logs.lock().unwrap_or_else(|p| p.into_inner());
                let now = Instant::now();
                for (which, quota) in limited {
                    if let Decision::Limited(retry_after) =
                        logs.check(quota.key, quota.limit, self.window, now)
                    {
                        return Ok(Verdict::Limited { which, retry_after });
                    }
                }
                Ok(Verdict::Allowed)
            }
        }
    }

    /// The time left of a refusal of `key` that Redis gave earlier and that
    /// still holds (nothing can pass `key` before it ends); never on the
    /// in-process logs, whose check costs no round trip.
    pub fn known_refusal(&self, key: &str) -> Option<Duration> {
        let Logs::Redis { refused, .. } = &self.store else {
            return None;
        };
        let mut refused = refused.lock().unwrap_or_else(|p| p.into_inner());
        let until = *refused.get(key)?;
        let now = Instant::now();
        if until > now {
            Some(retry_after(until - now))
        } else {
            refused.remove(key);
            None
        }
    }
}

/// Remembers that nothing passes `key` before `until`.
fn remember(refused: &Mutex<HashMap<String, Instant>>, key: &str, until: Instant) {
    let mut refused = refused.lock().unwrap_or_else(|p| p.into_inner());
    if refused.len() >= REMEMBERED_REFUSALS {
        let now = Instant::now();
        refused.retain(|_, until| *until > now);
        if refused.len() >= REMEMBERED_REFUSALS {
            return;
        }
    }
    refused.insert(key.to_owned(), until);
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
        exact_across_two_gateways(redis_config(&chataigne_common::testing::redis_url(), false))
            .await;
    }

    /// The same on a Redis Cluster of three masters: one quota for both
    /// gateways, the keys of one call on one slot.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn redis_cluster_logs_are_exact_across_two_gateways() {
        let Some(cluster) = chataigne_common::testing::RedisCluster::start().await else {
            return;
        };
        exact_across_two_gateways(redis_config(&cluster.url(), true)).await;
    }

    /// The limits of one call in one script on a cluster: its keys share the
    /// deployment's hash tag.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn redis_cluster_checks_every_limit_of_a_call_in_one_script() {
        let Some(cluster) = chataigne_common::testing::RedisCluster::start().await else {
            return;
        };
        let config = redis_config(&cluster.url(), true);
        let handle = RedisHandle::new(&config).unwrap().unwrap();
        assert_eq!(
            handle.key("rl:tool:x"),
            format!("{{{}}}:rl:tool:x", config.key_prefix)
        );
        handle
            .verify_at_start()
            .await
            .expect("a cluster configured as one");
        let limiter = RateLimiter::new(Some(handle), Duration::from_secs(5));
        let both = quotas(3, 2);
        let mut verdicts = Vec::new();
        for _ in 0..4 {
            verdicts.push(
                match limiter.check_all(&both).await.expect("the cluster answers") {
                    Verdict::Allowed => None,
                    Verdict::Limited { which, .. } => Some(which),
                },
            );
        }
        assert_eq!(verdicts, [None, None, Some(1), Some(0)]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_redis_of_the_other_mode_refuses_to_start_naming_the_setting() {
        let Some(cluster) = chataigne_common::testing::RedisCluster::start().await else {
            return;
        };
        let as_standalone = RedisHandle::new(&redis_config(&cluster.url(), false))
            .unwrap()
            .unwrap();
        let error = as_standalone.verify_at_start().await.unwrap_err();
        assert!(
            error.to_string().contains("set redis.cluster = true"),
            "{error}"
        );
        // Its commands fail too (never MOVED or CROSSSLOT half-served).
        let limiter = RateLimiter::new(Some(as_standalone), WINDOW);
        assert!(limiter.check_all(&quotas(3, 2)).await.is_err());
        let as_cluster =
            RedisHandle::new(&redis_config(&chataigne_common::testing::redis_url(), true))
                .unwrap()
                .unwrap();
        let error = as_cluster.verify_at_start().await.unwrap_err();
        assert!(
            error.to_string().contains("redis.cluster is true")
                && error.to_string().contains("set redis.cluster = false"),
            "{error}"
        );
        assert!(!as_cluster.ping().await, "the breaker sees it down");
        // An unreachable Redis is no reason not to start: it is checked once
        // it answers.
        let down = RedisHandle::new(&redis_config("redis://127.0.0.1:1", true))
            .unwrap()
            .unwrap();
        down.verify_at_start()
            .await
            .expect("starts while Redis is down");
    }

    fn redis_config(url: &str, cluster: bool) -> crate::config::RedisConfig {
        crate::config::RedisConfig {
            url: Some(secrecy::SecretString::from(url.to_owned())),
            cluster,
            key_prefix: format!("t{}", uuid::Uuid::new_v4().simple()),
            ..crate::config::RedisConfig::default()
        }
    }

    async fn exact_across_two_gateways(config: crate::config::RedisConfig) {
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

    fn quotas<'a>(address: u32, tool: u32) -> [Quota<'a>; 2] {
        [
            Quota {
                key: "address",
                limit: address,
            },
            Quota {
                key: "tool",
                limit: tool,
            },
        ]
    }

    #[tokio::test(start_paused = true)]
    async fn several_limits_count_in_order_and_the_first_refusal_stops_the_check() {
        let limiter = RateLimiter::new(None, Duration::from_secs(10));
        let both = quotas(2, 1);
        assert_eq!(limiter.check_all(&both).await.unwrap(), Verdict::Allowed);
        tokio::time::advance(Duration::from_secs(1)).await;
        // The address passes (and logs the call), the tool refuses: its call
        // of t=0 leaves at 10 s.
        assert_eq!(
            limiter.check_all(&both).await.unwrap(),
            Verdict::Limited {
                which: 1,
                retry_after: Duration::from_secs(9)
            }
        );
        // Both calls were logged for the address, which now refuses first;
        // its call of t=0 leaves at 10 s too.
        assert_eq!(
            limiter.check_all(&both).await.unwrap(),
            Verdict::Limited {
                which: 0,
                retry_after: Duration::from_secs(9)
            }
        );
        // A refusal by the address left the tool's log alone: another
        // address passes the tool once its first call has left.
        tokio::time::advance(Duration::from_secs(9)).await;
        let other = [
            Quota {
                key: "other address",
                limit: 2,
            },
            both[1],
        ];
        assert_eq!(limiter.check_all(&other).await.unwrap(), Verdict::Allowed);
        // A limit of 0 is no limit: the refusal names the tool's index.
        assert_eq!(
            limiter.check_all(&quotas(0, 1)).await.unwrap(),
            Verdict::Limited {
                which: 1,
                retry_after: Duration::from_secs(10)
            }
        );
        assert_eq!(
            limiter.check_all(&quotas(0, 0)).await.unwrap(),
            Verdict::Allowed
        );
        assert_eq!(limiter.known_refusal("tool"), None, "in process: no memory");
    }

    /// Both limits of a call in one script on the real Redis: the same
    /// order and hints as separate checks, and a refusal remembered until
    /// the moment it names.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn redis_checks_every_limit_of_a_call_in_one_script_and_remembers_refusals() {
        let config = crate::config::RedisConfig {
            url: Some(secrecy::SecretString::from(
                chataigne_common::testing::redis_url(),
            )),
            key_prefix: format!("t{}", uuid::Uuid::new_v4().simple()),
            ..crate::config::RedisConfig::default()
        };
        let window = Duration::from_secs(5);
        let limiter = RateLimiter::new(RedisHandle::new(&config).unwrap(), window);
        let both = quotas(3, 2);
        let mut verdicts = Vec::new();
        for _ in 0..4 {
            verdicts.push(
                match limiter.check_all(&both).await.expect("redis answers") {
                    Verdict::Allowed => None,
                    Verdict::Limited { which, retry_after } => {
                        assert!(
                            retry_after <= window && retry_after > window - Duration::from_secs(2),
                            "{retry_after:?}"
                        );
                        Some(which)
                    }
                },
            );
        }
        assert_eq!(verdicts, [None, None, Some(1), Some(0)]);
        let address = limiter.known_refusal("address").expect("remembered");
        let tool = limiter.known_refusal("tool").expect("remembered");
        assert!(address <= window && tool <= window, "{address:?} {tool:?}");
        // Known refused first: answered at once, with the remembered hint.
        assert!(matches!(
            limiter.check_all(&both).await.unwrap(),
            Verdict::Limited { which: 0, retry_after } if retry_after <= address
        ));
        // Another address still passes, until the tool refuses it.
        let other = [
            Quota {
                key: "other address",
                limit: 3,
            },
            both[1],
        ];
        assert!(matches!(
            limiter.check_all(&other).await.unwrap(),
            Verdict::Limited { which: 1, .. }
        ));
    }

    #[test]
    fn keys_hide_the_identifiers() {
        let key = key("tool", &["client", "user-42", "tool"]);
        assert!(key.starts_with("rl:tool:"));
        assert!(!key.contains("user-42"));
        // Known answer: the first 16 bytes of SHA-256("client\0user-42\0tool\0"),
        // so the keys of limits already counted in Redis stay the same.
        assert_eq!(key, "rl:tool:4ac08895417577bb3e8c67013a11af71");
    }
}
