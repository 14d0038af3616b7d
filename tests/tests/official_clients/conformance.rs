//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! run scenario by scenario through `tests/clients/conformance.sh`) against
//! the running stack, with a demo manager's token: the whole 2025-11-25
//! requirement set on both engines (the schema-validating 0.2 alpha and the
//! stable 0.1 release), every scenario run, those that need the reference
//! server's fixtures expected to fail, each with the reason it cannot apply
//! here; plus the session-lifecycle scenario the alpha added after the
//! release. And the alpha's whole 2026-07-28 server set against `/mcp/v2`.

use std::collections::BTreeMap;
use std::process::Command;

use chataigne_tests::{SdkClients, demo};

/// Scenarios of both revisions' sets that exercise fixtures of the SDK's
/// reference ("everything") server, not transport or lifecycle rules, with
/// why each cannot pass here. This server declares only the `tools`
/// capability and serves the product catalogue, so each fails with "method
/// not found" or "unknown tool" by design.
const FIXTURES: &[(&str, &str)] = &[
    (
        "completion-complete",
        "`completion/complete` on fixture prompts: no `completions` capability",
    ),
    ("prompts-list", "fixture prompts: no `prompts` capability"),
    (
        "prompts-get-simple",
        "fixture prompts: no `prompts` capability",
    ),
    (
        "prompts-get-with-args",
        "fixture prompts: no `prompts` capability",
    ),
    (
        "prompts-get-embedded-resource",
        "fixture prompts: no `prompts` capability",
    ),
    (
        "prompts-get-with-image",
        "fixture prompts: no `prompts` capability",
    ),
    (
        "resources-read-text",
        "reads the reference server's fixture resource; this server's resources are its views",
    ),
    (
        "resources-read-binary",
        "reads the reference server's fixture resource; this server's resources are its views",
    ),
    (
        "resources-templates-read",
        "fixture resource templates: this server lists no resource template",
    ),
    (
        "tools-call-simple-text",
        "calls the reference server's `test_simple_text` tool; product tool results are covered by the gateway and client tests",
    ),
    (
        "tools-call-image",
        "calls the reference server's `test_image_content` tool",
    ),
    (
        "tools-call-audio",
        "calls the reference server's `test_audio_content` tool",
    ),
    (
        "tools-call-embedded-resource",
        "calls the reference server's `test_embedded_resource` tool",
    ),
    (
        "tools-call-mixed-content",
        "calls the reference server's `test_multiple_content_types` tool",
    ),
    (
        "tools-call-error",
        "calls the reference server's `test_error_handling` tool; product tool errors are covered by the gateway and client tests",
    ),
    (
        "tools-call-with-progress",
        "calls the reference server's `test_tool_with_progress` tool; this server sends no progress notifications",
    ),
];

/// The 2025-11-25 requirement set's own fixture scenarios.
const FIXTURES_2025: &[(&str, &str)] = &[
    (
        "logging-set-level",
        "`logging/setLevel`: no `logging` capability",
    ),
    (
        "tools-call-with-logging",
        "log notifications during a fixture tool call: no `logging` capability, and a stateless JSON server sends no notifications",
    ),
    (
        "resources-subscribe",
        "resource subscriptions: the `resources` capability offers none (the views change only with a deployment)",
    ),
    (
        "resources-unsubscribe",
        "resource subscriptions: the `resources` capability offers none (the views change only with a deployment)",
    ),
    (
        "tools-call-sampling",
        "a fixture tool that makes a sampling request to the client; this server makes no server-to-client requests",
    ),
    (
        "tools-call-elicitation",
        "a fixture tool that elicits input from the client; this server makes no server-to-client requests",
    ),
    (
        "elicitation-sep1034-defaults",
        "a fixture tool that elicits input with defaults; this server makes no server-to-client requests",
    ),
    (
        "elicitation-sep1330-enums",
        "a fixture tool that elicits enum input; this server makes no server-to-client requests",
    ),
];

/// The scenarios of a revision's set expected to fail, with their reason.
fn not_applicable(own: &[(&'static str, &'static str)]) -> Vec<(&'static str, &'static str)> {
    FIXTURES.iter().chain(own).copied().collect()
}

/// Scenarios every run must pass (the transport and lifecycle rules).
const MUST_PASS: &[&str] = &[
    "server-initialize",
    "ping",
    "tools-list",
    "resources-list",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
];

/// One run of `conformance.sh`: its output, the verdict of each scenario
/// (PASS, PASS*, XPASS, XFAIL or FAIL) and the counts of its last line.
struct Run {
    label: String,
    output: String,
    verdicts: BTreeMap<String, String>,
    passed: u32,
    failed: u32,
}

fn run(clients: &SdkClients, url: &str, token: &str, label: &str, options: &[&str]) -> Run {
    let output = Command::new("timeout")
        .arg("900")
        .arg("bash")
        .arg(&clients.conformance)
        .arg(url)
        .args(["--token", token, "--clients"])
        .arg(&clients.dir)
        .args(options)
        .output()
        .expect("conformance.sh runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let text = format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let verdicts = stdout
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let verdict = words.next()?;
            let scenario = words.next()?;
            ["PASS", "PASS*", "XPASS", "XFAIL", "FAIL"]
                .contains(&verdict)
                .then(|| (scenario.to_owned(), verdict.to_owned()))
        })
        .collect();
    // Last line of stdout: "conformance: N passed, M failed".
    let summary = stdout
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("conformance: ").map(str::to_owned))
        .unwrap_or_default();
    let count = |suffix: &str| -> Option<u32> {
        summary
            .split(", ")
            .find_map(|part| part.strip_suffix(suffix))
            .and_then(|n| n.trim().parse().ok())
    };
    Run {
        label: label.to_owned(),
        passed: count(" passed").unwrap_or(0),
        failed: count(" failed").unwrap_or(u32::MAX),
        verdicts,
        output: text,
    }
}

fn reasons(not_applicable: &[(&str, &str)]) -> String {
    not_applicable
        .iter()
        .map(|(scenario, reason)| format!("  {scenario}: {reason}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_conformance_suite_passes() {
    let Some((clients, sandbox)) = SdkClients::with_sqlite_sandbox().await else {
        return;
    };
    let token = sandbox.token(demo::USER_MANAGER).await;
    let url = sandbox.mcp_url.clone();

    let mut required = vec!["--suite", "required"];
    let not_applicable = not_applicable(FIXTURES_2025);
    for (scenario, _) in &not_applicable {
        required.extend(["--xfail", scenario]);
    }
    let stable = [&required[..], &["--engine", "stable"]].concat();
    let runs = tokio::task::block_in_place(|| {
        vec![
            run(
                &clients,
                &url,
                &token,
                "2025-11-25 requirement set, alpha engine",
                &required,
            ),
            run(
                &clients,
                &url,
                &token,
                "2025-11-25 requirement set, stable engine",
                &stable,
            ),
            run(
                &clients,
                &url,
                &token,
                "session lifecycle, alpha engine",
                &["--scenario", "server-session-lifecycle"],
            ),
        ]
    });
    sandbox.shutdown().await;

    for run in &runs {
        assert_eq!(
            run.failed, 0,
            "{}: unexpected failures\n{}",
            run.label, run.output
        );
        assert!(
            run.passed > 0,
            "{}: nothing passed\n{}",
            run.label,
            run.output
        );
    }
    let lifecycle = &runs[2];
    assert!(
        lifecycle
            .verdicts
            .get("server-session-lifecycle")
            .is_some_and(|v| v.starts_with("PASS")),
        "stateless lifecycle on the alpha engine\n{}",
        lifecycle.output
    );

    for run in &runs[..2] {
        for scenario in MUST_PASS {
            assert!(
                run.verdicts
                    .get(*scenario)
                    .is_some_and(|v| v.starts_with("PASS")),
                "{}: {scenario} did not pass\n{}",
                run.label,
                run.output
            );
        }
        // Every expected failure ran and failed: the whole requirement set was
        // exercised, none skipped, and the list holds no scenario that has
        // come to pass (which would then belong to the passing set).
        for (scenario, _) in &not_applicable {
            assert_eq!(
                run.verdicts.get(*scenario).map(String::as_str),
                Some("XFAIL"),
                "{}: {scenario} is listed as not applicable\n{}\nexpected failures:\n{}",
                run.label,
                run.output,
                reasons(&not_applicable)
            );
        }
        // And nothing else in the set failed, expectedly or not.
        for (scenario, verdict) in &run.verdicts {
            assert!(
                verdict.starts_with("PASS")
                    || not_applicable.iter().any(|(name, _)| name == scenario),
                "{}: {scenario} {verdict}\n{}",
                run.label,
                run.output
            );
        }
        // The set is exactly the two lists: a scenario a new suite release
        // adds has to be classified here.
        assert_eq!(
            run.verdicts.len(),
            not_applicable.len() + MUST_PASS.len(),
            "{}: the whole set ran\n{}",
            run.label,
            run.output
        );
    }
}

/// The 2026-07-28 server set's own fixture scenarios, and those that need
/// a capability this server does not declare.
const FIXTURES_2026: &[(&str, &str)] = &[
    (
        "json-schema-2020-12",
        "looks for the reference server's `json_schema_2020_12_tool`",
    ),
    (
        "input-required-result-basic-elicitation",
        "a fixture tool answering `input_required`; no tool here needs input from the client",
    ),
    (
        "input-required-result-basic-sampling",
        "a fixture tool answering `input_required` for sampling",
    ),
    (
        "input-required-result-basic-list-roots",
        "a fixture tool answering `input_required` for roots",
    ),
    (
        "input-required-result-request-state",
        "a fixture tool carrying `requestState` across rounds",
    ),
    (
        "input-required-result-multiple-input-requests",
        "a fixture tool asking for several inputs at once",
    ),
    (
        "input-required-result-multi-round",
        "a fixture tool needing several rounds",
    ),
    (
        "input-required-result-non-tool-request",
        "`input_required` on fixture prompts: no `prompts` capability",
    ),
    (
        "input-required-result-result-type",
        "the `resultType` of a fixture tool's `input_required` answer",
    ),
    (
        "input-required-result-tampered-state",
        "a fixture tool's `requestState`, then tampered",
    ),
    (
        "input-required-result-capability-check",
        "a fixture tool that needs a client capability",
    ),
];

/// Scenarios of which only the checks below need fixtures: every other
/// check of theirs must pass.
const MODERN_PARTLY_APPLICABLE: &[(&str, &[(&str, &str)])] = &[
    (
        "server-stateless",
        &[
            (
                "sep-2575-server-rejects-undeclared-capability",
                "calls the reference server's `test_missing_capability` tool (no tool here needs a client capability)",
            ),
            (
                "sep-2575-missing-capability-http-400",
                "the same fixture tool's -32021 answer",
            ),
            (
                "sep-2575-http-server-no-independent-requests-on-stream",
                "calls the reference server's `test_streaming_elicitation` tool",
            ),
            (
                "sep-2575-server-no-log-without-loglevel",
                "calls the reference server's `test_logging_tool` tool (this server sends no log notifications)",
            ),
        ],
    ),
    (
        "caching",
        &[
            (
                "sep-2549-prompts-list-caching-hints",
                "`prompts/list`: no `prompts` capability",
            ),
            (
                "sep-2549-resources-templates-list-caching-hints",
                "`resources/templates/list`: not served, this server lists no resource template",
            ),
        ],
    ),
];

/// 2026-07-28 scenarios every run must pass whole.
const MODERN_MUST_PASS: &[&str] = &[
    "tools-list",
    "resources-list",
    "server-sse-multiple-streams",
    "sep-2164-resource-not-found",
    "dns-rebinding-protection",
    "http-header-validation",
    "http-custom-header-server-validation",
    "input-required-result-missing-input-response",
    "input-required-result-unsupported-methods",
    "input-required-result-ignore-extra-params",
    "input-required-result-validate-input",
];

/// `(id, status)` of every check of `scenario` kept under `dir`.
fn kept_checks(dir: &std::path::Path, scenario: &str) -> Vec<(String, String)> {
    let scenario_dir = dir.join(scenario);
    let run = std::fs::read_dir(&scenario_dir)
        .unwrap_or_else(|_| panic!("{scenario} ran"))
        .filter_map(Result::ok)
        .map(|entry| entry.path().join("checks.json"))
        .find(|path| path.exists())
        .unwrap_or_else(|| panic!("{scenario} wrote its checks"));
    let checks: Vec<serde_json::Value> =
        serde_json::from_str(&std::fs::read_to_string(run).expect("checks")).expect("JSON");
    checks
        .iter()
        .map(|check| {
            (
                check["id"].as_str().unwrap_or_default().to_owned(),
                check["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The suite's whole 2026-07-28 server set against `/mcp/v2` (alpha engine,
/// every message validated against that revision's schema): stateless
/// requests, discovery, header validation, caching hints. Every scenario that
/// needs no fixture passes; of the two that mix both, exactly the fixture
/// checks fail; the rest are listed with their reason.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_conformance_suite_passes_on_2026_07_28() {
    let Some((clients, sandbox)) = SdkClients::with_sqlite_sandbox().await else {
        return;
    };
    let (url, token) = sandbox.modern_endpoint(demo::USER_MANAGER).await;
    let kept = chataigne_tests::TempDir::new("conformance-2026");
    let kept_dir = kept.0.to_string_lossy().into_owned();
    let mut options = vec![
        "--spec",
        "2026-07-28",
        "--suite",
        "all",
        "--keep",
        kept_dir.as_str(),
    ];
    let not_applicable = not_applicable(FIXTURES_2026);
    for (scenario, _) in &not_applicable {
        options.extend(["--xfail", scenario]);
    }
    for (scenario, _) in MODERN_PARTLY_APPLICABLE {
        options.extend(["--xfail", scenario]);
    }
    let run = tokio::task::block_in_place(|| {
        run(&clients, &url, &token, "2026-07-28 server set", &options)
    });
    sandbox.shutdown().await;

    assert_eq!(run.failed, 0, "unexpected failures\n{}", run.output);
    for scenario in MODERN_MUST_PASS {
        assert!(
            run.verdicts
                .get(*scenario)
                .is_some_and(|v| v.starts_with("PASS")),
            "{scenario} did not pass\n{}",
            run.output
        );
    }
    for (scenario, reason) in &not_applicable {
        assert_eq!(
            run.verdicts.get(*scenario).map(String::as_str),
            Some("XFAIL"),
            "{scenario} is listed as not applicable ({reason})\n{}",
            run.output
        );
    }
    for (scenario, fixture_checks) in MODERN_PARTLY_APPLICABLE {
        let checks = kept_checks(&kept.0, scenario);
        let passed = checks.iter().filter(|(_, s)| s == "SUCCESS").count();
        assert!(passed >= 3, "{scenario}: its own checks ran: {checks:?}");
        for (id, status) in &checks {
            if status == "FAILURE" {
                assert!(
                    fixture_checks.iter().any(|(fixture, _)| fixture == id),
                    "{scenario}: {id} failed and needs no fixture\n{}",
                    run.output
                );
            }
        }
        for (fixture, reason) in *fixture_checks {
            assert!(
                checks
                    .iter()
                    .any(|(id, status)| id == fixture && status == "FAILURE"),
                "{scenario}: {fixture} ({reason}) is listed as needing a fixture but did not fail: {checks:?}"
            );
        }
    }
    assert_eq!(
        run.verdicts.len(),
        not_applicable.len() + MODERN_PARTLY_APPLICABLE.len() + MODERN_MUST_PASS.len(),
        "the whole set ran and is classified here\n{}",
        run.output
    );
}
