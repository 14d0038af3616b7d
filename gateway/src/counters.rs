//! Process counters of the store decisions an operator watches: refusals by
//! the rate limits and calls served while a store was unavailable (fail-open).
//! Exposed in Prometheus text format on the internal listener's `/metrics`.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
pub struct Counters {
    /// Tool calls refused by the per client × user × tool limit.
    pub tool_rate_limited: AtomicU64,
    /// Requests refused by the pre-authentication per-address limit.
    pub address_rate_limited: AtomicU64,
    /// Rate-limit checks skipped because the store did not answer.
    pub rate_limit_fail_open: AtomicU64,
    /// Idempotent calls sent on without the cache (the database decides).
    pub idempotency_cache_bypassed: AtomicU64,
    /// Results replayed from the cache.
    pub idempotency_replays: AtomicU64,
}

/// Adds one to `counter`.
pub fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    /// The counters in Prometheus text exposition format.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for (name, help, counter) in [
            (
                "chataigne_gateway_rate_limited_total{limit=\"tool\"}",
                "Calls refused by a rate limit.",
                &self.tool_rate_limited,
            ),
            (
                "chataigne_gateway_rate_limited_total{limit=\"address\"}",
                "",
                &self.address_rate_limited,
            ),
            (
                "chataigne_gateway_store_fail_open_total{store=\"rate_limit\"}",
                "Calls served while a store was unavailable.",
                &self.rate_limit_fail_open,
            ),
            (
                "chataigne_gateway_store_fail_open_total{store=\"idempotency\"}",
                "",
                &self.idempotency_cache_bypassed,
            ),
            (
                "chataigne_gateway_idempotency_replays_total",
                "Results replayed from the idempotency cache.",
                &self.idempotency_replays,
            ),
        ] {
            let family = name.split('{').next().unwrap_or(name);
            if !help.is_empty() {
                let _ = writeln!(out, "# HELP {family} {help}");
                let _ = writeln!(out, "# TYPE {family} counter");
            }
            let _ = writeln!(out, "{name} {}", counter.load(Ordering::Relaxed));
        }
        out
    }
}
