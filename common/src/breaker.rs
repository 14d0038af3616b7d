//! One circuit breaker per dependency, driven by a background probe (a
//! backend's `grpc.health.v1` overall status, NOT_SERVING while its database
//! is down or it drains; a Redis `PING`). After [`OPEN_AFTER`] failed probes
//! in a row the breaker opens and calls needing the dependency fail at once
//! with its typed error instead of waiting on a connect, pool or response
//! timeout; the first probe that succeeds closes it again (probes run every
//! [`PROBE_EVERY`], so recovery follows the dependency within about that).
//! The gateway keeps one per backend and Redis, the tool-service one for the
//! auth-service.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_check_response::ServingStatus as Wire;
use tonic_health::pb::health_client::HealthClient;

use crate::balance::Balanced;

/// How often each dependency is probed.
pub const PROBE_EVERY: Duration = Duration::from_millis(200);
/// How long one probe may take before it counts as failed (a hung
/// dependency); generous enough for a loaded machine.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(1_000);
/// Failed probes in a row that open the breaker (one slow probe does not).
pub const OPEN_AFTER: u32 = 2;

/// The state of one dependency as its probe last saw it.
#[derive(Debug)]
pub struct Breaker {
    /// The dependency's name in logs and metrics (`auth_service`, `redis`…).
    label: &'static str,
    up: AtomicBool,
    failures: AtomicU32,
    /// Wakes the calls waiting on the dependency when the breaker opens.
    opened: tokio::sync::Notify,
}

impl Breaker {
    /// A closed breaker (the dependency is presumed up until probed).
    pub fn new(label: &'static str) -> Arc<Breaker> {
        Arc::new(Breaker {
            label,
            up: AtomicBool::new(true),
            failures: AtomicU32::new(0),
            opened: tokio::sync::Notify::new(),
        })
    }

    /// Resolves once the breaker is open: at once when it is, else at the
    /// moment it opens. A call already waiting on the dependency races its
    /// answer against this, so the calls sent before the failure was known
    /// end with the typed error then, not at their deadline.
    pub async fn opened(&self) {
        let opened = self.opened.notified();
        tokio::pin!(opened);
        // Registered before the state is read: an opening in between wakes it.
        opened.as_mut().enable();
        if self.is_open() {
            return;
        }
        opened.await;
    }

    /// Whether calls needing the dependency must fail at once.
    pub fn is_open(&self) -> bool {
        !self.up.load(Ordering::Acquire)
    }

    /// Records one probe; returns the new state when it changed.
    pub fn record(&self, ok: bool) -> Option<bool> {
        let failures = if ok {
            self.failures.store(0, Ordering::Release);
            0
        } else {
            self.failures
                .fetch_add(1, Ordering::AcqRel)
                .saturating_add(1)
        };
        let up = ok || (!self.is_open() && failures < OPEN_AFTER);
        let was = self.up.swap(up, Ordering::AcqRel);
        if was && !up {
            self.opened.notify_waiters();
        }
        (was != up).then_some(up)
    }

    pub fn label(&self) -> &'static str {
        self.label
    }
}

/// Whether a backend reports its overall status (empty service name)
/// SERVING within the probe timeout.
pub async fn serving(mut client: HealthClient<Balanced>) -> bool {
    let mut request = tonic::Request::new(HealthCheckRequest {
        service: String::new(),
    });
    request.set_timeout(PROBE_TIMEOUT);
    tokio::time::timeout(PROBE_TIMEOUT, client.check(request))
        .await
        .is_ok_and(|answer| {
            answer.is_ok_and(|answer| answer.into_inner().status == Wire::Serving as i32)
        })
}

/// Probes with `probe` every [`PROBE_EVERY`] until `stop` turns true,
/// updating `breaker` and logging each change. `on_state` (a gauge) is
/// handed whether the dependency is up now, then at each change.
pub fn spawn_probe<P, F, C>(
    breaker: Arc<Breaker>,
    mut probe: P,
    mut stop: tokio::sync::watch::Receiver<bool>,
    mut on_state: C,
) where
    P: FnMut() -> F + Send + 'static,
    F: Future<Output = bool> + Send + 'static,
    C: FnMut(bool) + Send + 'static,
{
    on_state(!breaker.is_open());
    let stopped = async move {
        let _ = stop.wait_for(|stop| *stop).await;
    };
    let probe = move || {
        let answered = probe();
        async move { Some(answered.await) }
    };
    tokio::spawn(crate::probe::every(
        PROBE_EVERY,
        PROBE_TIMEOUT,
        stopped,
        probe,
        move |ok| {
            if let Some(up) = breaker.record(ok) {
                let dependency = breaker.label();
                on_state(up);
                if up {
                    tracing::info!(dependency, "dependency answers again: breaker closed");
                } else {
                    tracing::warn!(
                        dependency,
                        "dependency down or hung: breaker open, calls fail at once"
                    );
                }
            }
            std::future::ready(std::ops::ControlFlow::Continue(()))
        },
    ));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_consecutive_failures_and_closes_at_the_first_success() {
        let breaker = Breaker::new("tool_service");
        assert!(!breaker.is_open());
        assert_eq!(breaker.record(false), None, "one failed probe is tolerated");
        assert!(!breaker.is_open());
        assert_eq!(breaker.record(true), None);
        assert_eq!(breaker.record(false), None, "the count restarted");
        assert_eq!(breaker.record(false), Some(false));
        assert!(breaker.is_open());
        assert_eq!(breaker.record(false), None, "stays open");
        assert_eq!(breaker.record(true), Some(true));
        assert!(!breaker.is_open());
    }

    #[tokio::test(start_paused = true)]
    async fn calls_waiting_on_a_dependency_are_released_the_moment_its_breaker_opens() {
        let breaker = Breaker::new("tool_service");
        let up = Arc::new(AtomicBool::new(true));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let probed = up.clone();
        spawn_probe(
            breaker.clone(),
            move || {
                let up = probed.load(Ordering::SeqCst);
                async move { up }
            },
            stopped,
            |_| {},
        );
        // Calls sent while the dependency still looked up, waiting on it.
        let waiting: Vec<_> = (0..3)
            .map(|_| {
                let breaker = breaker.clone();
                tokio::spawn(async move {
                    breaker.opened().await;
                    tokio::time::Instant::now()
                })
            })
            .collect();
        tokio::time::sleep(PROBE_EVERY * 3).await;
        up.store(false, Ordering::SeqCst);
        let mut opened_at = None;
        while opened_at.is_none() {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            if breaker.is_open() {
                opened_at = Some(tokio::time::Instant::now());
            }
        }
        let opened_at = opened_at.unwrap_or_else(tokio::time::Instant::now);
        for call in waiting {
            let released = call.await.unwrap();
            assert!(
                released <= opened_at && opened_at - released < std::time::Duration::from_millis(2),
                "released at the opening, not later"
            );
        }
        // Once open, a new wait ends at once.
        tokio::time::timeout(std::time::Duration::ZERO, breaker.opened())
            .await
            .expect("already open");
        stop.send_replace(true);
    }

    #[tokio::test(start_paused = true)]
    async fn the_probe_task_follows_the_dependency_until_stopped() {
        use std::sync::Mutex;
        let breaker = Breaker::new("redis");
        let up = Arc::new(AtomicBool::new(true));
        let changes = Arc::new(Mutex::new(Vec::new()));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let probed = up.clone();
        let seen = changes.clone();
        spawn_probe(
            breaker.clone(),
            move || {
                let up = probed.load(Ordering::SeqCst);
                async move { up }
            },
            stopped,
            move |up| seen.lock().unwrap().push(up),
        );
        tokio::time::sleep(PROBE_EVERY * 3).await;
        assert!(!breaker.is_open());
        up.store(false, Ordering::SeqCst);
        tokio::time::sleep(PROBE_EVERY * (OPEN_AFTER + 1)).await;
        assert!(breaker.is_open());
        up.store(true, Ordering::SeqCst);
        tokio::time::sleep(PROBE_EVERY * 2).await;
        assert!(!breaker.is_open());
        assert_eq!(
            *changes.lock().unwrap(),
            [true, false, true],
            "the state at start, then each change once"
        );
        stop.send_replace(true);
        tokio::time::sleep(PROBE_EVERY).await;
        up.store(false, Ordering::SeqCst);
        tokio::time::sleep(PROBE_EVERY * 5).await;
        assert!(!breaker.is_open(), "no probe after the stop");
    }
}
