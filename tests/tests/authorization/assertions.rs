//! Principal assertions through the real stack: only the gateway can get one
//! (a user's token presented to the auth-service's gRPC port is refused
//! without the gateway's credential), and one is good for one call of the
//! tool-service, so an assertion in hand is refused at the next call on every
//! surface once its user is banned or loses a membership: MCP through the
//! gateway, the typed gRPC API and the MCP bridge over gRPC.

use chataigne_common::ErrorCode;
use chataigne_common::assertion::AssertionContract;
use chataigne_common::codes::decode_status;
use chataigne_proto::auth::v1::AuthenticateRequest;
use chataigne_proto::auth::v1::auth_service_client::AuthServiceClient;
use chataigne_proto::tools::v1::tool_catalog_client::ToolCatalogClient;
use chataigne_proto::tools::v1::{CallToolRequest, ListOrdersRequest, Page};
use chataigne_tests::typed_rpc::{self, Minter};
use chataigne_tests::{Backend, Outcome, Sandbox, demo};
use serde_json::json;

const LIST_ORDERS: &str = "chataigne.tools.v1.Restaurant/ListOrders";

/// `Restaurant/ListOrders` at Paris, presenting `assertion`.
async fn typed(sandbox: &Sandbox, assertion: &str) -> Result<(), tonic::Status> {
    let request = ListOrdersRequest {
        location_id: demo::LOC_PARIS.to_owned(),
        page: Some(Page {
            limit: 1,
            cursor: String::new(),
        }),
        ..ListOrdersRequest::default()
    };
    typed_rpc::unary(
        &sandbox.tools_grpc_url,
        LIST_ORDERS,
        request,
        assertion,
        None,
    )
    .await
}

/// `ToolCatalog/CallTool` of `chataigne_orders_list` at Paris, presenting
/// `assertion`.
async fn bridged(sandbox: &Sandbox, assertion: &str) -> Result<(), tonic::Status> {
    let mut client = ToolCatalogClient::connect(sandbox.tools_grpc_url.clone())
        .await
        .expect("tool-service reachable");
    let mut request = tonic::Request::new(CallToolRequest {
        name: "chataigne_orders_list".to_owned(),
        arguments_json: json!({"location_id": demo::LOC_PARIS, "limit": 1}).to_string(),
        ..CallToolRequest::default()
    });
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {assertion}").parse().expect("ascii"),
    );
    client.call_tool(request).await.map(|_| ())
}

/// The MCP outcome of listing Paris's orders with `token`.
async fn mcp(sandbox: &Sandbox, token: &str) -> Outcome {
    sandbox
        .call_outcome(
            token,
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "limit": 1}),
        )
        .await
        .0
}

fn assert_unauthenticated(result: Result<(), tonic::Status>, what: &str) {
    let status = result.expect_err(what);
    assert_eq!(
        status.code(),
        tonic::Code::Unauthenticated,
        "{what}: {status:?}"
    );
    assert_eq!(
        decode_status(&status).code,
        ErrorCode::Unauthenticated,
        "{what}"
    );
}

/// `Authenticate` of `token`, presenting `credential` as the gateway's.
async fn authenticate(
    sandbox: &Sandbox,
    token: &str,
    credential: Option<&str>,
) -> Result<String, tonic::Status> {
    let mut request = tonic::Request::new(AuthenticateRequest {
        access_token: token.to_owned(),
        resource: sandbox.mcp_url.clone(),
        valid_for_ms: 15_000,
    });
    if let Some(credential) = credential {
        request.metadata_mut().insert(
            AssertionContract::CALLER_METADATA,
            credential.parse().expect("ascii"),
        );
    }
    AuthServiceClient::connect(sandbox.auth_grpc_url.clone())
        .await
        .expect("auth-service reachable")
        .authenticate(request)
        .await
        .map(|response| response.into_inner().assertion)
}

async fn only_the_gateway_gets_assertions(backend: Backend) {
    let Some(sandbox) = Sandbox::start(backend).await else {
        return;
    };
    let token = sandbox.token(demo::USER_MANAGER).await;
    // A user's valid token presented directly to the auth-service's port.
    for credential in [None, Some("a guess at the gateway's credential, 32+")] {
        let refused = authenticate(&sandbox, &token, credential)
            .await
            .expect_err("not the gateway");
        assert_eq!(refused.code(), tonic::Code::PermissionDenied);
        assert!(refused.details().is_empty(), "no detail");
    }
    // Counted apart from the token refusals.
    let metrics = reqwest::get(&sandbox.auth_metrics_url)
        .await
        .expect("auth-service metrics")
        .text()
        .await
        .expect("metrics text");
    assert!(
        metrics.lines().any(|line| line.starts_with(
            "chataigne_auth_rpc_duration_seconds_count{outcome=\"caller_refused\",rpc=\"Authenticate\"} 2"
        )),
        "{metrics}"
    );
    // The gateway's credential is served, and the gateway itself uses it.
    let credential = secrecy::ExposeSecret::expose_secret(&sandbox.gateway_credential).to_owned();
    let assertion = authenticate(&sandbox, &token, Some(&credential))
        .await
        .expect("the gateway's credential");
    assert!(typed(&sandbox, &assertion).await.is_ok());
    assert_eq!(mcp(&sandbox, &token).await, Outcome::Ok);
    sandbox.shutdown().await;
}

async fn a_held_assertion_is_refused_at_the_next_call_on_every_surface(backend: Backend) {
    let Some(sandbox) = Sandbox::start(backend).await else {
        return;
    };
    let minter = Minter::new(&sandbox);

    // One assertion is one call, whatever the surface.
    let token = sandbox.token(demo::USER_MANAGER).await;
    let assertion = minter.assertion(&token).await;
    assert!(typed(&sandbox, &assertion).await.is_ok());
    assert_unauthenticated(typed(&sandbox, &assertion).await, "typed, again");
    assert_unauthenticated(bridged(&sandbox, &assertion).await, "bridged after typed");
    let assertion = minter.assertion(&token).await;
    assert!(bridged(&sandbox, &assertion).await.is_ok());
    assert_unauthenticated(bridged(&sandbox, &assertion).await, "bridged, again");

    // A ban, with an assertion of the user in hand (used for its call).
    let held = minter.assertion(&token).await;
    assert!(typed(&sandbox, &held).await.is_ok());
    sandbox
        .auth
        .set_user_status(demo::USER_MANAGER, "banned")
        .await
        .expect("banned");
    assert_eq!(mcp(&sandbox, &token).await, Outcome::Unauthenticated, "MCP");
    assert_unauthenticated(typed(&sandbox, &held).await, "typed gRPC after the ban");
    assert_unauthenticated(bridged(&sandbox, &held).await, "bridge after the ban");
    // And no new assertion is minted for the banned user.
    let credential = secrecy::ExposeSecret::expose_secret(&sandbox.gateway_credential).to_owned();
    let refused = authenticate(&sandbox, &token, Some(&credential))
        .await
        .expect_err("banned");
    assert_eq!(refused.code(), tonic::Code::Unauthenticated);

    // A membership removed, with an assertion of the user in hand.
    let token = sandbox.token(demo::USER_STAFF).await;
    let held = minter.assertion(&token).await;
    assert!(bridged(&sandbox, &held).await.is_ok());
    sandbox
        .auth
        .remove_membership(demo::USER_STAFF, demo::ORG_BISTRO, Some(demo::LOC_PARIS))
        .await
        .expect("membership removed");
    assert_eq!(mcp(&sandbox, &token).await, Outcome::Forbidden, "MCP");
    assert_unauthenticated(typed(&sandbox, &held).await, "typed gRPC after the removal");
    assert_unauthenticated(bridged(&sandbox, &held).await, "bridge after the removal");
    // A new assertion carries the live grants: the target is forbidden.
    let fresh = minter.assertion(&token).await;
    let refused = typed(&sandbox, &fresh).await.expect_err("no membership");
    assert_eq!(decode_status(&refused).code, ErrorCode::ResourceForbidden);
    sandbox.shutdown().await;
}

/// A gateway whose credential the auth-service refuses cannot authenticate
/// anyone: it answers that the sign-in service is unavailable (its own
/// misconfiguration), never the caller's 401.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_without_the_auth_services_credential_answers_unavailable() {
    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let token = sandbox.token(demo::USER_MANAGER).await;
    for credential in [None, Some("another credential of at least 32 bytes")] {
        let (url, stop) = chataigne_tests::stores::extra_gateway(&sandbox, |config| {
            config.gateway_credential = credential.map(secrecy::SecretString::from);
        })
        .await;
        let (status, body) = chataigne_tests::process::post_tool_call(
            &url,
            &token,
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "limit": 1}),
            std::time::Duration::from_secs(10),
        )
        .await;
        assert_ne!(status, 401, "{credential:?}: {body}");
        assert_eq!(
            body["error"]["data"]["code"], "MCP_DEPENDENCY_UNAVAILABLE",
            "{credential:?}: {body}"
        );
        stop.cancel();
    }
    assert_eq!(
        mcp(&sandbox, &token).await,
        Outcome::Ok,
        "the stack's own gateway"
    );
    sandbox.shutdown().await;
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Backend::Sqlite,
    postgres: Some(Backend::Postgres),
    run: |backend| (backend),
    tests: [
        only_the_gateway_gets_assertions = only_the_gateway_gets_assertions,
        a_held_assertion_is_refused_at_the_next_call_on_every_surface =
            a_held_assertion_is_refused_at_the_next_call_on_every_surface,
    ],
}
