//! The standard gRPC health service (`grpc.health.v1.Health`) for the backend
//! servers: the overall status (empty service name) is SERVING once the server
//! is built and turns NOT_SERVING as soon as shutdown starts, so probes and load
//! balancers stop routing to a draining process before it closes.

use std::future::Future;

use tonic_health::ServingStatus;
use tonic_health::pb::health_server::{Health, HealthServer};
use tonic_health::server::HealthReporter;

/// The overall server status reported under the empty service name.
pub const OVERALL: &str = "";

/// The health service to add to a tonic server, SERVING, and `shutdown`
/// wrapped so that the status turns NOT_SERVING when it resolves (before the
/// server starts draining in-flight calls).
pub async fn serving_until(
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> (
    HealthServer<impl Health>,
    impl Future<Output = ()> + Send + 'static,
) {
    let (reporter, service) = tonic_health::server::health_reporter();
    reporter
        .set_service_status(OVERALL, ServingStatus::Serving)
        .await;
    (service, not_serving_on(reporter, shutdown))
}

async fn not_serving_on(reporter: HealthReporter, shutdown: impl Future<Output = ()>) {
    shutdown.await;
    reporter
        .set_service_status(OVERALL, ServingStatus::NotServing)
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
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let status = check(&mut client).await;
            if status == Wire::NotServing as i32 {
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "still {status}");
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        release_server.send(()).unwrap();
        server.await.unwrap().unwrap();
    }
}
