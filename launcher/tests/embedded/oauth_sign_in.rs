//! Any MCP client signs in to the embedded stack on its own: the official
//! TypeScript SDK's OAuth client provider registers itself (dynamic
//! registration, read scopes only), a person signs in and allows on the
//! pages, and the client calls a tool; production defaults stay closed.

use std::path::Path;
use std::process::Command;

use chataigne::StackConfig;
use chataigne_common::demo::DEMO_PASSWORD;
use chataigne_tests::{SdkClients, TempDir};

const MANAGER_EMAIL: &str = "camille.martin@bistro.example";

#[test]
fn the_typescript_sdk_signs_in_without_a_registered_client_and_calls_a_tool() {
    let Some(clients) = SdkClients::find() else {
        return;
    };
    let data = TempDir::new("oauth-sign-in");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stack = runtime
        .block_on(chataigne::start(StackConfig::embedded(&data.0)))
        .expect("the embedded stack starts");
    let metadata: serde_json::Value = runtime.block_on(async {
        reqwest::get(format!(
            "{}/.well-known/oauth-authorization-server",
            stack.auth_http_url
        ))
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
    });
    assert_eq!(
        metadata["registration_endpoint"],
        format!("{}/register", stack.auth_http_url),
        "{metadata}"
    );

    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/clients/ts_oauth_session.mjs");
    // The stack runs on the runtime's worker threads meanwhile.
    let output = Command::new(&clients.node22)
        .arg(&script)
        .arg("--clients")
        .arg(&clients.dir)
        .args([
            stack.mcp_url.as_str(),
            MANAGER_EMAIL,
            DEMO_PASSWORD,
            "chataigne_orders_list",
            r#"{"limit": 2}"#,
        ])
        .output()
        .expect("node runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the sign-in failed: {stderr}");
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(
        report["client_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("dyn_")),
        "registered on its own: {report}"
    );
    assert_eq!(report["consent"]["account"], MANAGER_EMAIL, "{report}");
    let scopes: Vec<&str> = report["scope"]
        .as_str()
        .unwrap_or_default()
        .split(' ')
        .collect();
    assert!(scopes.contains(&"orders.read"), "{report}");
    assert!(
        scopes
            .iter()
            .all(|scope| !chataigne_common::scopes::is_write(scope)),
        "a dynamically registered client gets read scopes only: {report}"
    );
    let orders = report["call"]["structuredContent"]["data"]["orders"]
        .as_array()
        .unwrap_or_else(|| panic!("orders: {report}"));
    assert_eq!(orders.len(), 2, "{report}");
    runtime.block_on(stack.shutdown()).unwrap();
}

#[test]
fn only_the_embedded_stack_opens_registration_loopback_documents_and_demo_redirects() {
    let defaults = chataigne_auth::Config::default().oauth;
    assert!(!defaults.dynamic_registration);
    assert!(!defaults.client_metadata_allow_http_loopback);
    assert!(!defaults.demo_client_any_loopback_redirect);
    let data = TempDir::new("oauth-defaults");
    let embedded = StackConfig::embedded(&data.0).auth.oauth;
    assert!(embedded.dynamic_registration);
    assert!(embedded.client_metadata_allow_http_loopback);
    assert!(embedded.demo_client_any_loopback_redirect);
    assert!(
        embedded.client_trust.trusted_client_ids.is_empty(),
        "registered-on-the-fly clients stay untrusted: no write scopes"
    );
}
