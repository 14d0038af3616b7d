//! Interleaved rounds: each round measures every target once in turn at the
//! same concurrency, so every ratio compares targets measured side by side;
//! rows report the median round and ratios the median of same-round ratios.

use crate::budget::{Budget, Probe};
use crate::load::{self, Plan, Stats};
use crate::targets::{DirectGrpc, McpHttp};

/// How a target is called.
pub enum TargetKind {
    Http(McpHttp),
    Grpc(DirectGrpc),
}

/// One row of the comparison.
pub struct Target {
    pub label: String,
    pub kind: TargetKind,
    /// Index of the target whose throughput this one's ratio divides by.
    pub reference: usize,
    /// The processes (and counters) whose cost is this target's budget.
    pub probe: Probe,
}

/// One measurement of one target.
#[derive(Clone)]
pub struct Measured {
    pub stats: Stats,
    pub budget: Budget,
}

impl Target {
    async fn load(&self, plan: Plan) -> Stats {
        match &self.kind {
            TargetKind::Http(target) => {
                let target = target.clone();
                load::run(plan, move |n| {
                    let target = target.clone();
                    async move { target.call(n).await }
                })
                .await
            }
            TargetKind::Grpc(target) => {
                let target = target.clone();
                load::run(plan, move |n| {
                    let target = target.clone();
                    async move { target.call(n).await }
                })
                .await
            }
        }
    }

    /// A warm-up, then the measured window with the budget read around it.
    pub async fn measure(&self, plan: Plan) -> Measured {
        if !plan.warmup.is_zero() {
            self.load(Plan {
                window: plan.warmup,
                warmup: std::time::Duration::ZERO,
                ..plan
            })
            .await;
        }
        let before = self.probe.sample().await;
        let stats = self
            .load(Plan {
                warmup: std::time::Duration::ZERO,
                ..plan
            })
            .await;
        let after = self.probe.sample().await;
        let budget = Budget::between(&before, &after, stats.requests);
        Measured { stats, budget }
    }
}

/// `rounds` rounds of every target in turn; `[target][round]`.
pub async fn run(
    targets: &[Target],
    plan: Plan,
    rounds: usize,
    progress: impl Fn(&str, &Stats),
) -> Vec<Vec<Measured>> {
    let mut results: Vec<Vec<Measured>> = targets.iter().map(|_| Vec::new()).collect();
    for round in 0..rounds.max(1) {
        eprintln!(" round {} of {}", round + 1, rounds.max(1));
        for (index, target) in targets.iter().enumerate() {
            let measured = target.measure(plan).await;
            progress(&target.label, &measured.stats);
            results[index].push(measured);
        }
    }
    results
}

/// The median of `values` (NaN when empty).
pub fn median(mut values: Vec<f64>) -> f64 {
    values.retain(|value| !value.is_nan());
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let middle = values.len() / 2;
    if values.len() % 2 == 1 {
        values[middle]
    } else {
        (values[middle - 1] + values[middle]) / 2.0
    }
}

/// The round of median throughput.
pub fn median_round(rounds: &[Measured]) -> Option<&Measured> {
    let mut order: Vec<&Measured> = rounds.iter().collect();
    order.sort_by(|a, b| a.stats.throughput().total_cmp(&b.stats.throughput()));
    order.get(order.len() / 2).copied()
}

/// The median over rounds of `f(this round of a, same round of b)`.
pub fn paired(a: &[Measured], b: &[Measured], f: impl Fn(&Stats, &Stats) -> f64) -> f64 {
    median(
        a.iter()
            .zip(b)
            .map(|(x, y)| f(&x.stats, &y.stats))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn medians_ignore_missing_values_and_average_the_middle_pair() {
        assert_eq!(median(vec![3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(vec![4.0, 1.0, f64::NAN, 2.0, 3.0]), 2.5);
        assert!(median(Vec::new()).is_nan());
    }
}
