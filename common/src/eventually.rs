//! The one way a test waits for something outside the tokio clock: a
//! condition polled every few milliseconds on the real clock until it holds,
//! and a failure that says what never happened once the bound has passed.
//! Re-exported by `testing`; the crate's own integration tests, which build
//! it without the `testing` feature, include this file by path.

use std::time::Duration;

/// How often [`eventually`] asks again.
pub const POLL_EVERY: Duration = Duration::from_millis(10);

/// Waits until `condition` holds, asking every [`POLL_EVERY`] on the real
/// clock; panics with `what` once `within` has passed without it. The one
/// way a test waits for something that happens outside the tokio clock (a
/// server in another process or behind a socket, a file, a database): never
/// a fixed sleep, which is too short on a loaded machine and too long
/// everywhere else. Code that runs on the tokio clock is tested with the
/// clock paused instead (`#[tokio::test(start_paused = true)]`).
pub async fn eventually<F, Fut>(what: &str, within: Duration, condition: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    eventually_every(what, within, POLL_EVERY, condition).await;
}

/// [`eventually`] asking every `every`: for a probe that costs something
/// (a tool call counts against the caller's rate limits).
pub async fn eventually_every<F, Fut>(
    what: &str,
    within: Duration,
    every: Duration,
    mut condition: F,
) where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let probe = || {
        let holds = condition();
        async move { holds.await.then_some(()) }
    };
    eventually_some_every(what, within, every, probe).await;
}

/// [`eventually`] for a probe that yields a value: the first `Some`.
pub async fn eventually_some<T, F, Fut>(what: &str, within: Duration, probe: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    eventually_some_every(what, within, POLL_EVERY, probe).await
}

/// [`eventually_some`] asking every `every`.
pub async fn eventually_some_every<T, F, Fut>(
    what: &str,
    within: Duration,
    every: Duration,
    mut probe: F,
) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = std::time::Instant::now() + within;
    loop {
        if let Some(value) = probe().await {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {within:?}"
        );
        tokio::time::sleep(every).await;
    }
}

/// [`eventually`] for code without a runtime: polls `condition` every
/// [`POLL_EVERY`], blocking the thread.
pub fn eventually_blocking(what: &str, within: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + within;
    while !condition() {
        assert!(
            std::time::Instant::now() < deadline,
            "{what}: not within {within:?}"
        );
        std::thread::sleep(POLL_EVERY);
    }
}
