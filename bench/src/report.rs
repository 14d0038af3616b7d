//! The printed tables (Markdown, so they paste into the README as they are)
//! and the description of the machine they were measured on.

use crate::budget::Budget;
use crate::load::Stats;

/// One row of the comparison table.
pub struct Row {
    pub scenario: String,
    pub stats: Stats,
    /// Median over rounds of this row's throughput over the full stack's.
    pub ratio: Option<f64>,
    pub budget: Budget,
}

fn ms(value: f64) -> String {
    if value.is_nan() {
        "-".to_owned()
    } else if value < 10.0 {
        format!("{value:.2}")
    } else {
        format!("{value:.1}")
    }
}

fn rate(stats: &Stats) -> String {
    format!("{:.0}", stats.throughput())
}

fn failures(stats: &Stats) -> String {
    if stats.failures == 0 {
        String::new()
    } else {
        format!(" ({} failed)", stats.failures)
    }
}

/// The comparison table.
pub fn comparison(rows: &[Row]) -> String {
    let mut out = String::from(
        "| scenario | concurrency | requests | throughput (req/s) | p50 (ms) | p99 (ms) | vs full stack |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for row in rows {
        let ratio = match row.ratio {
            Some(ratio) if ratio.is_finite() => format!("{ratio:.2}×"),
            _ => "-".to_owned(),
        };
        out.push_str(&format!(
            "| {} | {} | {}{} | {} | {} | {} | {} |\n",
            row.scenario,
            row.stats.concurrency,
            row.stats.requests,
            failures(&row.stats),
            rate(&row.stats),
            ms(row.stats.p50_ms()),
            ms(row.stats.p99_ms()),
            ratio
        ));
    }
    out
}

/// The per-call budget of every comparison row.
pub fn budgets(rows: &[Row]) -> String {
    let mut out = String::from(
        "| scenario | concurrency | per call: CPU µs by process · round trips |\n|---|---:|---|\n",
    );
    for row in rows {
        out.push_str(&format!(
            "| {} | {} | {} |\n",
            row.scenario,
            row.stats.concurrency,
            row.budget.describe()
        ));
    }
    out
}

/// One performance target: what was measured, the bound, whether it holds.
pub struct Goal {
    pub what: &'static str,
    pub now: Option<f64>,
    pub unit: &'static str,
    pub target: &'static str,
    pub met: fn(f64) -> bool,
}

/// The targets table.
pub fn goals(goals: &[Goal]) -> String {
    let mut out = String::from("| target | now | bound | met |\n|---|---:|---:|:---:|\n");
    for goal in goals {
        let (now, met) = match goal.now {
            Some(value) if value.is_finite() => (
                format!("{value:.2}{}", goal.unit),
                if (goal.met)(value) { "yes" } else { "no" },
            ),
            _ => ("not measured".to_owned(), "-"),
        };
        out.push_str(&format!(
            "| {} | {now} | {} | {met} |\n",
            goal.what, goal.target
        ));
    }
    out
}

/// Latency and throughput as concurrency grows.
pub fn concurrency_curve(title: &str, points: &[Stats]) -> String {
    let mut out = format!(
        "{title}\n\n| concurrency | requests | throughput (req/s) | p50 (ms) | p99 (ms) |\n\
         |---:|---:|---:|---:|---:|\n"
    );
    for stats in points {
        out.push_str(&format!(
            "| {} | {}{} | {} | {} | {} |\n",
            stats.concurrency,
            stats.requests,
            failures(stats),
            rate(stats),
            ms(stats.p50_ms()),
            ms(stats.p99_ms())
        ));
    }
    out
}

/// One orders-table size: the same call alone and under load.
pub struct SizePoint {
    pub orders: u64,
    pub single: Stats,
    pub loaded: Stats,
}

pub fn size_curve(title: &str, points: &[SizePoint]) -> String {
    let concurrency = points.first().map_or(0, |p| p.loaded.concurrency);
    let mut out = format!(
        "{title}\n\n| orders rows | p50 at 1 (ms) | p99 at 1 (ms) | throughput at {concurrency} (req/s) | p50 at {concurrency} (ms) | p99 at {concurrency} (ms) |\n\
         |---:|---:|---:|---:|---:|---:|\n"
    );
    for point in points {
        out.push_str(&format!(
            "| {} | {} | {} | {}{} | {} | {} |\n",
            point.orders,
            ms(point.single.p50_ms()),
            ms(point.single.p99_ms()),
            rate(&point.loaded),
            failures(&point.loaded),
            ms(point.loaded.p50_ms()),
            ms(point.loaded.p99_ms())
        ));
    }
    out
}

/// CPU model and count, and the load average, from /proc when available.
pub fn machine() -> String {
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|info| {
            info.lines()
                .find(|line| line.starts_with("model name"))
                .and_then(|line| line.split_once(':'))
                .map(|(_, model)| model.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown CPU".to_owned());
    format!("{cores} cores ({model}), load average {}", load_average())
}

pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .map(|avg| avg.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| "unknown".to_owned())
}
