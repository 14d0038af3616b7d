//! `/mcp/v1` is frozen: its `initialize` result and a manager's `tools/list`,
//! on the default and the Connected Apps profiles, are compared byte for
//! byte with the golden files in `tests/golden/v1/`. A change to `/mcp/v2`,
//! to a tool or to the catalogue cannot alter v1 unnoticed; a deliberate
//! change to v1 rewrites the files with `CHATAIGNE_UPDATE_GOLDEN=1`.

use std::path::PathBuf;

use chataigne_gateway::{EndpointConfig, Profile};
use chataigne_tests::{Backend, Sandbox, demo};
use serde_json::json;

const PLATFORM_HOST: &str = "platform.golden.test";

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("golden/v1")
        .join(name)
}

/// Compares `actual` with the golden file `name`, or rewrites it on request.
fn compare(name: &str, actual: &str) -> Option<String> {
    let path = golden(name);
    if std::env::var_os("CHATAIGNE_UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, actual).expect("golden file written");
        return None;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "{} is missing: run with CHATAIGNE_UPDATE_GOLDEN=1",
            path.display()
        )
    });
    (expected != actual).then(|| {
        format!(
            "{name} differs from its golden file {} (a deliberate change to /mcp/v1 \
             rewrites it with CHATAIGNE_UPDATE_GOLDEN=1)\n--- expected\n{expected}\n--- actual\n{actual}",
            path.display()
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v1_initialize_and_tools_list_match_their_golden_files_byte_for_byte() {
    let sandbox = Sandbox::start_with(Backend::Sqlite, |config| {
        config.gateway.endpoints.push(EndpointConfig {
            path: "/mcp/v1".to_owned(),
            profile: Profile::Google,
            hosts: vec![PLATFORM_HOST.to_owned()],
            ..EndpointConfig::default()
        });
    })
    .await
    .expect("sqlite sandbox");
    let token = sandbox.token(demo::USER_MANAGER).await;
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "golden", "version": "1"}}});
    let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
    let mut differences = Vec::new();
    for (profile, host) in [("default", None), ("connected_apps", Some(PLATFORM_HOST))] {
        let initialized = sandbox.mcp_text(&token, host, &initialize).await;
        differences.extend(compare(&format!("initialize.{profile}.json"), &initialized));
        let listed = sandbox.mcp_text(&token, host, &list).await;
        differences.extend(compare(
            &format!("tools_list.manager.{profile}.json"),
            &listed,
        ));
    }
    sandbox.shutdown().await;
    assert!(differences.is_empty(), "{}", differences.join("\n\n"));
}
