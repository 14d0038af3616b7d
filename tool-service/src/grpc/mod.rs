//! The gRPC adapter: the `ToolCatalog` (MCP bridge) and the typed services
//! over the same tools, the credential extraction, and the one mapping of
//! domain errors to `tonic::Status`.
//!
//! Every RPC runs through `runner`: within the caller's deadline (each
//! database statement bounded by what remains of it), behind the operator's
//! write switch when it writes, with the error class of its kind. Each typed
//! service is declared once, in its own file, with `typed_service!`
//! (`fields.rs`): per RPC, the request, the catalogue tool it runs (whose
//! kind and scope are the RPC's), the response and the required fields. Every
//! generated method is `runner.run::<Tool>(request)`, which refuses an empty
//! required field with `INVALID_ARGUMENT` and a `BadRequest` violation per
//! field before any authorization, converts the request into the tool's
//! input (`TryFrom`), runs the tool, converts its answer (`From`) and words
//! its statuses for gRPC callers. An enum field is empty when
//! `*_UNSPECIFIED`, a list when it has no element. Each service file's
//! documentation has the table of its RPCs (kind, scope, required fields),
//! checked against the declarations.

mod activity_convert;
mod analytics;
mod catalog;
mod catalog_items;
mod conversation_writes;
mod conversations;
mod convert;
mod credential;
mod customers;
mod database_gate;
mod deadline;
pub mod domain_codes;
mod fields;
mod locations;
mod locations_settings;
mod order_updates;
mod provisioning;
mod restaurant;
mod runner;
mod status;
mod venue_convert;

use std::future::Future;
use std::sync::Arc;

use chataigne_proto::tools::v1::{
    restaurant_server::RestaurantServer, tool_catalog_server::ToolCatalogServer,
};
use tokio::net::TcpListener;

use crate::access::Access;
use crate::metrics::{MetricsLayer, ToolMetrics};
use crate::store::Store;
use crate::tools::Tools;

pub use database_gate::connection_handed;
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
    listener: impl Into<chataigne_common::grpc_server::GrpcListener>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    // Plain or TLS (`tls`); `Server::tcp_nodelay` is ignored with an incoming
    // stream, so it is set on each accepted socket, or Nagle holds small
    // response frames until the peer's delayed ACK (about 40 ms per call).
    let incoming = listener.into().incoming();
    // grpc.health.v1: SERVING while the database answers its probe,
    // NOT_SERVING once shutdown starts; `liveness` SERVING throughout.
    // While it reports the database down, tool RPCs fail at once.
    let database = database_gate::DatabaseState::default();
    let (store, gauge, state) = (tools.store().clone(), metrics.clone(), database.clone());
    let probe = move || {
        let (store, gauge, state) = (store.clone(), gauge.clone(), state.clone());
        async move {
            let stats = || gauge.pool_stats();
            let verdict = chataigne_common::grpc_health::probe_pool(store.ping(), stats).await;
            if let Some(up) = verdict {
                gauge.dependency_state(crate::domain::Dependency::Database, up);
                state.set(up);
            }
            verdict
        }
    };
    let (health, shutdown) = chataigne_common::grpc_health::serving_while(shutdown, probe).await;
    // Server reflection (v1, v1alpha) of the tool services, health and itself.
    let (reflection, reflection_v1alpha) = chataigne_common::grpc_reflection::services(
        chataigne_proto::FILE_DESCRIPTOR_SET,
        chataigne_proto::tools::v1::PACKAGE,
    )?;
    // The stack every Chataigne gRPC server declares (HTTP/2 limits, the
    // caller's deadline, load shedding past the concurrency limit), then:
    chataigne_common::grpc_server::builder(limits)
        // One span per RPC, child of the caller's W3C trace context.
        .trace_fn(chataigne_common::trace_context::server_span("tool-service"))
        // Tool-call latency and outcome, dependency errors.
        .layer(MetricsLayer(metrics))
        // The database known down: tool RPCs refused at once.
        .layer(database_gate::DatabaseGate(database))
        .add_service(health)
        .add_service(reflection)
        .add_service(reflection_v1alpha)
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
        .add_service(
            chataigne_proto::tools::v1::conversation_writes_server::ConversationWritesServer::new(
                conversation_writes::ConversationWritesService::new(tools.clone()),
            ),
        )
        .add_service(
            chataigne_proto::tools::v1::provisioning_server::ProvisioningServer::new(
                provisioning::ProvisioningService::new(tools.clone()),
            ),
        )
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
