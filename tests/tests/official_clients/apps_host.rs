//! The MCP Apps views in a real host: `tests/clients/apps_host.mjs` embeds
//! each `ui://` resource, read through the gateway, in a sandboxed frame of
//! headless Chromium under the CSP a host builds from its `_meta.ui.csp`,
//! speaks the host side through the official `AppBridge`
//! (`@modelcontextprotocol/ext-apps`) and forwards the view's `tools/call` to
//! the gateway with the user's token (through the v2 TypeScript client). On
//! both profiles, in French and English, at 360 and 1280 px: the board moves
//! exactly the order whose button was pressed, a reply sent twice (its first
//! answer lost) is one message, the chart shows the tool result's values; no
//! CSP violation, no console error, no horizontal scroll, no serious axe
//! finding. Screenshots are written under the target directory (`apps-host/`).

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use chataigne_gateway::Profile;
use chataigne_tests::{Backend, Sandbox, SdkClients, demo, envelope};
use serde_json::{Value, json};

const CONVERSATION: &str = "conv_01paris11_01";
/// The statuses an order can still move from.
const OPEN: [&str; 5] = [
    "received",
    "accepted",
    "preparing",
    "ready",
    "out_for_delivery",
];

/// The system's Chromium, found on `PATH` (`scripts/test.sh` installs it).
fn chromium() -> std::path::PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("chromium"))
        .find(|path| path.is_file())
        .expect("chromium on PATH (scripts/test.sh installs it)")
}

/// Every open order of the Paris location, by id, with its status.
async fn open_orders(sandbox: &Sandbox, token: &str) -> BTreeMap<String, String> {
    let mut found = BTreeMap::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut arguments = json!({"location_id": demo::LOC_PARIS, "statuses": OPEN, "limit": 50});
        if let Some(cursor) = &cursor {
            arguments["cursor"] = json!(cursor);
        }
        let result = sandbox
            .call_tool(token, "chataigne_orders_list", arguments)
            .await;
        let page = envelope(&result);
        for order in page["data"]["orders"].as_array().expect("orders") {
            found.insert(
                order["id"].as_str().unwrap().to_owned(),
                order["status"].as_str().unwrap().to_owned(),
            );
        }
        match page["meta"]["next_cursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => return found,
        }
    }
}

async fn status_of(sandbox: &Sandbox, token: &str, order_id: &str) -> String {
    let result = sandbox
        .call_tool(token, "chataigne_order_get", json!({"order_id": order_id}))
        .await;
    envelope(&result)["data"]["order"]["status"]
        .as_str()
        .expect("a status")
        .to_owned()
}

async fn message_count(sandbox: &Sandbox, token: &str) -> u64 {
    let result = sandbox
        .call_tool(
            token,
            "chataigne_conversation_get",
            json!({"conversation_id": CONVERSATION, "limit": 1}),
        )
        .await;
    envelope(&result)["data"]["conversation"]["message_count"]
        .as_u64()
        .expect("a message count")
}

fn plan(sandbox: &Sandbox, token: &str, name: &str) -> Value {
    let today = chrono::Utc::now().date_naive();
    let (from, to) = (today - chrono::Days::new(14), today - chrono::Days::new(1));
    json!({
        "url": sandbox.mcp_url,
        "token": token,
        "name": name,
        "locales": ["fr", "en"],
        "widths": [360, 1280],
        "views": [
            {
                "view": "board",
                "tool": "chataigne_orders_list",
                "arguments": {"location_id": demo::LOC_PARIS, "statuses": OPEN, "sort": "oldest_first", "limit": 12},
            },
            {
                "view": "conversation",
                "tool": "chataigne_conversation_get",
                "arguments": {"conversation_id": CONVERSATION},
                "reply": "Votre commande est prête",
            },
            {
                "view": "chart",
                "tool": "chataigne_analytics_query",
                "arguments": {
                    "location_id": demo::LOC_PARIS,
                    "metrics": ["revenue", "orders_count", "delivery_share"],
                    "date_from": from.to_string(),
                    "date_to": to.to_string(),
                },
            },
        ],
    })
}

fn run_host(clients: &SdkClients, plan: &Value, shots: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/apps_host.mjs");
    let output = tokio::task::block_in_place(|| {
        let mut child = Command::new(&clients.node22)
            .arg(&script)
            .arg("--clients")
            .arg(&clients.dir)
            .arg("--chromium")
            .arg(chromium())
            .arg("--out")
            .arg(shots)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("node runs");
        use std::io::Write;
        let mut stdin = child.stdin.take().expect("stdin");
        stdin
            .write_all(plan.to_string().as_bytes())
            .expect("plan written");
        drop(stdin);
        child.wait_with_output().expect("the host ends")
    });
    let stderr = String::from_utf8_lossy(&output.stderr);
    let report: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|_| panic!("a report; stderr: {stderr}"));
    assert!(
        output.status.success(),
        "the host was not driven: {}\n{stderr}",
        report["error"]
    );
    report
}

/// What the host saw of the server: the extension's resources and links.
fn check_discovery(report: &Value) {
    let capabilities = &report["server"]["capabilities"];
    assert!(capabilities["resources"].is_object(), "{capabilities}");
    assert!(
        capabilities["extensions"]["io.modelcontextprotocol/ui"].is_object(),
        "{capabilities}"
    );
    let links: BTreeMap<&str, &str> = report["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["name"].as_str().unwrap(),
                t["ui"]["resourceUri"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        links,
        BTreeMap::from([
            (
                "chataigne_analytics_query",
                "ui://chataigne/analytics-chart"
            ),
            ("chataigne_conversation_get", "ui://chataigne/conversation"),
            ("chataigne_orders_list", "ui://chataigne/order-board"),
        ])
    );
    let resources = report["resources"].as_array().unwrap();
    assert_eq!(resources.len(), 3, "{resources:?}");
    for resource in resources {
        assert_eq!(resource["mimeType"], "text/html;profile=mcp-app");
        assert_eq!(resource["listedMimeType"], "text/html;profile=mcp-app");
        assert_eq!(resource["contents"], 1);
        assert_eq!(
            resource["meta"]["ui"]["csp"],
            json!({"connectDomains": [], "resourceDomains": []})
        );
    }
}

/// What every render must show, whatever the view.
fn check_render(render: &Value) {
    let at = format!(
        "{} {} {} {}",
        render["name"], render["view"], render["locale"], render["width"]
    );
    assert_eq!(render["initialized"], true, "{at}");
    assert_eq!(
        render["html_lang"], render["locale"],
        "{at}: the host's language"
    );
    assert_eq!(render["csp_violations"], json!([]), "{at}");
    assert_eq!(render["console_errors"], json!([]), "{at}");
    assert!(
        render["overflow"].as_i64().unwrap() <= 0,
        "{at}: scrolls sideways"
    );
    assert_eq!(render["small"], json!([]), "{at}: touch targets");
    let serious: Vec<&Value> = render["axe"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["impact"] == "serious" || v["impact"] == "critical")
        .collect();
    assert!(serious.is_empty(), "{at}: {serious:?}");
    assert!(
        !render["sizes"].as_array().unwrap().is_empty(),
        "{at}: the view reports its size"
    );
    assert!(
        Path::new(render["screenshot"].as_str().unwrap()).exists(),
        "{at}"
    );
}

/// The chart's bars are the tool result's values, metric by metric.
fn check_chart(render: &Value) {
    let data = &envelope(&render["result"])["data"];
    let chart = &render["chart"];
    let bars = chart["bars"].as_array().unwrap();
    let metrics = data["metrics"].as_array().unwrap();
    let buckets = data["buckets"].as_array().unwrap();
    assert_eq!(bars.len(), metrics.len() * buckets.len());
    for metric in metrics {
        let metric = metric.as_str().unwrap();
        for bucket in buckets {
            let raw = &bucket["values"][metric];
            let expected = match raw.get("amount_minor") {
                Some(minor) => minor.as_f64().unwrap() / 100.0,
                None => raw.as_f64().unwrap(),
            };
            let bar = bars
                .iter()
                .find(|b| b["metric"] == metric && b["start"] == bucket["start"])
                .unwrap_or_else(|| panic!("{metric} {}", bucket["start"]));
            assert!(
                (bar["value"].as_f64().unwrap() - expected).abs() < 1e-9,
                "{metric} {}: {bar} against {raw}",
                bucket["start"]
            );
            if let Some(display) = raw.get("display") {
                assert!(
                    chart["cells"].as_array().unwrap().contains(display),
                    "{display} shown"
                );
            }
        }
    }
    let captions = chart["captions"].to_string();
    assert!(captions.contains("(EUR)"), "the currency: {captions}");
    assert!(captions.contains("(%)"), "the unit: {captions}");
    let revenue = if render["locale"] == "fr" {
        "chiffre d'affaires"
    } else {
        "revenue"
    };
    assert!(captions.contains(revenue), "the label: {captions}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_views_work_in_a_real_host_on_both_profiles_languages_and_widths() {
    let Some(clients) = SdkClients::find() else {
        return;
    };
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("apps-host");
    for (name, profile) in [("default", Profile::Default), ("google", Profile::Google)] {
        let sandbox = Sandbox::start_with(Backend::Sqlite, |config| {
            config.gateway.endpoints[0].profile = profile;
        })
        .await
        .expect("sqlite sandbox");
        let token = sandbox.token(demo::USER_MANAGER).await;
        let before = open_orders(&sandbox, &token).await;
        let messages_before = message_count(&sandbox, &token).await;

        let report = run_host(&clients, &plan(&sandbox, &token, name), &shots);
        check_discovery(&report);
        assert!(
            !report["control_violations"].as_array().unwrap().is_empty(),
            "a view that loads from elsewhere is refused and reported: {}",
            report["control_violations"]
        );
        let renders = report["renders"].as_array().unwrap();
        assert_eq!(renders.len(), 3 * 2 * 2, "every view, language and width");

        let mut moved: BTreeMap<String, String> = BTreeMap::new();
        let mut replies = 0;
        for render in renders {
            check_render(render);
            match render["view"].as_str().unwrap() {
                "board" => {
                    let board = &render["board"];
                    assert_eq!(board["refusal"], Value::Null, "{board}");
                    assert_eq!(board["status_after"], board["next"], "{board}");
                    assert!(board["cards"].as_u64().unwrap() > 0);
                    moved.insert(
                        board["order_id"].as_str().unwrap().to_owned(),
                        board["status_after"].as_str().unwrap().to_owned(),
                    );
                }
                "conversation" => {
                    let conversation = &render["conversation"];
                    let sends = conversation["sends"].as_array().unwrap();
                    assert_eq!(sends.len(), 2, "{conversation}");
                    assert_eq!(
                        sends[0]["idempotency_key"], sends[1]["idempotency_key"],
                        "the retry reuses the reply's key"
                    );
                    assert_eq!(envelope(&sends[1]["result"])["meta"]["replayed"], true);
                    assert_eq!(conversation["outcome"], "replayed", "{conversation}");
                    assert_eq!(conversation["shown"], 1, "{conversation}");
                    replies += 1;
                }
                "chart" => check_chart(render),
                other => panic!("unexpected view {other}"),
            }
        }

        // Through the API: exactly the pressed orders moved, each to the
        // status its card showed last; one message per reply.
        let after = open_orders(&sandbox, &token).await;
        for (id, status) in &before {
            let now = match after.get(id) {
                Some(now) => now.clone(),
                None => status_of(&sandbox, &token, id).await,
            };
            match moved.get(id) {
                Some(expected) => assert_eq!(&now, expected, "{id} moved"),
                None => assert_eq!(&now, status, "{id} did not move"),
            }
        }
        assert!(!moved.is_empty());
        assert_eq!(
            message_count(&sandbox, &token).await,
            messages_before + replies,
            "each reply sent twice is one message"
        );
        sandbox.shutdown().await;
    }
}

/// A view is listed and readable for a caller who sees at least one tool
/// that links it, on both endpoints; any other URI, or one the caller's
/// scopes hide, is not found, the same way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_is_listed_and_read_only_by_whoever_sees_a_linked_tool() {
    let sandbox = Sandbox::start(Backend::Sqlite)
        .await
        .expect("sqlite sandbox");
    let analyst = sandbox
        .token_with(demo::USER_MANAGER, &["analytics.read"])
        .await;
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/list"});
    let (status, listed) = sandbox.mcp(&analyst, list.clone()).await;
    assert_eq!(status, 200, "{listed}");
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .map(|r| r["uri"].as_str().unwrap())
        .collect();
    assert_eq!(uris, ["ui://chataigne/analytics-chart"]);
    let read = |uri: &str| json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": uri}});
    let (_, chart) = sandbox
        .mcp(&analyst, read("ui://chataigne/analytics-chart"))
        .await;
    let contents = &chart["result"]["contents"];
    assert_eq!(contents.as_array().map(Vec::len), Some(1), "{chart}");
    assert_eq!(contents[0]["mimeType"], "text/html;profile=mcp-app");
    assert!(
        contents[0]["text"]
            .as_str()
            .unwrap()
            .starts_with("<!DOCTYPE html>")
    );
    for hidden in ["ui://chataigne/order-board", "ui://chataigne/nothing"] {
        let (status, refused) = sandbox.mcp(&analyst, read(hidden)).await;
        assert_eq!(status, 200);
        assert_eq!(refused["error"]["code"], -32002, "{refused}");
        assert_eq!(refused["error"]["data"]["uri"], hidden);
    }
    let manager = sandbox.token(demo::USER_MANAGER).await;
    let (_, all) = sandbox.mcp(&manager, list).await;
    assert_eq!(all["result"]["resources"].as_array().map(Vec::len), Some(3));
    let (_, board) = sandbox
        .mcp(&manager, read("ui://chataigne/order-board"))
        .await;
    assert_eq!(
        board["result"]["contents"][0]["uri"],
        "ui://chataigne/order-board"
    );
    sandbox.shutdown().await;
}
