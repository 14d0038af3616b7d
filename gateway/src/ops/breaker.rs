//! The gateway's breakers (auth-service, tool-service, Redis): the shared
//! breaker of `chataigne_common::breaker`, each probe also driving the
//! `chataigne_gateway_dependency_up` gauge of its dependency.

use std::future::Future;
use std::sync::Arc;

pub use chataigne_common::breaker::{Breaker, serving};

use crate::ops::counters::Metrics;

/// Probes with `probe` until `stop` turns true (see
/// [`chataigne_common::breaker::spawn_probe`]), the gauge of the breaker's
/// dependency following it.
pub fn spawn_probe<P, F>(
    breaker: Arc<Breaker>,
    metrics: Arc<Metrics>,
    probe: P,
    stop: tokio::sync::watch::Receiver<bool>,
) where
    P: FnMut() -> F + Send + 'static,
    F: Future<Output = bool> + Send + 'static,
{
    let gauge = breaker.clone();
    chataigne_common::breaker::spawn_probe(breaker, probe, stop, move |_| {
        metrics.dependency_state(&gauge);
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::counters::Dependency;
    use chataigne_common::breaker::{OPEN_AFTER, PROBE_EVERY};
    use std::sync::atomic::{AtomicBool, Ordering};

    #[tokio::test(start_paused = true)]
    async fn the_dependency_gauge_follows_the_breaker() {
        let breaker = Breaker::new(Dependency::Redis.label());
        let metrics = Arc::new(Metrics::new().unwrap());
        let up = Arc::new(AtomicBool::new(true));
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let probed = up.clone();
        spawn_probe(
            breaker.clone(),
            metrics.clone(),
            move || {
                let up = probed.load(Ordering::SeqCst);
                async move { up }
            },
            stopped,
        );
        let gauge =
            |value: u8| format!("chataigne_gateway_dependency_up{{dependency=\"redis\"}} {value}");
        assert!(metrics.render().contains(&gauge(1)), "set at start");
        up.store(false, Ordering::SeqCst);
        tokio::time::sleep(PROBE_EVERY * (OPEN_AFTER + 1)).await;
        assert!(breaker.is_open());
        assert!(metrics.render().contains(&gauge(0)), "{}", metrics.render());
        up.store(true, Ordering::SeqCst);
        tokio::time::sleep(PROBE_EVERY * 2).await;
        assert!(!breaker.is_open());
        assert!(metrics.render().contains(&gauge(1)), "{}", metrics.render());
        stop.send_replace(true);
    }
}
