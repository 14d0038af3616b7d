//! Client-side balancing over real gRPC servers on loopback: calls spread
//! evenly over every instance, a stopped instance costs at most the one call
//! that detects it, and instances the resolver adds get traffic.

#![allow(clippy::unwrap_used, clippy::expect_used)]

// The shared wait (`testing::eventually`), which this crate's own tests
// build without the `testing` feature.
#[allow(dead_code)]
#[path = "../src/eventually.rs"]
mod shared_wait;
use shared_wait::eventually;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chataigne_common::balance::{self, Balanced, Resolve};
use futures::future::BoxFuture;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

/// One backend instance: a gRPC health server counting the calls it serves.
struct Instance {
    address: SocketAddr,
    served: Arc<AtomicUsize>,
    stop: CancellationToken,
}

async fn instance() -> Instance {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let served = Arc::new(AtomicUsize::new(0));
    let stop = CancellationToken::new();
    let (_reporter, health) = tonic_health::server::health_reporter();
    let counter = served.clone();
    let count = tower::util::MapRequestLayer::new(move |request: http::Request<_>| {
        counter.fetch_add(1, Ordering::Relaxed);
        request
    });
    let shutdown = stop.clone();
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .layer(count)
            .add_service(health)
            .serve_with_incoming_shutdown(
                tokio_stream::wrappers::TcpListenerStream::new(listener),
                shutdown.cancelled_owned(),
            )
            .await
    });
    Instance {
        address,
        served,
        stop,
    }
}

/// A resolver whose answer the test changes.
#[derive(Clone, Default)]
struct Settable(Arc<Mutex<Vec<SocketAddr>>>);

impl Resolve for Settable {
    fn resolve(&self) -> BoxFuture<'_, std::io::Result<Vec<SocketAddr>>> {
        let addresses = self.0.lock().unwrap().clone();
        Box::pin(async move { Ok(addresses) })
    }
}

fn options() -> balance::Options {
    balance::Options {
        connect_timeout: Duration::from_millis(500),
        request_timeout: None,
        resolve_every: Duration::from_millis(100),
        probe_every: Duration::from_millis(100),
        tls: None,
    }
}

/// Calls `n` health checks; returns how many failed.
async fn call(client: &HealthClient<Balanced>, n: usize) -> usize {
    let mut failed = 0;
    for _ in 0..n {
        let mut client = client.clone();
        if client.check(HealthCheckRequest::default()).await.is_err() {
            failed += 1;
        }
    }
    failed
}

fn served(instances: &[Instance]) -> Vec<usize> {
    instances
        .iter()
        .map(|i| i.served.swap(0, Ordering::Relaxed))
        .collect()
}

#[tokio::test]
async fn calls_spread_evenly_and_a_stopped_instance_costs_at_most_one_call() {
    let instances = vec![instance().await, instance().await, instance().await];
    let addresses = instances.iter().map(|i| i.address).collect();
    let channel = Balanced::fixed("http://tool-service.test:50052", addresses, options()).unwrap();
    let client = HealthClient::new(channel.clone());

    assert_eq!(call(&client, 300).await, 0);
    for count in served(&instances) {
        assert!((80..=120).contains(&count), "within ±20 % of 100: {count}");
    }

    instances[1].stop.cancel();
    // Kept: the stopped server closes its connections on its own side, with
    // nothing for the client to poll; the balancer must find them closed.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let failed = call(&client, 200).await;
    assert!(failed <= 1, "only the detecting call may fail: {failed}");
    let counts = served(&instances);
    assert_eq!(counts[1], 0, "the stopped instance gets nothing");
    assert_eq!(counts[0] + counts[2] + failed, 200);
    assert_eq!(channel.instances().len(), 3, "still listed, only ejected");
}

#[tokio::test]
async fn instances_the_resolver_adds_or_drops_are_followed() {
    let first = instance().await;
    let resolver = Settable::default();
    *resolver.0.lock().unwrap() = vec![first.address];
    let channel = Balanced::new(
        "http://tool-service.test:50052",
        resolver.clone(),
        options(),
    )
    .unwrap();
    let client = HealthClient::new(channel.clone());
    let listed = |n: usize| {
        let channel = channel.clone();
        async move {
            eventually(
                &format!("{n} instances listed"),
                Duration::from_secs(1),
                || async { channel.instances().len() == n },
            )
            .await;
        }
    };
    listed(1).await;
    assert_eq!(call(&client, 20).await, 0);

    // A scale-up: the new instance takes its share at the next resolution.
    let second = instance().await;
    resolver.0.lock().unwrap().push(second.address);
    listed(2).await;
    let both = [first, second];
    served(&both);
    assert_eq!(call(&client, 100).await, 0);
    let counts = served(&both);
    assert!(counts.iter().all(|&c| (40..=60).contains(&c)), "{counts:?}");

    // A scale-down: the dropped instance gets nothing more.
    *resolver.0.lock().unwrap() = vec![both[1].address];
    listed(1).await;
    assert_eq!(call(&client, 20).await, 0);
    assert_eq!(served(&both), [0, 20]);
}

#[tokio::test]
async fn an_ejected_instance_takes_calls_again_once_it_is_back() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let other = instance().await;
    let channel = Balanced::fixed(
        "http://tool-service.test:50052",
        vec![address, other.address],
        options(),
    )
    .unwrap();
    let client = HealthClient::new(channel);
    let failed = call(&client, 10).await;
    assert_eq!(failed, 1, "the first call to the dead address detects it");

    // The address comes to life: the probe lets it take calls again.
    let listener = TcpListener::bind(address).await.unwrap();
    let served_back = Arc::new(AtomicUsize::new(0));
    let counter = served_back.clone();
    let (_reporter, health) = tonic_health::server::health_reporter();
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .layer(tower::util::MapRequestLayer::new(
                move |request: http::Request<_>| {
                    counter.fetch_add(1, Ordering::Relaxed);
                    request
                },
            ))
            .add_service(health)
            .serve_with_incoming(tokio_stream::wrappers::TcpListenerStream::new(listener))
            .await
    });
    // Back in the rotation: every call served, and its share by it.
    eventually("back in the rotation", Duration::from_secs(5), || async {
        served_back.store(0, Ordering::Relaxed);
        call(&client, 20).await == 0 && served_back.load(Ordering::Relaxed) >= 8
    })
    .await;
}
