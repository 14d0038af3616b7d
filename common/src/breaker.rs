//! One circuit breaker per dependency, driven by a background probe (a
//! backend's `grpc.health.v1` overall status, NOT_SERVING while its database
//! is down or it drains; a Redis `PING`). After [`OPEN_AFTER`] failed probes
//! in a row the breaker opens and calls needing the dependency fail at once
//! with its typed error instead of waiting on a connect, pool or response
//! timeout; the first probe that succeeds closes it again (probes run every
//! [`PROBE_EVERY`], so recovery follows the dependency within about that).
//! A hung dependency (accepting, never answering) is known within
//! [`DETECTS_HANG_WITHIN`] (under a second), while one slow probe alone
//! never opens the breaker.
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
pub const PROBE_EVERY: Duration = Duration::from_millis(150);
/// How long one probe may take before it counts as failed (a hung
/// dependency): a health answer takes a few milliseconds, so this is still
/// generous on a loaded machine.
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(400);
/// Failed probes in a row that open the breaker (one slow probe does not).
pub const OPEN_AFTER: u32 = 2;
/// The longest a dependency can be hung before its breaker opens: the wait
/// for the next probe, then [`OPEN_AFTER`] probes timing out back to back
/// (a late tick is not waited for). 950 ms.
pub const DETECTS_HANG_WITHIN: Duration = Duration::from_millis(150 + 400 * OPEN_AFTER as u64);

/// The state of one dependency as its probe last saw it.
#[derive(Debug)]
pub struct Breaker {
    /// The dependency's name in logs and metrics (`auth_service`, `redis`…).
    label: &'static str,
    up: AtomicBool,
    failures: AtomicU32,
    /// Whether the latest probe got no answer at all (unreachable or hung),
    /// as opposed to an answer saying the dependency cannot serve.
    silent: AtomicBool,
    /// Wakes the calls waiting on the dependency while it is known hung.
    hung: tokio::sync::Notify,
}

impl Breaker {
    /// A closed breaker (the dependency is presumed up until probed).
    pub fn new(label: &'static str) -> Arc<Breaker> {
        Arc::new(Breaker {
            label,
            up: AtomicBool::new(true),
            failures: AtomicU32::new(0),
            silent: AtomicBool::new(false),
            hung: tokio::sync::Notify::new(),
        })
    }

    /// Whether the breaker is open because the dependency stopped answering
    /// (unreachable or hung), not because it answered that it cannot serve.
    pub fn is_hung(&self) -> bool {
        self.is_open() && self.silent.load(Ordering::Acquire)
    }

    /// Resolves once the breaker is open with the dependency unreachable or
    /// hung: at once when it is, else at the probe that finds it so. A call
    /// already waiting on the dependency races its answer against this, so
    /// the calls sent before the hang was known end with the typed error
    /// then, not at their deadline. A dependency that answers (NOT_SERVING
    /// while it drains, or while its database is down) answers its calls in
    /// flight itself: they are not released.
    pub async fn hung(&self) {
        let hung = self.hung.notified();
        tokio::pin!(hung);
        // Registered before the state is read: a probe in between wakes it.
        hung.as_mut().enable();
        if self.is_hung() {
            return;
        }
        hung.await;
    }

    /// Records whether the probe about to be recorded got no answer at all.
    pub fn note_silence(&self, silent: bool) {
        self.silent.store(silent, Ordering::Release);
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
        if self.is_hung() {
            self.hung.notify_waiters();
        }
        (was != up).then_some(up)
    }

    pub fn label(&self) -> &'static str {
        self.label
    }
}

/// Whether a backend reports its overall status (empty service name)
/// SERVING within the probe timeout.
pub async fn serving(client: HealthClient<Balanced>) -> bool {
    health(client).await == Some(true)
}

/// [`serving`] as the probe of `breaker`, telling it whether the backend
/// answered at all ([`Breaker::hung`]). Silence is presumed until an answer
/// arrives, so a probe cut short by its timeout counts as no answer.
pub async fn serving_for(breaker: Arc<Breaker>, client: HealthClient<Balanced>) -> bool {
    breaker.note_silence(true);
    let health = health(client).await;
    breaker.note_silence(health.is_none());
    health == Some(true)
}

/// A backend's overall status within the probe timeout: `Some(serving)`
/// when it answered, `None` when it did not (unreachable or hung).
pub async fn health(mut client: HealthClient<Balanced>) -> Option<bool> {
    let mut request = tonic::Request::new(HealthCheckRequest {
        service: String::new(),
    });
    request.set_timeout(PROBE_TIMEOUT);
    match tokio::time::timeout(PROBE_TIMEOUT, client.check(request)).await {
        Ok(Ok(answer)) => Some(answer.into_inner().status == Wire::Serving as i32),
        // A status from the server is an answer; a transport failure is not.
        Ok(Err(status)) => match status.code() {
            tonic::Code::Unavailable
            | tonic::Code::DeadlineExceeded
            | tonic::Code::Cancelled
            | tonic::Code::Unknown => None,
            _ => Some(false),
        },
        Err(_) => None,
    }
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
    async fn calls_waiting_on_a_hung_dependency_are_released_the_moment_its_breaker_opens() {
        let breaker = Breaker::new("tool_service");
        let up = Arc::new(AtomicBool::new(true));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let probed = up.clone();
        let noted = breaker.clone();
        spawn_probe(
            breaker.clone(),
            move || {
                // Hung: no answer at all when down.
                let up = probed.load(Ordering::SeqCst);
                noted.note_silence(!up);
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
                    breaker.hung().await;
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
        tokio::time::timeout(std::time::Duration::ZERO, breaker.hung())
            .await
            .expect("already open");
        stop.send_replace(true);
    }

    /// A probe task on a fresh breaker whose dependency answers in `answer`
    /// (`None`: hung, no answer at all) as `state` says.
    fn probed(
        state: Arc<std::sync::Mutex<Option<Duration>>>,
    ) -> (Arc<Breaker>, tokio::sync::watch::Sender<bool>) {
        let breaker = Breaker::new("tool_service");
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let noted = breaker.clone();
        spawn_probe(
            breaker.clone(),
            move || {
                let answer = *state.lock().unwrap();
                let noted = noted.clone();
                async move {
                    noted.note_silence(true);
                    match answer {
                        Some(after) => {
                            tokio::time::sleep(after).await;
                            noted.note_silence(false);
                            true
                        }
                        None => std::future::pending().await,
                    }
                }
            },
            stopped,
            |_| {},
        );
        (breaker, stop)
    }

    #[tokio::test(start_paused = true)]
    async fn a_hang_is_known_within_a_second_whenever_it_starts() {
        assert!(DETECTS_HANG_WITHIN <= Duration::from_secs(1));
        // Whatever the phase of the hang against the probe period.
        for offset_ms in (0..=PROBE_EVERY.as_millis() as u64 + 20).step_by(10) {
            let state = Arc::new(std::sync::Mutex::new(Some(Duration::from_millis(3))));
            let (breaker, stop) = probed(state.clone());
            tokio::time::sleep(Duration::from_secs(1) + Duration::from_millis(offset_ms)).await;
            assert!(!breaker.is_open());
            *state.lock().unwrap() = None;
            let hung_at = tokio::time::Instant::now();
            tokio::time::timeout(Duration::from_secs(5), breaker.hung())
                .await
                .expect("the hang is found");
            let took = hung_at.elapsed();
            assert!(
                took <= DETECTS_HANG_WITHIN,
                "hang at +{offset_ms} ms known after {took:?}"
            );
            stop.send_replace(true);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn one_slow_probe_under_load_does_not_open_the_breaker() {
        let state = Arc::new(std::sync::Mutex::new(Some(Duration::from_millis(3))));
        let (breaker, stop) = probed(state.clone());
        tokio::time::sleep(Duration::from_secs(1)).await;
        // One answer later than the probe timeout, then answers again.
        *state.lock().unwrap() = Some(PROBE_TIMEOUT + Duration::from_millis(100));
        tokio::time::sleep(PROBE_EVERY).await;
        *state.lock().unwrap() = Some(Duration::from_millis(3));
        for _ in 0..40 {
            tokio::time::sleep(Duration::from_millis(25)).await;
            assert!(!breaker.is_open(), "one slow probe is tolerated");
        }
        // Answers slower than the timeout every time: that is a hang.
        *state.lock().unwrap() = Some(PROBE_TIMEOUT * 2);
        tokio::time::timeout(Duration::from_secs(2), breaker.hung())
            .await
            .expect("opened");
        stop.send_replace(true);
    }

    #[tokio::test(start_paused = true)]
    async fn a_dependency_answering_that_it_cannot_serve_keeps_its_calls_in_flight() {
        // Draining, or its database down: it answers NOT_SERVING, and it
        // answers its calls in flight itself.
        let breaker = Breaker::new("tool_service");
        breaker.note_silence(false);
        let waiting = tokio::spawn({
            let breaker = breaker.clone();
            async move { breaker.hung().await }
        });
        for _ in 0..OPEN_AFTER {
            breaker.record(false);
        }
        assert!(breaker.is_open());
        assert!(!breaker.is_hung());
        tokio::time::sleep(PROBE_EVERY * 5).await;
        assert!(!waiting.is_finished(), "calls in flight are left to finish");
        // It then stops answering: the calls still waiting end.
        breaker.note_silence(true);
        breaker.record(false);
        tokio::time::timeout(PROBE_EVERY, waiting)
            .await
            .expect("released")
            .unwrap();
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
