//! Metrics of the three services, scraped from their internal `/metrics`
//! after a few calls through the stack (besides each service's build info
//! and process metrics, and the gateway's HTTP request histogram): a success, a refused token, a missing
//! token, a rate-limited call, an unknown tool, two allowlist refusals, a
//! typed RPC with a bad credential and a refused OAuth token request; then a
//! call while the tool-service is down. Each shows up under the expected
//! bounded labels with the expected count, and no value a caller sent
//! (arguments, tokens, a tool name outside the catalogue, an authorization
//! code, a forwarded address) appears in any metrics output.

use chataigne_tests::envelope;
use std::collections::BTreeMap;

use chataigne_proto::tools::v1::{ListOrganizationsRequest, restaurant_client::RestaurantClient};
use chataigne_tests::demo::{DEMO_CLIENT_ID, USER_MANAGER};
use chataigne_tests::{Backend, Sandbox};
use serde_json::{Value, json};

const CANARY_ARGUMENT: &str = "loc_canaryargument4711";
const CANARY_TOKEN: &str = "canary-token-ba5e1e55";
const CANARY_TOOL: &str = "chataigne_canary_tool_0d5f";
const CANARY_CODE: &str = "canary-code-c0ffee";
const CANARY_CREDENTIAL: &str = "canary-credential-feed";
/// A documentation address (RFC 5737), outside the loopback allowlist.
const CANARY_ADDRESS: &str = "203.0.113.77";
const CANARIES: &[&str] = &[
    CANARY_ARGUMENT,
    CANARY_TOKEN,
    CANARY_TOOL,
    CANARY_CODE,
    CANARY_CREDENTIAL,
    CANARY_ADDRESS,
];

/// Every read tool may be called this often per minute in this test.
const READS_PER_MINUTE: u32 = 3;

async fn scrape(url: &str) -> String {
    let response = reqwest::get(url).await.expect("metrics reachable");
    assert_eq!(response.status(), 200, "{url}");
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    response.text().await.expect("metrics body")
}

/// The value of the sample `name{labels}` (exactly those labels), if any.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let wanted: BTreeMap<&str, &str> = labels.iter().copied().collect();
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .find_map(|line| {
            let (series, value) = line.rsplit_once(' ')?;
            let (metric, found) = match series.split_once('{') {
                Some((metric, rest)) => (metric, parse_labels(rest.strip_suffix('}')?)),
                None => (series, BTreeMap::new()),
            };
            (metric == name && found == wanted).then(|| value.parse().ok())?
        })
}

fn parse_labels(labels: &str) -> BTreeMap<&str, &str> {
    labels
        .split("\",")
        .filter(|pair| !pair.is_empty())
        .filter_map(|pair| {
            let (key, value) = pair.split_once("=\"")?;
            Some((key, value.trim_end_matches('"')))
        })
        .collect()
}

/// The sample names the expositions can have: each family's name, and for a
/// histogram its `_bucket`, `_count` and `_sum` series.
fn families(texts: &[&str]) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    for text in texts {
        for line in text.lines() {
            let Some(rest) = line.strip_prefix("# TYPE ") else {
                continue;
            };
            let mut words = rest.split_whitespace();
            let (Some(name), Some(kind)) = (words.next(), words.next()) else {
                continue;
            };
            names.insert(name.to_owned());
            if kind == "histogram" {
                for suffix in ["_bucket", "_count", "_sum"] {
                    names.insert(format!("{name}{suffix}"));
                }
            }
        }
    }
    names
}

/// The metric names (`chataigne_…`, `process_…`) a rule or dashboard file
/// mentions.
fn metric_names(text: &str) -> std::collections::BTreeSet<String> {
    let mut names = std::collections::BTreeSet::new();
    let bytes = text.as_bytes();
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        if word(bytes[i]) && (i == 0 || !word(bytes[i - 1])) {
            let start = i;
            while i < bytes.len() && word(bytes[i]) {
                i += 1;
            }
            let name = &text[start..i];
            if (name.starts_with("chataigne_") || name.starts_with("process_"))
                && name.len() > "process_".len()
            {
                names.insert(name.to_owned());
            }
        } else {
            i += 1;
        }
    }
    names
}

fn count(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    sample(text, name, labels).unwrap_or_else(|| panic!("no {name}{labels:?} in:\n{text}"))
}

async fn typed_call_with_bad_credential(sandbox: &Sandbox) -> tonic::Code {
    let mut client = RestaurantClient::connect(sandbox.tools_grpc_url.clone())
        .await
        .expect("tool-service reachable");
    let mut request = tonic::Request::new(ListOrganizationsRequest::default());
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {CANARY_CREDENTIAL}")
            .parse()
            .expect("ascii"),
    );
    client
        .list_organizations(request)
        .await
        .expect_err("a bad credential is refused")
        .code()
}

/// POSTs to the MCP endpoint as relayed by a trusted proxy for `forwarded`;
/// returns the status.
async fn forwarded_for(sandbox: &Sandbox, forwarded: &str) -> u16 {
    reqwest::Client::new()
        .post(&sandbox.mcp_url)
        .header("x-forwarded-for", forwarded)
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .await
        .expect("gateway reachable")
        .status()
        .as_u16()
}

/// POSTs a token request with an authorization code that was never issued;
/// returns the OAuth `error` code.
async fn refused_token_request(sandbox: &Sandbox) -> String {
    let response = reqwest::Client::new()
        .post(format!("{}/token", sandbox.auth_http_url))
        .form(&[
            ("grant_type", "authorization_code"),
            ("code", CANARY_CODE),
            ("client_id", DEMO_CLIENT_ID),
            ("redirect_uri", "http://127.0.0.1:9/callback"),
            (
                "code_verifier",
                "a-verifier-that-is-long-enough-0123456789abcdef",
            ),
        ])
        .send()
        .await
        .expect("auth-service reachable");
    assert!(response.status().is_client_error(), "{response:?}");
    let body: Value = response.json().await.expect("OAuth error body");
    body["error"].as_str().expect("error code").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_service_counts_calls_and_refusals_under_bounded_labels() {
    let sandbox = Sandbox::start_with(Backend::Sqlite, |config| {
        config.gateway.rate_limits.reads_per_minute = READS_PER_MINUTE;
        // The test client stands for a proxy: its X-Forwarded-For is believed.
        config.gateway.allowlist.trusted_proxies = vec!["127.0.0.1/32".parse().expect("cidr")];
    })
    .await
    .expect("sandbox");
    let gateway_metrics = format!("{}/metrics", sandbox.gateway_internal_url);
    let token = sandbox.token(USER_MANAGER).await;

    // A success.
    let result = sandbox
        .call_tool(&token, "chataigne_organizations_list", json!({}))
        .await;
    assert_ne!(result["isError"], true, "{result}");

    // A tool failure carrying a canary argument.
    let result = sandbox
        .call_tool(
            &token,
            "chataigne_location_get",
            json!({"location_id": CANARY_ARGUMENT}),
        )
        .await;
    assert_eq!(result["isError"], true, "{result}");
    let forbidden = envelope(&result)["data"]["error"]["code"]
        .as_str()
        .expect("error code")
        .to_owned();

    // Refused tokens: an invalid one, and none at all.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "chataigne_organizations_list", "arguments": {}}});
    let (status, _) = sandbox.mcp(CANARY_TOKEN, call.clone()).await;
    assert_eq!(status, 401);
    let (status, _) = sandbox.mcp("", call).await;
    assert_eq!(status, 401);

    // An unknown tool, named with a canary.
    let (status, body) = sandbox
        .mcp(
            &token,
            json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                   "params": {"name": CANARY_TOOL, "arguments": {"x": CANARY_ARGUMENT}}}),
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_i64()),
        (200, Some(-32602))
    );

    // The per-tool rate limit: one call more than the budget.
    let mut limited = 0;
    for _ in 0..=READS_PER_MINUTE {
        let result = sandbox
            .call_tool(&token, "chataigne_locations_list", json!({}))
            .await;
        if envelope(&result)["data"]["error"]["code"] == "MCP_RATE_LIMITED" {
            limited += 1;
        }
    }
    assert_eq!(limited, 1);

    // Allowlist refusals: an address outside the list, an unreadable entry.
    assert_eq!(forwarded_for(&sandbox, CANARY_ADDRESS).await, 403);
    assert_eq!(forwarded_for(&sandbox, "not-an-address").await, 403);

    // A typed RPC with a bad credential, and a refused OAuth token request.
    assert_eq!(
        typed_call_with_bad_credential(&sandbox).await,
        tonic::Code::Unauthenticated
    );
    let oauth_error = refused_token_request(&sandbox).await;

    let gateway = scrape(&gateway_metrics).await;
    let auth = scrape(&sandbox.auth_metrics_url).await;
    let tools = scrape(&sandbox.tools_metrics_url).await;

    // Gateway.
    let tool_call = "chataigne_gateway_tool_call_duration_seconds_count";
    let ok = [("tool", "chataigne_organizations_list"), ("outcome", "ok")];
    assert_eq!(count(&gateway, tool_call, &ok), 1.0);
    assert_eq!(
        count(
            &gateway,
            tool_call,
            &[("tool", "chataigne_location_get"), ("outcome", &forbidden)]
        ),
        1.0
    );
    assert_eq!(
        count(
            &gateway,
            tool_call,
            &[("tool", "unknown"), ("outcome", "invalid_params")]
        ),
        1.0
    );
    assert_eq!(
        count(
            &gateway,
            tool_call,
            &[
                ("tool", "chataigne_locations_list"),
                ("outcome", "MCP_RATE_LIMITED")
            ]
        ),
        1.0
    );
    assert!(
        gateway.contains(
            "chataigne_gateway_tool_call_duration_seconds_bucket{outcome=\"ok\",tool=\"chataigne_organizations_list\",le=\"30\"} 1"
        ),
        "{gateway}"
    );
    assert_eq!(
        count(
            &gateway,
            "chataigne_gateway_requests_total",
            // The message is read before the token: the method is known.
            &[("method", "tools/call"), ("outcome", "unauthenticated")]
        ),
        2.0
    );
    let auth_failures = "chataigne_gateway_auth_failures_total";
    assert_eq!(
        count(&gateway, auth_failures, &[("reason", "token_invalid")]),
        1.0
    );
    assert_eq!(
        count(&gateway, auth_failures, &[("reason", "missing_token")]),
        1.0
    );
    assert_eq!(
        count(
            &gateway,
            "chataigne_gateway_rate_limited_total",
            &[("limit", "tool"), ("tool", "chataigne_locations_list")]
        ),
        1.0
    );
    let refusals = "chataigne_gateway_allowlist_refusals_total";
    assert_eq!(
        count(&gateway, refusals, &[("reason", "address_not_allowed")]),
        1.0
    );
    assert_eq!(
        count(
            &gateway,
            refusals,
            &[("reason", "unreadable_forwarded_for")]
        ),
        1.0
    );
    assert_eq!(
        count(
            &gateway,
            "chataigne_gateway_dependency_errors_total",
            &[("dependency", "tool_service")]
        ),
        0.0
    );

    // Auth-service.
    let rpc = "chataigne_auth_rpc_duration_seconds_count";
    assert!(count(&auth, rpc, &[("rpc", "Authenticate"), ("outcome", "ok")]) >= 7.0);
    assert_eq!(
        count(
            &auth,
            rpc,
            &[("rpc", "Authenticate"), ("outcome", "MCP_UNAUTHENTICATED")]
        ),
        1.0
    );
    assert_eq!(
        count(
            &auth,
            "chataigne_auth_failures_total",
            &[("rpc", "Authenticate"), ("reason", "token_invalid")]
        ),
        1.0
    );
    assert!(
        auth.contains(
            "chataigne_auth_failures_total{reason=\"token_invalid\",rpc=\"ResolveAccess\"}"
        ) || auth
            .contains("chataigne_auth_failures_total{reason=\"token_invalid\",rpc=\"Authorize\"}"),
        "the typed RPC's credential is refused by the auth-service: {auth}"
    );
    assert_eq!(
        count(
            &auth,
            "chataigne_auth_oauth_errors_total",
            &[("endpoint", "/token"), ("error", &oauth_error)]
        ),
        1.0
    );
    assert!(count(&auth, "chataigne_auth_db_pool_max_connections", &[]) >= 1.0);
    assert!(count(&auth, "chataigne_auth_db_pool_connections", &[]) >= 1.0);

    // Tool-service.
    let calls = "chataigne_tools_tool_call_duration_seconds_count";
    assert_eq!(
        count(
            &tools,
            calls,
            &[
                ("tool", "chataigne_organizations_list"),
                ("surface", "mcp"),
                ("outcome", "ok")
            ]
        ),
        1.0
    );
    assert_eq!(
        count(
            &tools,
            calls,
            &[
                ("tool", "chataigne_location_get"),
                ("surface", "mcp"),
                ("outcome", &forbidden)
            ]
        ),
        1.0
    );
    assert_eq!(
        count(
            &tools,
            calls,
            &[
                ("tool", "chataigne_organizations_list"),
                ("surface", "grpc"),
                ("outcome", "MCP_UNAUTHENTICATED")
            ]
        ),
        1.0
    );
    assert!(count(&tools, "chataigne_tools_db_pool_max_connections", &[]) >= 1.0);
    // The gateway's catalogue fetches, timed like every RPC.
    assert!(
        count(
            &tools,
            "chataigne_tools_catalog_listing_duration_seconds_count",
            &[("outcome", "ok")]
        ) >= 1.0
    );

    // Public HTTP requests by method, route template and status (the
    // allowlist's refusals are counted by their own counter, before it).
    let http = "chataigne_gateway_http_request_duration_seconds_count";
    let mcp = |status| [("method", "POST"), ("path", "/mcp/v1"), ("status", status)];
    assert!(count(&gateway, http, &mcp("200")) >= 7.0, "{gateway}");
    assert_eq!(count(&gateway, http, &mcp("401")), 2.0);
    assert!(
        gateway.contains(
            "chataigne_gateway_http_request_duration_seconds_bucket{method=\"POST\",path=\"/mcp/v1\",status=\"401\",le=\"+Inf\"} 2"
        ),
        "{gateway}"
    );

    // Every service: its build info, and the process metrics.
    let build = [
        ("version", env!("CARGO_PKG_VERSION")),
        ("revision", chataigne_common::metrics::REVISION),
    ];
    for (prefix, text) in [
        ("chataigne_gateway", &gateway),
        ("chataigne_auth", &auth),
        ("chataigne_tools", &tools),
    ] {
        assert_eq!(count(text, &format!("{prefix}_build_info"), &build), 1.0);
        for family in [
            "process_cpu_seconds_total",
            "process_resident_memory_bytes",
            "process_virtual_memory_bytes",
            "process_open_fds",
            "process_max_fds",
            "process_threads",
            "process_start_time_seconds",
        ] {
            assert!(count(text, family, &[]) > 0.0, "{family} of {prefix}");
        }
    }

    // The chart's alerts and dashboard query only metrics the services
    // expose (a renamed metric would silently blind them).
    let exposed = families(&[&gateway, &auth, &tools]);
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for file in [
        "helm/chataigne/templates/prometheusrule.yaml",
        "helm/chataigne/dashboards/chataigne.json",
    ] {
        let text = std::fs::read_to_string(root.join(file)).expect(file);
        let used = metric_names(&text);
        assert!(used.len() >= 7, "{file}: {used:?}");
        for name in used {
            assert!(
                exposed.contains(&name),
                "{file} uses {name}, which no service exposes"
            );
        }
    }

    // Nothing a caller sent is a label value.
    for (service, text) in [("gateway", &gateway), ("auth", &auth), ("tools", &tools)] {
        for canary in CANARIES {
            assert!(!text.contains(canary), "{canary} in the {service} metrics");
        }
        assert!(!text.contains(&token), "a token in the {service} metrics");
    }

    // The tool-service down: a dependency error at the gateway.
    sandbox.stop_tool_service().await.expect("stopped");
    let result = sandbox
        .call_tool(&token, "chataigne_organizations_list", json!({}))
        .await;
    assert_eq!(
        envelope(&result)["data"]["error"]["code"],
        "MCP_DEPENDENCY_UNAVAILABLE",
        "{result}"
    );
    let gateway = scrape(&gateway_metrics).await;
    assert_eq!(
        count(
            &gateway,
            "chataigne_gateway_dependency_errors_total",
            &[("dependency", "tool_service")]
        ),
        1.0
    );
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_tool_service_serves_metrics_again() {
    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let token = sandbox.token(USER_MANAGER).await;
    sandbox.stop_tool_service().await.expect("stopped");
    assert!(reqwest::get(&sandbox.tools_metrics_url).await.is_err());
    sandbox.restart_tool_service().await.expect("restarted");
    let result = sandbox
        .call_tool(&token, "chataigne_organizations_list", json!({}))
        .await;
    assert_ne!(result["isError"], true, "{result}");
    let tools = scrape(&sandbox.tools_metrics_url).await;
    assert_eq!(
        count(
            &tools,
            "chataigne_tools_tool_call_duration_seconds_count",
            &[
                ("tool", "chataigne_organizations_list"),
                ("surface", "mcp"),
                ("outcome", "ok")
            ]
        ),
        1.0
    );
    sandbox.shutdown().await;
}
