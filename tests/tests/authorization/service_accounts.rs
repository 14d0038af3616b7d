//! Internal callers with service accounts: a token from the auth-service's
//! `client_credentials` grant calls the typed `Restaurant` gRPC API of the
//! tool-service, which has the auth-service verify it and check the service
//! account's own memberships live. Forged, self-signed, user and revoked
//! credentials are refused.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chataigne_proto::tools::v1::{ListOrdersRequest, Page, restaurant_client::RestaurantClient};
use chataigne_tests::{Backend, Sandbox, demo};

async fn list_orders(
    sandbox: &Sandbox,
    credential: &str,
    location_id: &str,
) -> Result<Vec<String>, tonic::Status> {
    let mut client = RestaurantClient::connect(sandbox.tools_grpc_url.clone())
        .await
        .expect("tool-service reachable");
    let mut request = tonic::Request::new(ListOrdersRequest {
        location_id: location_id.to_owned(),
        page: Some(Page {
            limit: 5,
            cursor: String::new(),
        }),
        ..ListOrdersRequest::default()
    });
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {credential}").parse().expect("ascii"),
    );
    let response = client.list_orders(request).await?.into_inner();
    Ok(response.orders.into_iter().map(|o| o.location_id).collect())
}

/// A token with the same claims, signed by a key the auth-service never issued.
fn self_signed(token: &str) -> String {
    let mut parts = token.split('.');
    let header: serde_json::Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(parts.next().unwrap_or_default())
            .unwrap_or_default(),
    )
    .unwrap_or_default();
    let claims: serde_json::Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD
            .decode(parts.next().unwrap_or_default())
            .unwrap_or_default(),
    )
    .unwrap_or_default();
    let pair = aws_lc_rs::signature::EcdsaKeyPair::generate_pkcs8(
        &aws_lc_rs::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &aws_lc_rs::rand::SystemRandom::new(),
    )
    .expect("key");
    let mut forged = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    forged.typ = header["typ"].as_str().map(str::to_owned);
    forged.kid = header["kid"].as_str().map(str::to_owned);
    jsonwebtoken::encode(
        &forged,
        &claims,
        &jsonwebtoken::EncodingKey::from_ec_der(pair.as_ref()),
    )
    .expect("signed")
}

async fn service_account_calls(backend: Backend) {
    let Some(sandbox) = Sandbox::start(backend).await else {
        return;
    };
    let (client_id, secret) = sandbox
        .service_account(
            "bistro-reporting",
            "orders.read location.read",
            demo::ORG_BISTRO,
            "analyst",
        )
        .await;
    let token = sandbox.client_credentials_token(&client_id, &secret).await;

    let locations = list_orders(&sandbox, &token, demo::LOC_LYON)
        .await
        .expect("allowed");
    assert!(!locations.is_empty() && locations.iter().all(|l| l == demo::LOC_LYON));
    let all = list_orders(&sandbox, &token, "").await.expect("allowed");
    assert!(all.iter().all(|l| {
        demo::LOCATIONS
            .iter()
            .any(|d| d.id == *l && d.organization_id == demo::ORG_BISTRO)
    }));

    // Another tenant: forbidden like a missing target.
    let status = list_orders(&sandbox, &token, demo::LOC_BROOKLYN)
        .await
        .expect_err("other tenant");
    assert_eq!(status.code(), tonic::Code::PermissionDenied);

    // Self-signed with the same claims and kid: refused.
    let status = list_orders(&sandbox, &self_signed(&token), demo::LOC_LYON)
        .await
        .expect_err("forged");
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
    // Garbage and a user's MCP token: refused.
    let status = list_orders(&sandbox, "not-a-token", demo::LOC_LYON)
        .await
        .expect_err("garbage");
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
    let user = sandbox.token(demo::USER_MANAGER).await;
    let status = list_orders(&sandbox, &user, demo::LOC_LYON)
        .await
        .expect_err("user token");
    assert_eq!(status.code(), tonic::Code::Unauthenticated);

    // The service token is not an MCP token.
    let (outcome, ..) = sandbox
        .call_outcome(&token, "chataigne_orders_list", serde_json::json!({}))
        .await;
    assert_eq!(outcome, chataigne_tests::Outcome::Unauthenticated);

    // Disabling the service client takes effect at the next call.
    sandbox
        .auth
        .set_client_enabled(&client_id, false)
        .await
        .expect("disabled");
    let status = list_orders(&sandbox, &token, demo::LOC_LYON)
        .await
        .expect_err("disabled");
    assert_eq!(status.code(), tonic::Code::Unauthenticated);
    sandbox.shutdown().await;
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Backend::Sqlite,
    postgres: Some(Backend::Postgres),
    run: |backend| (backend),
    tests: [
        service_accounts_call_the_typed_api = service_account_calls,
    ],
}
