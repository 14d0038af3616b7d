//! The gRPC adapter: the `ToolCatalog` (MCP bridge) and `Restaurant` (typed)
//! services over the same tools, the credential extraction, and the one
//! mapping of domain errors to `tonic::Status`.

mod catalog;
mod credential;
mod restaurant;
mod status;

use std::future::Future;

use chataigne_proto::tools::v1::{
    restaurant_server::RestaurantServer, tool_catalog_server::ToolCatalogServer,
};
use tokio::net::TcpListener;
use tokio_stream::wrappers::TcpListenerStream;

use crate::access::Access;
use crate::store::Store;
use crate::tools::Tools;

pub use status::to_status;

/// Serves both services on `listener` until `shutdown` resolves; in-flight
/// calls finish first.
pub async fn serve<S: Store, A: Access>(
    tools: Tools<S, A>,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let incoming = TcpListenerStream::new(listener);
    tonic::transport::Server::builder()
        .tcp_nodelay(true)
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
