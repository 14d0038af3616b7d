//! The limit counters shared by every replica, in Redis: the same generic
//! cell rate algorithm (GCRA) as the in-process counters, one Lua script per
//! operation run atomically on the server with the server's clock, so a
//! quota is one quota whatever the number of replicas. The state of a key is
//! its theoretical arrival time (TAT), in microseconds, expiring with it.
//!
//! Key names are `<prefix>:as:<kind>:<HMAC-SHA256 under the shared key
//! secret>`: addresses, accounts and client ids never appear in Redis.
//! Every script names one key, so a Redis Cluster (`cluster = true`) spreads
//! the keys over its slots with no hash tag. Commands are bounded by short
//! timeouts; a Redis that does not answer makes the caller fall back to its
//! in-process counters.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use aws_lc_rs::hmac;
use chataigne_common::redis_store::{RedisOptions, RedisStore};
use redis::{FromRedisValue, Script, ScriptInvocation};
use secrecy::ExposeSecret;

use crate::config::{Limit, LimitStoreConfig};

/// The state every script starts from (after its own `interval`, when it
/// counts): `now` by the server's clock and the key's TAT, not before `now`.
const STATE: &str = r"
local tolerance = tonumber(ARGV[2])
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end";

/// `local interval = …` then [`STATE`] then `rest`: a script that counts.
fn counting(rest: &str) -> Script {
    Script::new(&format!(
        "\nlocal interval = tonumber(ARGV[1]){STATE}{rest}"
    ))
}

/// Counts one event if it conforms. KEYS[1]: the key; ARGV[1]: emission
/// interval (µs); ARGV[2]: burst tolerance (µs). Returns `{allowed, wait_µs}`.
static CONSUME: LazyLock<Script> = LazyLock::new(|| {
    counting(
        r"
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

/// Whether one more event would conform, without counting it. Same
/// arguments; returns the wait in µs (0: it would conform).
static PEEK: LazyLock<Script> = LazyLock::new(|| {
    Script::new(&format!(
        r"{STATE}
local allow_at = tat - tolerance
if now < allow_at then return allow_at - now end
return 0
"
    ))
});

/// Counts one failure (when it conforms) and returns the wait in µs before
/// the key may try again (0: it still may). Same arguments.
static FAIL: LazyLock<Script> = LazyLock::new(|| {
    counting(
        r"
if now >= tat - tolerance then
  tat = tat + interval
  redis.call('SET', KEYS[1], string.format('%d', tat), 'PX', math.ceil((tat - now) / 1000) + 1)
end
local allow_at = tat - tolerance
if now < allow_at then return allow_at - now end
return 0
",
    )
});

/// What the shared counters do with one event of a key.
#[derive(Debug, Clone, Copy)]
pub enum Op {
    /// Counts an event; refused past the quota ([`CONSUME`]).
    Consume,
    /// Whether the key may try now, counting nothing ([`PEEK`]).
    Peek,
    /// Counts a failure; refused from now on once the quota is spent ([`FAIL`]).
    Fail,
}

/// Least time between two warnings about an unavailable Redis.
const WARN_EVERY_SECS: u64 = 10;

/// The Redis connection and the key secret of the shared counters.
pub struct SharedLimits {
    store: RedisStore,
    prefix: String,
    secret: hmac::Key,
    last_warning: AtomicU64,
}

/// `(interval, tolerance)` of `limit`, in µs.
fn parameters(limit: Limit) -> (u64, u64) {
    let max = u64::from(limit.max.max(1));
    let interval = (limit.per_secs.max(1).saturating_mul(1_000_000) / max).max(1);
    (interval, interval.saturating_mul(max - 1))
}

/// A wait in µs from a script, rounded up to the millisecond.
fn wait(micros: i64) -> Duration {
    Duration::from_millis(micros.max(0).unsigned_abs().div_ceil(1000).max(1))
}

impl SharedLimits {
    /// Prepares the connection (lazily: the service starts while Redis is
    /// down). `None` without `url`.
    pub fn new(config: &LimitStoreConfig) -> anyhow::Result<Option<SharedLimits>> {
        let (Some(url), Some(secret)) = (&config.url, &config.key_secret) else {
            return Ok(None);
        };
        let store = RedisStore::new(RedisOptions {
            url: url.expose_secret(),
            cluster: config.cluster,
            tls_ca_file: config.tls_ca_file.as_deref(),
            connect_timeout: Duration::from_millis(config.connect_timeout_ms),
            response_timeout: Duration::from_millis(config.response_timeout_ms),
            section: "oauth.rate_limits.redis",
        })?;
        Ok(Some(SharedLimits {
            store,
            prefix: config.key_prefix.clone(),
            secret: hmac::Key::new(hmac::HMAC_SHA256, secret.expose_secret().as_bytes()),
            last_warning: AtomicU64::new(0),
        }))
    }

    /// Refuses to start on a Redis of the other mode than configured (when
    /// it answers now).
    pub async fn verify_at_start(&self) -> anyhow::Result<()> {
        self.store.verify_at_start().await
    }

    /// The Redis key of `parts` under `kind`: a keyed hash, never the values.
    pub fn key(&self, kind: &str, parts: &[&[u8]]) -> String {
        let mut context = hmac::Context::with_key(&self.secret);
        context.update(kind.as_bytes());
        for part in parts {
            context.update(&[0]);
            context.update(part);
        }
        let tag = context.sign();
        let hex: String = tag
            .as_ref()
            .iter()
            .take(20)
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("{}:as:{kind}:{hex}", self.prefix)
    }

    async fn run<T: FromRedisValue>(&self, invocation: &ScriptInvocation<'_>) -> Option<T> {
        match self.store.invoke(invocation).await {
            Ok(value) => Some(value),
            Err(error) => {
                self.warn(&error.to_string());
                None
            }
        }
    }

    /// One warning every [`WARN_EVERY_SECS`] at most.
    fn warn(&self, error: &str) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let last = self.last_warning.load(Ordering::Relaxed);
        if now >= last.saturating_add(WARN_EVERY_SECS)
            && self
                .last_warning
                .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
                .is_ok()
        {
            tracing::warn!(store = "rate_limit", %error, "redis unavailable: the limits count in process meanwhile");
        }
    }

    /// Applies `op` to `key` under `limit`: `Some(Err(wait))` when refused,
    /// `None` when Redis did not answer.
    pub async fn apply(&self, op: Op, key: &str, limit: Limit) -> Option<Result<(), Duration>> {
        let (interval, tolerance) = parameters(limit);
        let wait_us: i64 = match op {
            Op::Consume => {
                let (allowed, wait_us): (i64, i64) = self
                    .run(CONSUME.key(key).arg(interval).arg(tolerance))
                    .await?;
                // A refusal waits at least 1 µs, rounded up to 1 ms.
                if allowed == 1 { 0 } else { wait_us.max(1) }
            }
            Op::Peek => self.run(PEEK.key(key).arg(interval).arg(tolerance)).await?,
            Op::Fail => self.run(FAIL.key(key).arg(interval).arg(tolerance)).await?,
        };
        Some(if wait_us > 0 {
            Err(wait(wait_us))
        } else {
            Ok(())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parameters_allow_a_burst_of_the_quota() {
        let (interval, tolerance) = parameters(Limit::new(30, 300));
        assert_eq!(interval, 10_000_000);
        assert_eq!(tolerance, 290_000_000);
        let (interval, tolerance) = parameters(Limit::new(1, 60));
        assert_eq!((interval, tolerance), (60_000_000, 0));
        assert_eq!(wait(1), Duration::from_millis(1));
        assert_eq!(wait(1_500_000), Duration::from_millis(1_500));
    }

    #[test]
    fn the_scripts_keep_their_texts() {
        // SHA-1 of each script's text, as `EVALSHA` names it.
        assert_eq!(
            CONSUME.get_hash(),
            "e7771252b01a93fd0802b9870368ef6f3038b28d"
        );
        assert_eq!(PEEK.get_hash(), "40612c5abc0e61e49df04c3752ef3f221fe5c766");
        assert_eq!(FAIL.get_hash(), "08c6756f582bdb14ab1efc74ca088239a773d28a");
    }
}
