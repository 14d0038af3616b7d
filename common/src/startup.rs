//! Start-up retries: a service waits for a dependency that is not up yet
//! (PostgreSQL starting beside it, a migration holding the lock) with
//! bounded exponential backoff, logging every failed attempt, and gives up
//! with a clear error once `startup.max_wait_secs` is spent.

use std::fmt::Display;
use std::future::Future;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::time::Instant;

/// How long and how often a service retries its dependencies at start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct StartupConfig {
    /// Longest a service waits at start for a dependency (database
    /// connection and migrations) before it exits with an error; 0: one
    /// attempt, no retry.
    pub max_wait_secs: u64,
    /// Pause after the first failed attempt; each later pause doubles.
    pub initial_backoff_ms: u64,
    /// Longest pause between two attempts.
    pub max_backoff_ms: u64,
}

impl Default for StartupConfig {
    fn default() -> Self {
        StartupConfig {
            max_wait_secs: 60,
            initial_backoff_ms: 250,
            max_backoff_ms: 5_000,
        }
    }
}

impl StartupConfig {
    /// Checks the bounds; the error names the field under `section`.
    pub fn validate(&self, section: &str) -> Result<(), String> {
        if self.max_wait_secs > 3_600 {
            return Err(format!("{section}.max_wait_secs must be at most 3600"));
        }
        if self.initial_backoff_ms == 0 || self.initial_backoff_ms > self.max_backoff_ms {
            return Err(format!(
                "{section}.initial_backoff_ms must be between 1 and {section}.max_backoff_ms"
            ));
        }
        if self.max_backoff_ms > 60_000 {
            return Err(format!("{section}.max_backoff_ms must be at most 60000"));
        }
        Ok(())
    }

    fn max_wait(&self) -> Duration {
        Duration::from_secs(self.max_wait_secs)
    }
}

/// Why a dependency was given up on.
#[derive(Debug, thiserror::Error)]
#[error(
    "{dependency} not available after {attempts} attempt(s) over {waited_secs:.1} s (startup.max_wait_secs = {max_wait_secs}): {last_error}"
)]
pub struct GaveUp {
    pub dependency: String,
    pub attempts: u32,
    pub waited_secs: f64,
    pub max_wait_secs: u64,
    pub last_error: String,
}

/// Runs `attempt` until it succeeds, pausing `initial_backoff_ms`, then twice
/// as long each time (at most `max_backoff_ms`), and gives up when the next
/// pause would end past `max_wait_secs` after the first attempt. Each failure
/// is logged with `dependency` (a name and a redacted address, see
/// [`redacted_url`]) and the error's text: neither may hold a secret.
pub async fn retry<T, E, F, Fut>(
    dependency: &str,
    config: &StartupConfig,
    mut attempt: F,
) -> Result<T, GaveUp>
where
    E: Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let started = Instant::now();
    let mut pause = Duration::from_millis(config.initial_backoff_ms);
    let max_pause = Duration::from_millis(config.max_backoff_ms);
    let mut attempts = 0u32;
    loop {
        attempts += 1;
        let error = match attempt().await {
            Ok(value) => {
                if attempts > 1 {
                    tracing::info!(dependency, attempts, "dependency available");
                }
                return Ok(value);
            }
            Err(error) => format!("{error:#}"),
        };
        let waited = started.elapsed();
        if waited + pause > config.max_wait() {
            tracing::error!(dependency, attempts, error = %error, "giving up on the dependency");
            return Err(GaveUp {
                dependency: dependency.to_owned(),
                attempts,
                waited_secs: waited.as_secs_f64(),
                max_wait_secs: config.max_wait_secs,
                last_error: error,
            });
        }
        tracing::warn!(
            dependency,
            attempt = attempts,
            retry_in_ms = u64::try_from(pause.as_millis()).unwrap_or(u64::MAX),
            error = %error,
            "dependency not available yet; retrying"
        );
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(max_pause);
    }
}

/// `scheme://host[:port]/path` of a connection URL, without its user,
/// password and query (which may carry credentials): fit for logs and
/// messages. An unreadable URL is shown as its scheme only.
pub fn redacted_url(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or((url, ""));
    let scheme = scheme.split(':').next().unwrap_or_default();
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    let rest = rest.rsplit_once('@').map_or(rest, |(_, host)| host);
    if rest.is_empty() {
        format!("{scheme}:…")
    } else {
        format!("{scheme}://{rest}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    fn config(max_wait_secs: u64) -> StartupConfig {
        StartupConfig {
            max_wait_secs,
            initial_backoff_ms: 100,
            max_backoff_ms: 1_000,
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_dependency_that_comes_up_later_is_waited_for_with_growing_pauses() {
        let calls = AtomicU32::new(0);
        let started = Instant::now();
        let value = retry("db", &config(60), || async {
            let call = calls.fetch_add(1, Ordering::SeqCst);
            if call < 6 { Err("refused") } else { Ok(call) }
        })
        .await
        .unwrap();
        assert_eq!(value, 6);
        // 100 + 200 + 400 + 800 + 1000 + 1000 ms of pauses (capped doubling).
        assert_eq!(started.elapsed(), Duration::from_millis(3_500));
    }

    #[tokio::test(start_paused = true)]
    async fn it_gives_up_within_the_bound_naming_the_dependency_and_the_last_error() {
        let started = Instant::now();
        let error = retry("PostgreSQL at postgres://db:5432/x", &config(5), || async {
            Err::<(), _>("connection refused")
        })
        .await
        .unwrap_err();
        assert!(started.elapsed() <= Duration::from_secs(5));
        // Pauses 0.1, 0.2, 0.4, 0.8, 1, 1, 1 s end at 4.5 s; one more would
        // end past 5 s: eight attempts.
        assert_eq!(error.attempts, 8);
        let message = error.to_string();
        assert!(
            message.contains("PostgreSQL at postgres://db:5432/x"),
            "{message}"
        );
        assert!(message.contains("connection refused"), "{message}");
        assert!(message.contains("startup.max_wait_secs = 5"), "{message}");
    }

    #[tokio::test(start_paused = true)]
    async fn zero_means_a_single_attempt() {
        let calls = AtomicU32::new(0);
        let result = retry("redis", &config(0), || async {
            calls.fetch_add(1, Ordering::SeqCst);
            Err::<(), _>("down")
        })
        .await;
        assert!(result.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn redacted_urls_keep_the_host_and_lose_credentials() {
        assert_eq!(
            redacted_url("postgres://app:hunter2@db.internal:5432/tools?sslpassword=x"),
            "postgres://db.internal:5432/tools"
        );
        assert_eq!(
            redacted_url("rediss://:pw@cache:6380/0"),
            "rediss://cache:6380/0"
        );
        assert_eq!(redacted_url("sqlite:tools.db?mode=rwc"), "sqlite:…");
        assert_eq!(redacted_url("garbage"), "garbage:…");
    }

    #[test]
    fn bounds_are_validated() {
        assert!(StartupConfig::default().validate("startup").is_ok());
        let bad = StartupConfig {
            initial_backoff_ms: 0,
            ..StartupConfig::default()
        };
        assert!(
            bad.validate("startup")
                .is_err_and(|e| e.contains("startup.initial_backoff_ms"))
        );
    }
}
