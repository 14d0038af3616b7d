//! Interleaved rounds: each round measures every target once in turn at the
//! same concurrency, so every ratio compares targets measured side by side;
//! rows report the median round and ratios the median of same-round ratios.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::budget::{Budget, Probe};
use crate::drive::{self, Drive, Driven};
use crate::load::{Plan, Stats};

/// Measurements started by this run (each write measurement's keys are its own).
static MEASUREMENTS: AtomicU64 = AtomicU64::new(0);

/// One row of the comparison.
pub struct Target {
    pub label: String,
    /// What the load driver calls.
    pub driven: Driven,
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
    /// A load driver of its own runs the warm-up, then the measured window
    /// with the budget read around it.
    pub async fn measure(&self, plan: Plan) -> Measured {
        let measurement = MEASUREMENTS.fetch_add(1, Ordering::Relaxed);
        let drive = Drive {
            target: self.driven.for_measurement(measurement),
            plan,
        };
        let mut before = None;
        let stats = drive::measure(&drive, async {
            before = Some(self.probe.sample().await);
        })
        .await;
        let after = self.probe.sample().await;
        let stats = stats.unwrap_or_else(|error| {
            eprintln!("  {}: the measurement failed: {error:#}", self.label);
            Stats::none(plan.concurrency)
        });
        let budget = match &before {
            Some(before) => Budget::between(before, &after, stats.requests),
            None => Budget::default(),
        };
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
