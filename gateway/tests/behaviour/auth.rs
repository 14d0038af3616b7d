//! Authentication at the edge and the RFC 9728 metadata: 401 with the exact
//! challenge for missing and refused tokens, 503 (never 401) when the
//! auth-service is down or slow, and one metadata document per endpoint.

use crate::support;

use serde_json::{Value, json};
use support::{
    GOOGLE_HOST, GOOGLE_ORIGIN, Harness, PING, TOKEN_ALL, TOKEN_BROKEN, TOKEN_SLOW,
    closed_port_url, status_and_json,
};

/// The `scope` parameter of every challenge: the business read scopes.
fn scope_param() -> String {
    format!(
        "scope=\"{}\"",
        chataigne_common::scopes::suggested()
            .collect::<Vec<_>>()
            .join(" ")
    )
}

fn unauthenticated_post(h: &Harness) -> reqwest::RequestBuilder {
    h.client
        .post(&h.mcp)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json")
}

#[tokio::test]
async fn missing_token_is_401_with_the_resource_metadata_challenge() {
    let h = Harness::start().await;
    for request in [
        unauthenticated_post(&h),
        unauthenticated_post(&h).header("authorization", "Basic dXNlcjpwdw=="),
        unauthenticated_post(&h).header("authorization", "Bearer "),
    ] {
        let response = request.body(PING).send().await.unwrap();
        assert_eq!(response.status(), 401);
        assert_eq!(
            response.headers()["www-authenticate"],
            format!(
                "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp/v1\", {}",
                h.base,
                scope_param()
            )
        );
        assert_eq!(response.headers()["content-type"], "application/json");
        let body: Value = response.json().await.unwrap();
        assert!(body["error"]["message"].is_string(), "{body}");
    }
    assert!(h.auth_calls().is_empty(), "no token, no backend call");
    h.shutdown().await;
}

#[tokio::test]
async fn the_challenge_scope_is_what_the_tools_need_and_is_advertised() {
    let h = Harness::start().await;
    let response = unauthenticated_post(&h).body(PING).send().await.unwrap();
    let challenge = response.headers()["www-authenticate"]
        .to_str()
        .unwrap()
        .to_owned();
    let scope = challenge
        .split("scope=\"")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .unwrap();
    let doc = h.resource_metadata("/mcp/v1").await;
    let supported = doc["scopes_supported"].as_array().unwrap();
    for requested in scope.split(' ') {
        assert!(supported.contains(&json!(requested)), "{requested}");
        assert!(!requested.starts_with("admin."), "no admin scope suggested");
    }
    assert!(scope.split(' ').any(|s| s == "orders.read"));
    h.shutdown().await;
}

#[tokio::test]
async fn refused_token_is_401_invalid_token() {
    let h = Harness::start().await;
    let response = unauthenticated_post(&h)
        .bearer_auth("expired-or-forged")
        .body(PING)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 401);
    assert_eq!(
        response.headers()["www-authenticate"],
        format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource/mcp/v1\", {}, error=\"invalid_token\"",
            h.base,
            scope_param()
        )
    );
    let calls = h.auth_calls();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0], ("expired-or-forged".to_owned(), h.mcp.clone()));
    h.shutdown().await;
}

#[tokio::test]
async fn the_token_audience_is_the_endpoint_canonical_url() {
    let h = Harness::start().await;
    let (status, _) = h.rpc(TOKEN_ALL, serde_json::from_str(PING).unwrap()).await;
    assert_eq!(status, 200);
    let (status, _) = h
        .rpc_google(TOKEN_ALL, serde_json::from_str(PING).unwrap())
        .await;
    assert_eq!(status, 200);
    let resources: Vec<String> = h.auth_calls().into_iter().map(|(_, r)| r).collect();
    assert_eq!(
        resources,
        vec![h.mcp.clone(), format!("{GOOGLE_ORIGIN}/mcp/v1")]
    );
    // The google endpoint's challenge points at its own metadata.
    let response = unauthenticated_post(&h)
        .header("host", GOOGLE_HOST)
        .body(PING)
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.headers()["www-authenticate"],
        format!(
            "Bearer resource_metadata=\"{GOOGLE_ORIGIN}/.well-known/oauth-protected-resource/mcp/v1\", {}",
            scope_param()
        )
    );
    h.shutdown().await;
}

#[tokio::test]
async fn the_gateway_presents_its_credential_and_asks_for_one_calls_lifetime() {
    const CREDENTIAL: &str = "the gateway credential of the gateway tests";
    let h = Harness::start_with(|config| {
        config.gateway_credential = Some(secrecy::SecretString::from(CREDENTIAL));
        config.deadlines.analytics_ms = 700;
        config.deadlines.write_ms = 600;
    })
    .await;
    let presented = |valid_for_ms| (Some(CREDENTIAL.to_owned()), valid_for_ms);
    // A message that calls no tool: no backend sees its assertion, which
    // lives only as long as the authentication's own bound (500 ms).
    let (status, _) = h.rpc(TOKEN_ALL, serde_json::from_str(PING).unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(h.auth_presented(), vec![presented(500)]);
    // A call before the catalogue is known: the longest tool deadline.
    h.call_tool(TOKEN_ALL, "orders_list", json!({})).await;
    assert_eq!(h.auth_presented()[1..], [presented(700)]);
    // Then each call's own: a read, analytics, a write.
    for (tool, valid_for_ms) in [
        ("orders_list", 400),
        ("analytics_query", 700),
        ("order_status_update", 600),
    ] {
        h.call_tool(TOKEN_ALL, tool, json!({})).await;
        assert_eq!(
            h.auth_presented().last(),
            Some(&presented(valid_for_ms)),
            "{tool}"
        );
    }
    h.shutdown().await;
    // Without one configured, none is presented.
    let h = Harness::start().await;
    let (status, _) = h.rpc(TOKEN_ALL, serde_json::from_str(PING).unwrap()).await;
    assert_eq!(status, 200);
    assert_eq!(h.auth_presented(), vec![(None, 500)]);
    h.shutdown().await;
}

/// The answer to a request refused because the auth-service is down: a
/// JSON-RPC error to the request's own id (HTTP 200, never a 5xx a client
/// would drop, never a 401 that would sign the user out), carrying the
/// Chataigne code and the request id.
fn assert_dependency_refusal(status: u16, body: &Value, rpc_code: i64) {
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["id"], 1, "{body}");
    assert_eq!(body["error"]["code"], rpc_code, "{body}");
    assert_eq!(body["error"]["data"]["code"], "MCP_DEPENDENCY_UNAVAILABLE");
    assert_eq!(body["error"]["data"]["retryable"], true);
    assert!(
        body["error"]["data"]["request_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("req_")),
        "{body}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_auth_service_is_answered_to_the_request_not_401() {
    let down = closed_port_url().await;
    let h = Harness::start_with(|config| config.auth_service_url = down).await;
    // Paused clock: the refused connection is answered without waiting out
    // the 500 ms auth deadline.
    let started = tokio::time::Instant::now();
    let (status, body) = status_and_json(h.post(TOKEN_ALL).body(PING).send().await.unwrap()).await;
    assert_dependency_refusal(status, &body, -32603);
    assert!(started.elapsed() < std::time::Duration::from_millis(500));
    // The google profile gets the platform's service-unavailable code.
    let (status, body) = h
        .rpc_google(TOKEN_ALL, serde_json::from_str(PING).unwrap())
        .await;
    assert_dependency_refusal(status, &body, -32502);
    // A notification has no id to answer: the HTTP status says it.
    let notification = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let response = h.post(TOKEN_ALL).body(notification).send().await.unwrap();
    assert_eq!(response.status(), 503);
    h.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_slow_or_failing_auth_service_is_answered_as_unavailable() {
    let h = Harness::start().await;
    for token in [TOKEN_SLOW, TOKEN_BROKEN] {
        // Paused clock: answered at the auth deadline at the latest, never
        // after the slow fake's late answer.
        let started = tokio::time::Instant::now();
        let (status, body) = status_and_json(h.post(token).body(PING).send().await.unwrap()).await;
        assert_dependency_refusal(status, &body, -32603);
        assert!(
            started.elapsed() < support::SLOW_AUTH_ANSWERS_AFTER,
            "{token}"
        );
        assert!(
            !body.to_string().contains("exploded"),
            "no backend detail leaks"
        );
    }
    h.shutdown().await;
}

#[tokio::test]
async fn protected_resource_metadata_per_endpoint() {
    let h = Harness::start_with(|config| {
        config.endpoints.push(chataigne_gateway::EndpointConfig {
            path: "/mcp/beta".to_owned(),
            ..Default::default()
        });
    })
    .await;
    for path in ["/mcp/v1", "/mcp/v2", "/mcp/beta"] {
        let response = h
            .get_public(&format!("/.well-known/oauth-protected-resource{path}"))
            .await;
        assert_eq!(response.status(), 200, "{path}");
        assert_eq!(response.headers()["content-type"], "application/json");
        let doc: Value = response.json().await.unwrap();
        assert_eq!(doc["resource"], format!("{}{path}", h.base));
        assert_eq!(
            doc["authorization_servers"],
            json!(["https://auth.example.test"])
        );
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        let scopes = doc["scopes_supported"].as_array().unwrap();
        assert!(scopes.contains(&json!("orders.read")));
        assert_eq!(scopes.len(), chataigne_common::scopes::public().count());
        assert!(
            !scopes
                .iter()
                .any(|s| s.as_str().is_some_and(|s| s.starts_with("admin.")))
        );
        assert!(doc["resource_name"].is_string());
    }
    // The same path on the google host names the google resource.
    let doc: Value = h
        .get_public_with(
            "/.well-known/oauth-protected-resource/mcp/v1",
            &[("host", GOOGLE_HOST)],
        )
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(doc["resource"], format!("{GOOGLE_ORIGIN}/mcp/v1"));
    let missing = h
        .get_public("/.well-known/oauth-protected-resource/mcp/v9")
        .await;
    assert_eq!(missing.status(), 404);
    h.shutdown().await;
}

#[tokio::test]
async fn authorization_servers_are_omitted_when_unknown() {
    let h = Harness::start_with(|config| config.authorization_server = None).await;
    let doc = h.resource_metadata("/mcp/v1").await;
    assert!(doc.get("authorization_servers").is_none(), "{doc}");
    h.shutdown().await;
}

#[tokio::test]
async fn health_and_readiness_live_on_the_internal_listener_only() {
    let h = Harness::start().await;
    let health = h.get_internal("/healthz").await;
    assert_eq!(health.status(), 200);
    let ready = h.get_internal("/readyz").await;
    assert_eq!(ready.status(), 200);
    for path in ["/healthz", "/readyz"] {
        let public = h.get_public(path).await;
        assert_eq!(public.status(), 404, "{path} on the public listener");
    }
    h.shutdown().await;

    let down = closed_port_url().await;
    let h = Harness::start_with(|config| config.tool_service_url = down).await;
    let ready = h.get_internal("/readyz").await;
    assert_eq!(ready.status(), 503);
    h.shutdown().await;

    let down = closed_port_url().await;
    let h = Harness::start_with(|config| config.auth_service_url = down).await;
    let ready = h.get_internal("/readyz").await;
    assert_eq!(ready.status(), 503);
    h.shutdown().await;
}

#[tokio::test]
async fn two_authorization_headers_are_400_and_no_token_is_read() {
    let h = Harness::start().await;
    let good = format!("Bearer {TOKEN_ALL}");
    for second in [good.as_str(), "Bearer other-token", "Basic dXNlcjpwdw=="] {
        let response = unauthenticated_post(&h)
            .header("authorization", good.as_str())
            .header("authorization", second)
            .body(PING)
            .send()
            .await
            .unwrap();
        let (status, body) = status_and_json(response).await;
        assert_eq!(status, 400, "{second}: {body}");
        assert_eq!(body["error"]["code"], -32600, "{body}");
    }
    assert!(h.auth_calls().is_empty(), "no token was read");
    h.shutdown().await;
}

#[tokio::test]
async fn only_the_bearer_scheme_with_a_token68_is_read() {
    let h = Harness::start().await;
    for refused in [
        format!("Token {TOKEN_ALL}"),
        format!("Bearer\t{TOKEN_ALL}"),
        format!("Bearer {TOKEN_ALL} extra"),
        format!("Bearer \"{TOKEN_ALL}\""),
        format!("Bearer {TOKEN_ALL},x"),
    ] {
        let response = unauthenticated_post(&h)
            .header("authorization", refused.as_str())
            .body(PING)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 401, "{refused:?}");
    }
    assert!(h.auth_calls().is_empty(), "never sent to the auth-service");
    for accepted in [
        format!("bearer {TOKEN_ALL}"),
        format!("BEARER  {TOKEN_ALL}"),
    ] {
        let response = unauthenticated_post(&h)
            .header("authorization", accepted.as_str())
            .body(PING)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{accepted:?}");
    }
    h.shutdown().await;
}
