//! The one background probe loop: a dependency probed at a fixed period,
//! each probe bounded in time (a hung dependency counts as down), each
//! verdict handed to whoever follows it (the gateway's breakers, the
//! backends' health status), until told to stop.

use std::future::Future;
use std::ops::ControlFlow;
use std::time::Duration;

/// Runs `probe` every `period` (missed ticks are delayed, never bunched),
/// each run bounded by `timeout` (a late answer is `Some(false)`), and hands
/// each verdict to `on_verdict`; `None` from the probe is no verdict. Ends
/// when `stop` resolves (even during a probe) or `on_verdict` breaks.
pub async fn every<P, F, V, VF>(
    period: Duration,
    timeout: Duration,
    stop: impl Future<Output = ()>,
    mut probe: P,
    mut on_verdict: V,
) where
    P: FnMut() -> F,
    F: Future<Output = Option<bool>>,
    V: FnMut(bool) -> VF,
    VF: Future<Output = ControlFlow<()>>,
{
    tokio::pin!(stop);
    let mut ticks = tokio::time::interval(period);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            () = &mut stop => return,
        }
        let verdict = tokio::select! {
            answered = tokio::time::timeout(timeout, probe()) => answered.unwrap_or(Some(false)),
            () = &mut stop => return,
        };
        let Some(up) = verdict else {
            continue;
        };
        if on_verdict(up).await.is_break() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test(start_paused = true)]
    async fn verdicts_follow_the_probe_and_a_hung_probe_is_down() {
        let calls = Arc::new(AtomicU32::new(0));
        let counted = calls.clone();
        let mut seen = Vec::new();
        let probe = move || {
            let n = counted.fetch_add(1, Ordering::Relaxed);
            async move {
                match n {
                    0 => Some(true),
                    1 => None,
                    2 => std::future::pending().await,
                    _ => Some(true),
                }
            }
        };
        every(
            Duration::from_millis(200),
            Duration::from_secs(1),
            std::future::pending(),
            probe,
            |up| {
                seen.push(up);
                let done = seen.len() == 3;
                async move {
                    if done {
                        ControlFlow::Break(())
                    } else {
                        ControlFlow::Continue(())
                    }
                }
            },
        )
        .await;
        assert_eq!(
            seen,
            [true, false, true],
            "no verdict is skipped, a hang is down"
        );
        assert_eq!(calls.load(Ordering::Relaxed), 4);
    }

    #[tokio::test(start_paused = true)]
    async fn stopping_ends_the_loop_even_during_a_probe() {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let looping = tokio::spawn(every(
            Duration::from_millis(200),
            Duration::from_secs(60),
            async move {
                let _ = stopped.await;
            },
            std::future::pending::<Option<bool>>,
            |_| async { ControlFlow::Continue(()) },
        ));
        tokio::time::sleep(Duration::from_secs(1)).await;
        drop(stop);
        looping.await.unwrap();
    }
}
