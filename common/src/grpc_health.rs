//! The standard gRPC health service (`grpc.health.v1.Health`) for the backend
//! servers. The overall status (empty service name) is SERVING while the
//! server's database answers a probe and turns NOT_SERVING when it stops
//! answering (probed every [`PROBE_EVERY`], each probe bounded by
//! [`PROBE_TIMEOUT`]) or as soon as shutdown starts, so readiness probes and
//! callers stop routing to a replica that cannot serve. The `liveness`
//! service name stays SERVING as long as the process runs: a liveness probe
//! must never restart a pod because a shared database is down.

use std::future::Future;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::{Mutex, watch};
use tonic_health::ServingStatus;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::server::HealthReporter;

/// The overall server status reported under the empty service name: ready
/// to serve (database reachable, not draining).
pub const OVERALL: &str = "";
/// The process is up (liveness and startup probes); independent of any
/// dependency.
pub const LIVENESS: &str = "liveness";
/// How often the dependency probe runs.
pub const PROBE_EVERY: Duration = Duration::from_millis(250);
/// How long one probe may take before the dependency counts as down (hung).
pub const PROBE_TIMEOUT: Duration = Duration::from_millis(1_000);

/// How long a pool ping may take inside one probe (the rest of
/// [`PROBE_TIMEOUT`] is left to read the pool's state).
pub const PING_BOUND: Duration = Duration::from_millis(750);

/// The verdict of a database probe over a connection pool: `Some(true)`
/// when `ping` answers within [`PING_BOUND`]; when it does not, `None` (no
/// verdict, the status stays as it is) if every connection of the pool is
/// in use — a pool saturated by load is busy, not down, and must not eject
/// the replica — else `Some(false)`.
pub async fn probe_pool<T, E>(
    ping: impl Future<Output = Result<T, E>>,
    stats: impl Fn() -> crate::metrics::PoolStats,
) -> Option<bool> {
    if matches!(tokio::time::timeout(PING_BOUND, ping).await, Ok(Ok(_))) {
        return Some(true);
    }
    let stats = stats();
    let saturated = stats.max > 0 && stats.size >= stats.max && stats.idle == 0;
    (!saturated).then_some(false)
}

/// The health service to add to a tonic server, SERVING, and `shutdown`
/// wrapped so that the status turns NOT_SERVING when it resolves (before the
/// server starts draining in-flight calls). No dependency is probed.
pub async fn serving_until(
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (
    HealthServer<impl Health>,
    impl Future<Output = ()> + Send + 'static,
) {
    serving_while(shutdown, || async { Some(true) }).await
}

/// Like [`serving_until`], with the overall status following `probe`
/// (`Some(true)`: the dependency answers; `None`: no verdict, e.g.
/// [`probe_pool`] on a saturated pool) from a background task until
/// shutdown: SERVING while it answers in time, NOT_SERVING when it fails or
/// takes longer than [`PROBE_TIMEOUT`], SERVING again at the first probe
/// that sees it back (within about [`PROBE_EVERY`]).
pub async fn serving_while<P, F>(
    shutdown: impl Future<Output = ()> + Send + 'static,
    probe: P,
) -> (
    HealthServer<impl Health>,
    impl Future<Output = ()> + Send + 'static,
)
where
    P: FnMut() -> F + Send + 'static,
    F: Future<Output = Option<bool>> + Send + 'static,
{
    let (reporter, service) = tonic_health::server::health_reporter();
    reporter
        .set_service_status(OVERALL, ServingStatus::Serving)
        .await;
    reporter
        .set_service_status(LIVENESS, ServingStatus::Serving)
        .await;
    let draining = Arc::new(Mutex::new(false));
    let (stop, stopped) = watch::channel(());
    tokio::spawn(follow(reporter.clone(), draining.clone(), probe, stopped));
    let marked = async move {
        shutdown.await;
        let mut draining = draining.lock().await;
        *draining = true;
        drop(stop);
        reporter
            .set_service_status(OVERALL, ServingStatus::NotServing)
            .await;
    };
    (service, marked)
}

/// Probes until `stopped`'s sender is dropped (shutdown started, or the
/// server went away), reporting each change of state.
async fn follow<P, F>(
    reporter: HealthReporter,
    draining: Arc<Mutex<bool>>,
    probe: P,
    mut stopped: watch::Receiver<()>,
) where
    P: FnMut() -> F + Send,
    F: Future<Output = Option<bool>> + Send + 'static,
{
    let serving = Arc::new(AtomicBool::new(true));
    let stop = async move {
        let _ = stopped.changed().await;
    };
    crate::probe::every(PROBE_EVERY, PROBE_TIMEOUT, stop, probe, |up| {
        let (reporter, draining, serving) = (reporter.clone(), draining.clone(), serving.clone());
        async move {
            if up == serving.load(Ordering::Relaxed) {
                return ControlFlow::Continue(());
            }
            // Checked under the lock shutdown takes: never SERVING once draining.
            let draining = draining.lock().await;
            if *draining {
                return ControlFlow::Break(());
            }
            serving.store(up, Ordering::Relaxed);
            if up {
                tracing::info!("database answers again: health SERVING");
                reporter
                    .set_service_status(OVERALL, ServingStatus::Serving)
                    .await;
            } else {
                tracing::warn!("database does not answer: health NOT_SERVING");
                reporter
                    .set_service_status(OVERALL, ServingStatus::NotServing)
                    .await;
            }
            ControlFlow::Continue(())
        }
    })
    .await;
}

#[cfg(test)]
mod tests {
    use tokio::sync::oneshot;
    use tonic::transport::server::TcpIncoming;
    use tonic_health::pb::HealthCheckRequest;
    use tonic_health::pb::health_check_response::ServingStatus as Wire;
    use tonic_health::pb::health_client::HealthClient;

    use super::*;

    async fn check(client: &mut HealthClient<tonic::transport::Channel>) -> i32 {
        client
            .check(HealthCheckRequest {
                service: OVERALL.to_owned(),
            })
            .await
            .expect("Health/Check answers")
            .into_inner()
            .status
    }

    /// SERVING once built; NOT_SERVING as soon as shutdown starts, while the
    /// server still answers (the test holds the server's own stop back).
    #[tokio::test]
    async fn serving_then_not_serving_during_shutdown() {
        let (begin_shutdown, shutdown) = oneshot::channel::<()>();
        let (release_server, released) = oneshot::channel::<()>();
        let (health, marked) = serving_until(async {
            let _ = shutdown.await;
        })
        .await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(health)
                .serve_with_incoming_shutdown(TcpIncoming::from(listener), async move {
                    marked.await;
                    let _ = released.await;
                }),
        );
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut client = HealthClient::new(channel);
        assert_eq!(check(&mut client).await, Wire::Serving as i32);
        begin_shutdown.send(()).unwrap();
        crate::testing::eventually(
            "NOT_SERVING once shutdown begins",
            std::time::Duration::from_secs(5),
            || {
                let mut client = client.clone();
                async move { check(&mut client).await == Wire::NotServing as i32 }
            },
        )
        .await;
        release_server.send(()).unwrap();
        server.await.unwrap().unwrap();
    }

    /// A failed ping is a verdict of down unless the pool is saturated.
    #[tokio::test]
    async fn a_saturated_pool_gives_no_verdict() {
        use crate::metrics::PoolStats;
        let busy = || PoolStats {
            size: 4,
            idle: 0,
            max: 4,
        };
        let spare = || PoolStats {
            size: 2,
            idle: 0,
            max: 4,
        };
        assert_eq!(
            probe_pool(async { Ok::<(), ()>(()) }, busy).await,
            Some(true)
        );
        assert_eq!(
            probe_pool(async { Err::<(), ()>(()) }, spare).await,
            Some(false)
        );
        assert_eq!(probe_pool(async { Err::<(), ()>(()) }, busy).await, None);
    }

    /// Polls `service`'s status until it is `want` (5 s bound).
    async fn until(
        client: &mut HealthClient<tonic::transport::Channel>,
        service: &str,
        want: Wire,
    ) {
        crate::testing::eventually(
            &format!("{service:?} is {want:?}"),
            std::time::Duration::from_secs(5),
            || {
                let mut client = client.clone();
                async move {
                    let status = client
                        .check(HealthCheckRequest {
                            service: service.to_owned(),
                        })
                        .await
                        .expect("Health/Check answers")
                        .into_inner()
                        .status;
                    status == want as i32
                }
            },
        )
        .await;
    }

    /// The overall status follows the dependency probe both ways while
    /// liveness stays SERVING; once shutdown starts it is NOT_SERVING for
    /// good, whatever the probe says.
    #[tokio::test]
    async fn the_overall_status_follows_the_probe_and_liveness_does_not() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, Ordering};
        let up = Arc::new(AtomicBool::new(true));
        let probed = up.clone();
        let (begin_shutdown, shutdown) = oneshot::channel::<()>();
        let (health, marked) = serving_while(
            async {
                let _ = shutdown.await;
            },
            move || {
                let up = probed.load(Ordering::SeqCst);
                async move { Some(up) }
            },
        )
        .await;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (release_server, released) = oneshot::channel::<()>();
        let server = tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(health)
                .serve_with_incoming_shutdown(TcpIncoming::from(listener), async move {
                    marked.await;
                    let _ = released.await;
                }),
        );
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut client = HealthClient::new(channel);
        until(&mut client, OVERALL, Wire::Serving).await;
        up.store(false, Ordering::SeqCst);
        until(&mut client, OVERALL, Wire::NotServing).await;
        until(&mut client, LIVENESS, Wire::Serving).await;
        up.store(true, Ordering::SeqCst);
        until(&mut client, OVERALL, Wire::Serving).await;
        begin_shutdown.send(()).unwrap();
        until(&mut client, OVERALL, Wire::NotServing).await;
        // Kept: probes passing without a change is the behaviour under test.
        tokio::time::sleep(PROBE_EVERY * 3).await;
        until(&mut client, OVERALL, Wire::NotServing).await;
        until(&mut client, LIVENESS, Wire::Serving).await;
        release_server.send(()).unwrap();
        server.await.unwrap().unwrap();
    }
}
