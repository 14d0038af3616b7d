//! The closed-loop load generator: `concurrency` workers each send one request,
//! wait for its answer and send the next, until the request budget or the
//! measuring window runs out. A warm-up phase at the same concurrency runs
//! first and is not recorded. Latencies are kept per request (microseconds)
//! and reduced to percentiles by sorting.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long and how hard one measurement runs.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize)]
pub struct Plan {
    pub concurrency: usize,
    /// Upper bound of measured requests (the window may end first).
    pub max_requests: u64,
    pub warmup: Duration,
    pub window: Duration,
}

/// The outcome of one measurement.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Stats {
    pub concurrency: usize,
    /// Completed requests (successes and failures).
    pub requests: u64,
    pub failures: u64,
    pub elapsed: Duration,
    /// Latency of every successful request, sorted, in microseconds.
    latencies_us: Vec<u32>,
}

impl Stats {
    /// A measurement that could not run.
    pub fn none(concurrency: usize) -> Stats {
        Stats {
            concurrency,
            requests: 0,
            failures: 0,
            elapsed: Duration::ZERO,
            latencies_us: Vec::new(),
        }
    }

    /// Successful requests per second.
    pub fn throughput(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            (self.requests - self.failures) as f64 / secs
        } else {
            0.0
        }
    }

    /// The `q` quantile (0..=1) of successful latencies, in milliseconds.
    pub fn quantile_ms(&self, q: f64) -> f64 {
        if self.latencies_us.is_empty() {
            return f64::NAN;
        }
        let last = self.latencies_us.len() - 1;
        let rank = ((last as f64) * q.clamp(0.0, 1.0)).round() as usize;
        f64::from(self.latencies_us[rank.min(last)]) / 1000.0
    }

    pub fn p50_ms(&self) -> f64 {
        self.quantile_ms(0.50)
    }

    pub fn p99_ms(&self) -> f64 {
        self.quantile_ms(0.99)
    }
}

/// Runs `call` (given a request sequence number; `Ok(true)` for a success)
/// under `plan`: a warm-up, then the measured window.
pub async fn run<C, F>(plan: Plan, call: C) -> Stats
where
    C: Fn(u64) -> F + Send + Sync + 'static,
    F: Future<Output = bool> + Send + 'static,
{
    let call = Arc::new(call);
    let sequence = Arc::new(AtomicU64::new(0));
    if !plan.warmup.is_zero() {
        let warmup_budget = plan.max_requests.max(1);
        phase(&plan, plan.warmup, warmup_budget, &call, &sequence).await;
    }
    phase(&plan, plan.window, plan.max_requests, &call, &sequence).await
}

async fn phase<C, F>(
    plan: &Plan,
    window: Duration,
    budget: u64,
    call: &Arc<C>,
    sequence: &Arc<AtomicU64>,
) -> Stats
where
    C: Fn(u64) -> F + Send + Sync + 'static,
    F: Future<Output = bool> + Send + 'static,
{
    let issued = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let end = started + window;
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..plan.concurrency.max(1) {
        let call = call.clone();
        let issued = issued.clone();
        let sequence = sequence.clone();
        workers.spawn(async move {
            let mut latencies = Vec::with_capacity(4096);
            let mut failures = 0u64;
            loop {
                if Instant::now() >= end || issued.fetch_add(1, Ordering::Relaxed) >= budget {
                    break;
                }
                let n = sequence.fetch_add(1, Ordering::Relaxed);
                let sent = Instant::now();
                let ok = call(n).await;
                let took = sent.elapsed().as_micros();
                if ok {
                    latencies.push(u32::try_from(took).unwrap_or(u32::MAX));
                } else {
                    failures += 1;
                }
            }
            (latencies, failures)
        });
    }
    let mut latencies_us = Vec::new();
    let mut failures = 0;
    while let Some(joined) = workers.join_next().await {
        if let Ok((mut mine, failed)) = joined {
            latencies_us.append(&mut mine);
            failures += failed;
        }
    }
    let elapsed = started.elapsed();
    latencies_us.sort_unstable();
    Stats {
        concurrency: plan.concurrency,
        requests: latencies_us.len() as u64 + failures,
        failures,
        elapsed,
        latencies_us,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_budget_bounds_the_requests_and_percentiles_are_ordered() {
        let plan = Plan {
            concurrency: 4,
            max_requests: 200,
            warmup: Duration::ZERO,
            window: Duration::from_secs(10),
        };
        let stats = run(plan, |n| async move { n % 50 != 7 }).await;
        assert_eq!(stats.requests, 200);
        assert_eq!(stats.failures, 4);
        assert!(stats.p50_ms() <= stats.p99_ms());
        assert!(stats.throughput() > 0.0);
    }
}
