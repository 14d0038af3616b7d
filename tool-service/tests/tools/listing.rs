//! `ToolCatalog.ListTools` runs the path of every RPC: it is counted and
//! timed by the metrics layer, waits for a slot of the read class like every
//! read, and is refused past the caller's deadline with the deadline's code;
//! it reads no credential (the catalogue is the same for every caller).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use chataigne_common::ErrorCode;
use chataigne_common::codes::decode_status;
use chataigne_common::demo;
use chataigne_common::grpc_server::GrpcServerLimits;
use chataigne_common::metrics::{Exposition, PoolStats};
use chataigne_proto::tools::v1 as pb;
use chataigne_tools::metrics::ToolMetrics;
use chataigne_tools::store::seed::SeedSpec;
use chataigne_tools::tools::DeadlineClass;
use chataigne_tools::tools::admission::{Admission, ClassLimits};
use tonic::transport::Channel;

use crate::support::{self, seeded_sqlite};

/// The count of listings with `outcome` in `metrics`' exposition.
fn listed(metrics: &ToolMetrics, outcome: &str) -> u64 {
    let prefix =
        format!("chataigne_tools_catalog_listing_duration_seconds_count{{outcome=\"{outcome}\"}} ");
    metrics
        .render()
        .lines()
        .find_map(|line| line.strip_prefix(&prefix).map(|n| n.parse().unwrap()))
        .unwrap_or(0)
}

async fn list(channel: &Channel, timeout: Duration) -> Result<pb::ListToolsResponse, ErrorCode> {
    let mut request = tonic::Request::new(pb::ListToolsRequest {});
    request.set_timeout(timeout);
    pb::tool_catalog_client::ToolCatalogClient::new(channel.clone())
        .list_tools(request)
        .await
        .map(tonic::Response::into_inner)
        .map_err(|status| decode_status(&status).code)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listing_is_measured_admitted_and_bounded_like_every_rpc() {
    let store = seeded_sqlite(&SeedSpec {
        days: 1,
        ..SeedSpec::demo(chrono::Utc::now().timestamp_millis())
    })
    .await;
    // One read slot, and a queue far longer than the caller's deadline.
    let admission = Admission::new(ClassLimits {
        reads: 1,
        writes: 1,
        analytics: 1,
        queue: Duration::from_secs(30),
    });
    let tools = support::tools(store, demo::USER_ADMIN).with_admission(admission.clone());
    let metrics =
        Arc::new(ToolMetrics::new(tools.catalog(), Box::new(PoolStats::default)).unwrap());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn({
        let metrics = metrics.clone();
        async move {
            let limits = GrpcServerLimits::default();
            chataigne_tools::grpc::serve_measured(tools, metrics, &limits, listener, async move {
                let _ = stopped.await;
            })
            .await
        }
    });
    let channel = Channel::from_shared(url).unwrap().connect().await.unwrap();

    // Without any credential: listed, and counted.
    let listing = list(&channel, Duration::from_secs(5)).await.unwrap();
    assert!(!listing.tools.is_empty());
    assert!(!listing.writes_switch_unknown);
    assert_eq!(listed(&metrics, "ok"), 1);

    // The read class exhausted: the listing waits for a slot like every read
    // and is refused at its deadline with the deadline's code, counted so.
    let held = admission.admit(DeadlineClass::Read).await.unwrap();
    assert_eq!(
        list(&channel, Duration::from_millis(300)).await.err(),
        Some(ErrorCode::ToolTimeout)
    );
    assert_eq!(listed(&metrics, ErrorCode::ToolTimeout.as_str()), 1);

    // The slot back: listed again.
    drop(held);
    assert!(list(&channel, Duration::from_secs(5)).await.is_ok());
    assert_eq!(listed(&metrics, "ok"), 2);

    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
