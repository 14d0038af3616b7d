//! The gRPC adapter: the `ToolCatalog` (MCP bridge) and `Restaurant` (typed)
//! services over the same tools, the credential extraction, and the one
//! mapping of domain errors to `tonic::Status`.

mod activity_convert;
mod analytics;
mod catalog;
mod catalog_items;
mod conversations;
mod convert;
mod credential;
mod customers;
mod deadline;
mod locations;
mod locations_settings;
mod order_updates;
mod restaurant;
mod status;
mod venue_convert;
mod writes;

use std::future::Future;
use std::sync::Arc;

use chataigne_proto::tools::v1::{
    restaurant_server::RestaurantServer, tool_catalog_server::ToolCatalogServer,
};
use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;

use crate::access::Access;
use crate::metrics::{MetricsLayer, ToolMetrics};
use crate::store::Store;
use crate::tools::Tools;

pub use status::to_status;

/// Serves the tool services and the standard health service on `listener`
/// until `shutdown` resolves; in-flight calls finish first. The metrics are
/// kept in a registry of this server only (see [`serve_measured`]).
pub async fn serve<S: Store, A: Access>(
    tools: Tools<S, A>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let metrics = ToolMetrics::new(tools.catalog(), Box::new(Default::default))?;
    let limits = chataigne_common::grpc_server::GrpcServerLimits::default();
    serve_measured(tools, Arc::new(metrics), &limits, listener, shutdown).await
}

/// [`serve`], recording every tool call and dependency error in `metrics`.
pub async fn serve_measured<S: Store, A: Access>(
    tools: Tools<S, A>,
    metrics: Arc<ToolMetrics>,
    limits: &chataigne_common::grpc_server::GrpcServerLimits,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    // `Server::tcp_nodelay` is ignored with an incoming stream: set it on each
    // accepted socket, or Nagle holds small response frames until the peer's
    // delayed ACK (about 40 ms per call).
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    // grpc.health.v1: SERVING from here, NOT_SERVING once shutdown starts.
    let (health, shutdown) = chataigne_common::grpc_health::serving_until(shutdown).await;
    // The stack every Chataigne gRPC server declares (HTTP/2 limits, the
    // caller's deadline, load shedding past the concurrency limit), then:
    chataigne_common::grpc_server::builder(limits)
        // One span per RPC, child of the caller's W3C trace context.
        .trace_fn(chataigne_common::trace_context::server_span("tool-service"))
        // Tool-call latency and outcome, dependency errors.
        .layer(MetricsLayer(metrics))
        .add_service(health)
        .add_service(
            chataigne_proto::tools::v1::locations_server::LocationsServer::new(
                locations::LocationsService::new(tools.clone()),
            ),
        )
        .add_service(
            chataigne_proto::tools::v1::catalog_server::CatalogServer::new(
                catalog_items::CatalogItemsService::new(tools.clone()),
            ),
        )
        .add_service(writes::conversation_writes(tools.clone()))
        .add_service(writes::provisioning(tools.clone()))
        .add_service(
            chataigne_proto::tools::v1::order_updates_server::OrderUpdatesServer::new(
                order_updates::OrderUpdatesService::new(tools.clone()),
            ),
        )
        .add_service(
            chataigne_proto::tools::v1::customers_server::CustomersServer::new(
                customers::CustomersService::new(tools.clone()),
            ),
        )
        .add_service(
            chataigne_proto::tools::v1::conversations_server::ConversationsServer::new(
                conversations::ConversationsService::new(tools.clone()),
            ),
        )
        .add_service(
            chataigne_proto::tools::v1::analytics_server::AnalyticsServer::new(
                analytics::AnalyticsService::new(tools.clone()),
            ),
        )
        .add_service(ToolCatalogServer::new(catalog::CatalogService::new(
            tools.clone(),
        )))
        .add_service(RestaurantServer::new(restaurant::RestaurantService::new(
            tools,
        )))
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await?;
    Ok(())
}
