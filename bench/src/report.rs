//! The printed tables (Markdown, so they paste into the README as they are)
//! and the description of the machine they were measured on.

use crate::load::Stats;

/// One row of the comparison table.
pub struct Row {
    pub scenario: String,
    pub stats: Stats,
    /// Throughput of the full stack this row compares with.
    pub reference: Option<f64>,
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
        let ratio = match row.reference {
            Some(reference) if reference > 0.0 => {
                format!("{:.2}×", row.stats.throughput() / reference)
            }
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
