//! The per-call budget of a measurement: counters read before and after it
//! and divided by the completed calls. CPU time of each process from
//! `/proc/<pid>/stat` (utime + stime; PostgreSQL and Redis found by process
//! name), Redis commands from `INFO commandstats`, PostgreSQL transactions
//! and rows from `pg_stat_database`, and gRPC calls received by the
//! auth-service and the tool-service from their own `/metrics`.

use std::collections::BTreeMap;

use sqlx::{Connection, PgConnection, Row as _};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Counters at one instant.
#[derive(Debug, Clone, Default)]
pub struct Sample {
    /// CPU ticks by process group (gateway, auth-service, tool-service, postgres, redis, …).
    pub cpu_ticks: BTreeMap<String, u64>,
    pub redis_calls: Option<u64>,
    /// Transactions (commits + rollbacks) and rows returned + fetched of the tool database.
    pub pg_xacts: Option<u64>,
    pub pg_rows: Option<u64>,
    /// RPCs served by the auth-service and the tool-service.
    pub grpc_calls: Option<u64>,
    /// ES256 signatures made and verified by the services (their metrics).
    pub signatures: Option<u64>,
    pub verifications: Option<u64>,
}

/// Where the counters are read.
pub struct Probe {
    /// Named processes (the services, a peer) whose CPU is counted.
    pub pids: Vec<(String, u32)>,
    pub redis: Option<String>,
    pub postgres_url: String,
    /// `/metrics` endpoints whose RPC counts are summed.
    pub metrics: Vec<String>,
    pub client: reqwest::Client,
}

/// Clock ticks per second of `/proc/<pid>/stat` (USER_HZ, 100 on Linux).
const TICKS_PER_SECOND: f64 = 100.0;

/// The fields of `/proc/<pid>/stat` after the command name (which is in
/// parentheses and may hold spaces): the line's field 3 is at index 0.
pub fn stat_fields(pid: u32) -> Option<Vec<String>> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.get(stat.rfind(')')? + 2..)?;
    Some(rest.split_whitespace().map(str::to_owned).collect())
}

/// utime + stime of `pid`, in ticks.
fn process_ticks(pid: u32) -> Option<u64> {
    let fields = stat_fields(pid)?;
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    let utime: u64 = fields.get(11)?.parse().ok()?;
    let stime: u64 = fields.get(12)?.parse().ok()?;
    Some(utime + stime)
}

/// CPU ticks of every process whose command name is `name`.
fn ticks_by_name(name: &str) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|comm| comm.trim_end() == name)
        })
        .filter_map(process_ticks)
        .sum()
}

/// `cmdstat_*:calls=N` summed over an `INFO commandstats` answer.
pub fn redis_calls_in(info: &str) -> u64 {
    info.lines()
        .filter(|line| line.starts_with("cmdstat_"))
        .filter_map(|line| {
            let calls = line.split_once("calls=")?.1;
            calls.split(',').next()?.parse::<u64>().ok()
        })
        .sum()
}

async fn redis_calls(url: &str) -> Option<u64> {
    let address = url
        .trim_start_matches("redis://")
        .split('/')
        .next()?
        .rsplit('@')
        .next()?
        .to_owned();
    let mut stream = tokio::net::TcpStream::connect(address).await.ok()?;
    stream
        .write_all(b"*2\r\n$4\r\nINFO\r\n$12\r\ncommandstats\r\n")
        .await
        .ok()?;
    let mut answer = Vec::new();
    let mut buffer = [0u8; 16 * 1024];
    // A bulk string: `$<len>\r\n<body>\r\n`.
    loop {
        let read = stream.read(&mut buffer).await.ok()?;
        if read == 0 {
            break;
        }
        answer.extend_from_slice(&buffer[..read]);
        let text = String::from_utf8_lossy(&answer);
        if let Some((header, body)) = text.split_once("\r\n") {
            let length: usize = header.trim_start_matches('$').parse().ok()?;
            if body.len() >= length {
                break;
            }
        }
    }
    Some(redis_calls_in(&String::from_utf8_lossy(&answer)))
}

async fn pg_counters(url: &str) -> Option<(u64, u64)> {
    let mut db = PgConnection::connect(url).await.ok()?;
    let row = sqlx::query(
        "SELECT (xact_commit + xact_rollback)::bigint, (tup_returned + tup_fetched)::bigint \
         FROM pg_stat_database WHERE datname = current_database()",
    )
    .fetch_one(&mut db)
    .await
    .ok()?;
    let xacts: i64 = row.try_get(0).ok()?;
    let rows: i64 = row.try_get(1).ok()?;
    let _ = db.close().await;
    Some((u64::try_from(xacts).ok()?, u64::try_from(rows).ok()?))
}

/// The value of every sample of the counter `name` (any labels) in a
/// Prometheus text page, summed.
fn counter_in(page: &str, name: &str) -> u64 {
    page.lines()
        .filter(|line| {
            line.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|value| value as u64)
        .sum()
}

/// ES256 `(signatures, verifications)` in a service's metrics page.
pub fn jws_operations_in(page: &str) -> (u64, u64) {
    let both = |suffix: &str| {
        ["chataigne_auth", "chataigne_tools"]
            .iter()
            .map(|prefix| counter_in(page, &format!("{prefix}_jws_{suffix}_total")))
            .sum()
    };
    (both("signatures"), both("verifications"))
}

/// The `_count` samples of the RPC histograms in a Prometheus text page.
pub fn grpc_calls_in(page: &str) -> u64 {
    page.lines()
        .filter(|line| {
            line.starts_with("chataigne_auth_rpc_duration_seconds_count")
                || line.starts_with("chataigne_tools_tool_call_duration_seconds_count")
        })
        .filter_map(|line| line.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|value| value as u64)
        .sum()
}

impl Probe {
    pub async fn sample(&self) -> Sample {
        let mut cpu_ticks = BTreeMap::new();
        for (name, pid) in &self.pids {
            *cpu_ticks.entry(name.clone()).or_default() += process_ticks(*pid).unwrap_or(0);
        }
        cpu_ticks.insert("postgres".to_owned(), ticks_by_name("postgres"));
        if self.redis.is_some() {
            cpu_ticks.insert("redis".to_owned(), ticks_by_name("redis-server"));
        }
        let redis_calls = match &self.redis {
            Some(url) => redis_calls(url).await,
            None => None,
        };
        let (pg_xacts, pg_rows) = match pg_counters(&self.postgres_url).await {
            Some((xacts, rows)) => (Some(xacts), Some(rows)),
            None => (None, None),
        };
        let mut grpc_calls = None;
        let (mut signatures, mut verifications) = (None, None);
        for url in &self.metrics {
            if let Ok(response) = self.client.get(url).send().await
                && let Ok(page) = response.text().await
            {
                *grpc_calls.get_or_insert(0) += grpc_calls_in(&page);
                let (signed, verified) = jws_operations_in(&page);
                *signatures.get_or_insert(0) += signed;
                *verifications.get_or_insert(0) += verified;
            }
        }
        Sample {
            cpu_ticks,
            redis_calls,
            pg_xacts,
            pg_rows,
            grpc_calls,
            signatures,
            verifications,
        }
    }
}

/// What one call cost, from two samples around `calls` completed calls.
#[derive(Debug, Clone, Default)]
pub struct Budget {
    /// CPU µs per call by process group, and their total.
    pub cpu_us: BTreeMap<String, f64>,
    pub redis: Option<f64>,
    pub pg_xacts: Option<f64>,
    pub pg_rows: Option<f64>,
    pub grpc: Option<f64>,
    pub signatures: Option<f64>,
    pub verifications: Option<f64>,
}

impl Budget {
    pub fn between(before: &Sample, after: &Sample, calls: u64) -> Budget {
        let calls = calls.max(1) as f64;
        let per = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?) as f64 / calls);
        let cpu_us = after
            .cpu_ticks
            .iter()
            .map(|(name, ticks)| {
                let spent = ticks.saturating_sub(before.cpu_ticks.get(name).copied().unwrap_or(0));
                (name.clone(), spent as f64 / TICKS_PER_SECOND * 1e6 / calls)
            })
            .collect();
        Budget {
            cpu_us,
            redis: per(before.redis_calls, after.redis_calls),
            pg_xacts: per(before.pg_xacts, after.pg_xacts),
            pg_rows: per(before.pg_rows, after.pg_rows),
            grpc: per(before.grpc_calls, after.grpc_calls),
            signatures: per(before.signatures, after.signatures),
            verifications: per(before.verifications, after.verifications),
        }
    }

    /// CPU µs per call summed over every process counted.
    pub fn total_cpu_us(&self) -> f64 {
        self.cpu_us.values().sum()
    }

    /// One line: `gateway 210 µs · auth-service 40 µs · … · Redis 2.0 · SQL xacts 1.0 …`.
    pub fn describe(&self) -> String {
        let mut parts: Vec<String> = self
            .cpu_us
            .iter()
            .map(|(name, us)| format!("{name} {us:.0}"))
            .collect();
        parts.push(format!("total {:.0} µs CPU", self.total_cpu_us()));
        let count = |label: &str, value: Option<f64>| match value {
            Some(value) => format!("{label} {value:.2}"),
            None => format!("{label} n/a"),
        };
        parts.push(count("gRPC", self.grpc));
        parts.push(count("Redis cmds", self.redis));
        parts.push(count("SQL xacts", self.pg_xacts));
        parts.push(count("rows read", self.pg_rows));
        parts.push(count("ES256 signed", self.signatures));
        parts.push(count("verified", self.verifications));
        parts.join(" · ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redis_and_prometheus_counters_are_summed() {
        let info =
            "# Commandstats\r\ncmdstat_evalsha:calls=12,usec=30\r\ncmdstat_get:calls=3,usec=1\r\n";
        assert_eq!(redis_calls_in(info), 15);
        let page = "# HELP x\nchataigne_auth_rpc_duration_seconds_count{method=\"Authenticate\"} 7\n\
                    chataigne_tools_tool_call_duration_seconds_count{tool=\"a\"} 5\n\
                    chataigne_tools_tool_call_duration_seconds_sum{tool=\"a\"} 0.5\n";
        assert_eq!(grpc_calls_in(page), 12);
        let metrics = "chataigne_auth_jws_signatures_total 40\nchataigne_auth_jws_verifications_total 3\n\
                       chataigne_tools_jws_verifications_total{x=\"y\"} 38\n\
                       chataigne_tools_jws_verifications_totalish 1000\n";
        assert_eq!(jws_operations_in(metrics), (40, 41));
    }

    #[test]
    fn a_budget_divides_the_deltas_by_the_calls() {
        let mut before = Sample::default();
        before.cpu_ticks.insert("gateway".to_owned(), 100);
        before.redis_calls = Some(10);
        let mut after = before.clone();
        after.cpu_ticks.insert("gateway".to_owned(), 150);
        after.redis_calls = Some(30);
        let budget = Budget::between(&before, &after, 1000);
        // 50 ticks = 0.5 s over 1000 calls.
        assert!((budget.cpu_us["gateway"] - 500.0).abs() < 1e-6);
        assert_eq!(budget.redis, Some(0.02));
        assert_eq!(budget.grpc, None);
    }

    #[test]
    fn this_process_has_cpu_ticks() {
        assert!(process_ticks(std::process::id()).is_some());
    }
}
