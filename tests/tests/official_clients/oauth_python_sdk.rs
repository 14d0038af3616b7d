//! The official Python MCP SDK completes the whole OAuth flow against the
//! running stack without a person: 401 → protected-resource metadata →
//! authorization-server metadata → authorization code with PKCE (the test-only
//! auto-approval stands in for the sign-in and consent page) → token →
//! tools/call, with a pre-registered client and with dynamic registration.

use chataigne_tests::{Backend, Sandbox, SdkClients, demo};
use serde_json::Value;

async fn run(sandbox: &Sandbox, clients: &SdkClients, extra: &[&str]) -> (i32, Value, String) {
    let url = sandbox.mcp_url.clone();
    let mut args: Vec<&str> = vec![
        &url,
        "-",
        "chataigne_orders_list",
        r#"{"limit": 2}"#,
        "--oauth",
    ];
    args.extend_from_slice(extra);
    tokio::task::block_in_place(|| clients.pyclient(&clients.python, &args))
}

fn assert_completed(code: i32, out: &Value, stderr: &str) {
    assert_eq!(code, 0, "pyclient failed: {stderr}\n{out}");
    let oauth = &out["oauth"];
    assert_eq!(
        oauth["token"]["token_type"]
            .as_str()
            .map(str::to_lowercase)
            .as_deref(),
        Some("bearer"),
        "{out}"
    );
    assert_eq!(
        oauth["token"]["refresh_token"], true,
        "a refresh token is issued: {out}"
    );
    let steps = oauth["steps"].to_string();
    assert!(
        steps.contains("/authorize")
            && steps.contains("code_challenge")
            && steps.contains("resource"),
        "{steps}"
    );
    assert!(steps.contains("callback"), "{steps}");
    let orders = out["call"]["structuredContent"]["data"]["orders"]
        .as_array()
        .expect("orders");
    assert_eq!(orders.len(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_sdk_completes_the_oauth_flow() {
    let Some(clients) = SdkClients::find() else {
        return;
    };
    let sandbox = Sandbox::start_with(Backend::Sqlite, |config| {
        config.auth.oauth.auto_approve_user_for_tests = demo::USER_MANAGER.to_owned();
        config.auth.oauth.dynamic_registration = true;
    })
    .await
    .expect("sqlite sandbox");

    let (code, out, stderr) = run(
        &sandbox,
        &clients,
        &["--oauth-client-id", demo::DEMO_CLIENT_ID],
    )
    .await;
    assert_completed(code, &out, &stderr);

    let (code, out, stderr) = run(&sandbox, &clients, &[]).await;
    assert_completed(code, &out, &stderr);
    assert!(
        out["oauth"]["client_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("dyn_")),
        "dynamically registered: {out}"
    );
    sandbox.shutdown().await;
}
