//! The operator's write switch gates every write of the served tool-service:
//! with the switch off, every write tool of the catalogue called over
//! `ToolCatalog.CallTool` and every typed write RPC (one per write tool, found
//! through the tool's declared RPC) is refused with `MCP_WRITES_DISABLED`,
//! reads are served and `ListTools` reports the switch; with it on again the
//! same calls get past the switch (to their argument checks).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::BTreeSet;

use crate::support::seeded_sqlite;
use chataigne_common::ErrorCode;
use chataigne_common::codes::decode_status;
use chataigne_common::demo;
use chataigne_proto::tools::v1 as pb;
use chataigne_tools::store::OperatorFlagStore;
use chataigne_tools::store::seed::SeedSpec;
use chataigne_tools::tools::{ToolId, ToolKind};
use tonic::transport::Channel;

fn request<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request
        .metadata_mut()
        .insert("authorization", "Bearer assertion".parse().unwrap());
    request
}

/// The code of a refusal, `None` for a success.
fn code<T>(result: Result<tonic::Response<T>, tonic::Status>) -> Option<ErrorCode> {
    result.err().map(|status| decode_status(&status).code)
}

/// Every typed write RPC with an empty request: (RPC name, refusal code).
async fn typed_writes(channel: &Channel) -> Vec<(&'static str, Option<ErrorCode>)> {
    let mut locations = pb::locations_client::LocationsClient::new(channel.clone());
    let mut catalog = pb::catalog_client::CatalogClient::new(channel.clone());
    let mut orders = pb::order_updates_client::OrderUpdatesClient::new(channel.clone());
    let mut conversations =
        pb::conversation_writes_client::ConversationWritesClient::new(channel.clone());
    let mut provisioning = pb::provisioning_client::ProvisioningClient::new(channel.clone());
    vec![
        (
            "chataigne.tools.v1.Locations/UpdateLocationStatus",
            code(
                locations
                    .update_location_status(request(pb::UpdateLocationStatusRequest::default()))
                    .await,
            ),
        ),
        (
            "chataigne.tools.v1.Catalog/UpdateCatalogItemAvailability",
            code(
                catalog
                    .update_catalog_item_availability(request(
                        pb::UpdateCatalogItemAvailabilityRequest::default(),
                    ))
                    .await,
            ),
        ),
        (
            "chataigne.tools.v1.OrderUpdates/UpdateOrderStatus",
            code(
                orders
                    .update_order_status(request(pb::UpdateOrderStatusRequest::default()))
                    .await,
            ),
        ),
        (
            "chataigne.tools.v1.ConversationWrites/SendMessage",
            code(
                conversations
                    .send_message(request(pb::SendMessageRequest::default()))
                    .await,
            ),
        ),
        (
            "chataigne.tools.v1.ConversationWrites/SendInstruction",
            code(
                conversations
                    .send_instruction(request(pb::SendInstructionRequest::default()))
                    .await,
            ),
        ),
        (
            "chataigne.tools.v1.Provisioning/CreateOrganization",
            code(
                provisioning
                    .create_organization(request(pb::CreateOrganizationRequest::default()))
                    .await,
            ),
        ),
        (
            "chataigne.tools.v1.Provisioning/CreateLocation",
            code(
                provisioning
                    .create_location(request(pb::CreateLocationRequest::default()))
                    .await,
            ),
        ),
    ]
}

/// Every write tool over `CallTool` with empty arguments: (tool, refusal code).
async fn bridged_writes(channel: &Channel) -> Vec<(&'static str, Option<ErrorCode>)> {
    let mut client = pb::tool_catalog_client::ToolCatalogClient::new(channel.clone());
    let mut outcomes = Vec::new();
    for spec in write_specs() {
        let outcome = client
            .call_tool(request(pb::CallToolRequest {
                name: spec.name.to_owned(),
                arguments_json: "{}".to_owned(),
                ..pb::CallToolRequest::default()
            }))
            .await;
        outcomes.push((spec.name, code(outcome)));
    }
    outcomes
}

fn write_specs() -> impl Iterator<Item = &'static chataigne_tools::tools::ToolSpec> {
    ToolId::ALL
        .iter()
        .map(|id| id.spec())
        .filter(|spec| spec.kind == ToolKind::Write)
}

async fn read_works(channel: &Channel) -> bool {
    let mut client = pb::tool_catalog_client::ToolCatalogClient::new(channel.clone());
    let bridged = client
        .call_tool(request(pb::CallToolRequest {
            name: "chataigne_location_status_get".to_owned(),
            arguments_json: format!(r#"{{"location_id":"{}"}}"#, demo::LOC_PARIS),
            ..pb::CallToolRequest::default()
        }))
        .await;
    let mut locations = pb::locations_client::LocationsClient::new(channel.clone());
    let typed = locations
        .get_location_status(request(pb::GetLocationStatusRequest {
            location_id: demo::LOC_PARIS.to_owned(),
            ..pb::GetLocationStatusRequest::default()
        }))
        .await;
    bridged.is_ok() && typed.is_ok()
}

async fn listed_writes_enabled(channel: &Channel) -> bool {
    let mut client = pb::tool_catalog_client::ToolCatalogClient::new(channel.clone());
    let listed = client
        .list_tools(pb::ListToolsRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        listed.tools.len(),
        ToolId::ALL.len(),
        "every tool is listed"
    );
    listed.writes_enabled
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_switch_gates_every_write_path() {
    let store = seeded_sqlite(&SeedSpec {
        days: 2,
        ..SeedSpec::demo(chrono::Utc::now().timestamp_millis())
    })
    .await;
    let tools = support::tools(store.clone(), demo::USER_ADMIN);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(chataigne_tools::grpc::serve(tools, listener, async move {
        let _ = stopped.await;
    }));
    let channel = Channel::from_shared(url).unwrap().connect().await.unwrap();

    // Every write tool declares a typed RPC, and each of those is exercised.
    let declared: BTreeSet<&str> = write_specs().map(|spec| spec.rpc).collect();
    let exercised: BTreeSet<&str> = typed_writes(&channel)
        .await
        .into_iter()
        .map(|(rpc, _)| rpc)
        .collect();
    assert_eq!(exercised, declared, "one typed write per write tool");

    // Off: every write path refuses with the switch's code; reads work.
    let now = chrono::Utc::now().timestamp_millis();
    store
        .set_writes_switch(false, Some("maintenance"), now)
        .await
        .unwrap();
    assert!(!listed_writes_enabled(&channel).await);
    for (name, outcome) in bridged_writes(&channel)
        .await
        .into_iter()
        .chain(typed_writes(&channel).await)
    {
        assert_eq!(outcome, Some(ErrorCode::WritesDisabled), "{name}");
    }
    assert!(read_works(&channel).await, "reads are served");

    // On again, at the next call: the same calls get past the switch (the
    // bridge to schema validation; the typed ones to their own checks).
    store.set_writes_switch(true, None, now + 1).await.unwrap();
    assert!(listed_writes_enabled(&channel).await);
    for (name, outcome) in bridged_writes(&channel).await {
        assert_eq!(outcome, Some(ErrorCode::InvalidArguments), "{name}");
    }
    for (name, outcome) in typed_writes(&channel).await {
        assert!(outcome.is_some(), "{name}: an empty request is refused");
        assert_ne!(outcome, Some(ErrorCode::WritesDisabled), "{name}");
    }
    assert!(read_works(&channel).await);

    let _ = stop.send(());
    server.await.unwrap().unwrap();
}
