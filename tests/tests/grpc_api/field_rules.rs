//! Field rules and wording of the typed gRPC API, through the real stack:
//! every typed RPC of the contracts called with an empty request is refused
//! with `INVALID_ARGUMENT` and a `google.rpc.BadRequest` naming each required
//! field, before any authorization (a caller without access to anything
//! still learns which fields are missing); the other refusals of typed RPCs
//! are worded for gRPC callers, while `CallTool` keeps the MCP texts.

use chataigne_common::ErrorCode;
use chataigne_common::codes::{FieldViolation, decode_status};
use chataigne_proto::tools::v1 as pb;
use chataigne_tests::demo::{LOC_BROOKLYN, LOC_PARIS, USER_MANAGER};
use chataigne_tests::typed_rpc::{self, unary};
use chataigne_tests::{Backend, Sandbox};

/// Texts written for a model through MCP, which a typed RPC's status never
/// carries.
const MCP_WORDING: &[&str] = &[
    "chataigne_",
    "Reconnect",
    "consent",
    "assistant",
    "input schema",
    "meta.next_cursor",
    "tool",
    "Sign in",
    "signed-in",
];

/// The required fields of each typed request, as the contract documents them.
const REQUIRED: &[(&str, &[&str])] = &[
    (
        "Analytics/QueryAnalytics",
        &["location_id", "metrics", "date_from", "date_to"],
    ),
    ("Catalog/ListCatalogItems", &["location_id"]),
    (
        "Catalog/UpdateCatalogItemAvailability",
        &["item_id", "availability", "expected_availability"],
    ),
    (
        "ConversationWrites/SendInstruction",
        &["conversation_id", "text", "idempotency_key"],
    ),
    (
        "ConversationWrites/SendMessage",
        &["conversation_id", "text", "idempotency_key"],
    ),
    ("Conversations/GetConversation", &["conversation_id"]),
    ("Conversations/ListConversations", &["location_id"]),
    ("Customers/GetCustomer", &["customer_id"]),
    ("Customers/ListCustomers", &["organization_id"]),
    ("Locations/GetLocation", &["location_id"]),
    (
        "Locations/GetLocationSettings",
        &["location_id", "sections"],
    ),
    ("Locations/GetLocationStatus", &["location_id"]),
    ("Locations/ListDiscounts", &["location_id"]),
    ("Locations/ListIntegrations", &["location_id"]),
    (
        "Locations/UpdateLocationStatus",
        &["location_id", "status", "expected_status"],
    ),
    (
        "OrderUpdates/UpdateOrderStatus",
        &["order_id", "status", "expected_status"],
    ),
    (
        "Provisioning/CreateLocation",
        &[
            "organization_id",
            "name",
            "line1",
            "city",
            "postal_code",
            "country",
            "timezone",
            "currency",
            "idempotency_key",
        ],
    ),
    (
        "Provisioning/CreateOrganization",
        &["name", "idempotency_key"],
    ),
    ("Restaurant/GetOrder", &["order_id"]),
    ("Restaurant/ListLocations", &["organization_id"]),
    ("Restaurant/ListOrders", &[]),
    ("Restaurant/ListOrganizations", &[]),
];

fn assert_grpc_wording(rpc: &str, status: &tonic::Status) {
    for word in MCP_WORDING {
        assert!(
            !status.message().contains(word),
            "{rpc}: {:?} carries MCP wording {word:?}",
            status.message()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_empty_request_of_every_typed_rpc_names_its_required_fields_before_authorization() {
    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let url = sandbox.tools_grpc_url.clone();
    // Signed in, but granted nothing the RPCs need: only the validation can
    // answer before authorization refuses.
    let token = sandbox.token_with(USER_MANAGER, &["openid"]).await;
    let minter = typed_rpc::Minter::new(&sandbox);
    let rpcs = typed_rpc::typed_rpcs();
    let listed: Vec<&str> = rpcs
        .iter()
        .map(|rpc| rpc.strip_prefix("chataigne.tools.v1.").unwrap_or(rpc))
        .collect();
    let documented: Vec<&str> = REQUIRED.iter().map(|(rpc, _)| *rpc).collect();
    assert_eq!(listed, documented, "every typed RPC has its row here");

    for (rpc, (short, fields)) in rpcs.iter().zip(REQUIRED) {
        // An empty message: every field at its default.
        let credential = minter.assertion(&token).await;
        let outcome = unary(&url, rpc, (), &credential, None).await;
        if fields.is_empty() {
            if let Err(status) = &outcome {
                assert_ne!(
                    status.code(),
                    tonic::Code::InvalidArgument,
                    "{short}: {status:?}"
                );
                assert_grpc_wording(short, status);
            }
            continue;
        }
        let status = outcome.expect_err(short);
        assert_eq!(
            status.code(),
            tonic::Code::InvalidArgument,
            "{short}: {status:?}"
        );
        let decoded = decode_status(&status);
        assert_eq!(decoded.code, ErrorCode::InvalidArguments, "{short}");
        // `decoded.violations` are the field violations of the status's
        // `google.rpc.BadRequest` detail.
        let violations: Vec<(&str, &str)> = decoded
            .violations
            .iter()
            .map(|v| (v.field.as_str(), v.description.as_str()))
            .collect();
        let expected: Vec<(&str, &str)> = fields.iter().map(|f| (*f, "is required")).collect();
        assert_eq!(violations, expected, "{short}");
        for field in *fields {
            assert!(
                status
                    .message()
                    .contains(&format!("field {field} is required")),
                "{short}: {:?}",
                status.message()
            );
        }
        assert_grpc_wording(short, &status);
    }
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_refusals_are_worded_for_grpc_callers_and_call_tool_keeps_the_mcp_texts() {
    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let url = sandbox.tools_grpc_url.clone();
    let narrow = sandbox.token_with(USER_MANAGER, &["location.read"]).await;
    let full = sandbox.token(USER_MANAGER).await;
    let minter = typed_rpc::Minter::new(&sandbox);
    let orders = "chataigne.tools.v1.Restaurant/ListOrders";
    let list = || pb::ListOrdersRequest {
        location_id: LOC_PARIS.to_owned(),
        ..Default::default()
    };

    // A scope the credentials lack.
    let status = unary(&url, orders, list(), &minter.assertion(&narrow).await, None)
        .await
        .expect_err("orders.read is missing");
    assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}");
    assert_eq!(decode_status(&status).code, ErrorCode::ScopeRequired);
    assert_eq!(
        status.message(),
        "the call's credentials lack scope orders.read"
    );
    // No credentials at all.
    let status = unary(&url, orders, list(), "", None)
        .await
        .expect_err("anonymous");
    assert_eq!(status.code(), tonic::Code::Unauthenticated, "{status:?}");
    assert_grpc_wording("anonymous", &status);
    // A location of another tenant.
    let status = unary(
        &url,
        "chataigne.tools.v1.Locations/GetLocation",
        pb::GetLocationRequest {
            location_id: LOC_BROOKLYN.to_owned(),
            ..Default::default()
        },
        &minter.assertion(&full).await,
        None,
    )
    .await
    .expect_err("foreign location");
    assert_eq!(decode_status(&status).code, ErrorCode::ResourceForbidden);
    assert_grpc_wording("foreign location", &status);
    // A rule of the tool itself, in the request's field names.
    let status = unary(
        &url,
        "chataigne.tools.v1.Customers/ListCustomers",
        pb::ListCustomersRequest {
            organization_id: chataigne_tests::demo::ORG_BISTRO.to_owned(),
            name_query: "x".repeat(500),
            ..Default::default()
        },
        &minter.assertion(&full).await,
        None,
    )
    .await
    .expect_err("query too long");
    assert_eq!(status.code(), tonic::Code::InvalidArgument, "{status:?}");
    assert_eq!(
        decode_status(&status)
            .violations
            .first()
            .map(|v: &FieldViolation| v.field.as_str()),
        Some("name_query")
    );
    assert!(
        status.message().starts_with("field name_query "),
        "{}",
        status.message()
    );
    assert_grpc_wording("query too long", &status);

    // The MCP bridge answers the same refusal with the text for a model.
    let status = unary(
        &url,
        "chataigne.tools.v1.ToolCatalog/CallTool",
        pb::CallToolRequest {
            name: "chataigne_orders_list".to_owned(),
            arguments_json: format!(r#"{{"location_id":"{LOC_PARIS}"}}"#),
            ..Default::default()
        },
        &minter.assertion(&narrow).await,
        None,
    )
    .await
    .expect_err("orders.read is missing");
    assert_eq!(decode_status(&status).code, ErrorCode::ScopeRequired);
    assert!(
        status.message().contains("Reconnect the app")
            && status.message().contains("chataigne_orders_list"),
        "{}",
        status.message()
    );
    sandbox.shutdown().await;
}
