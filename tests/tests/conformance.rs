//! The official MCP conformance suite (`@modelcontextprotocol/conformance`,
//! run through the shared `conformance.sh`) against the running stack, with a
//! demo manager's token: the generic server scenarios on both engines (the
//! 2025-11-25 schema-validating alpha and the stable release), and the whole
//! 2025-11-25 requirement set with the scenarios that need the reference
//! server's fixtures listed, each with the reason it cannot apply here.

use std::process::Command;

use chataigne_tests::{Backend, Sandbox, SdkClients, demo};

/// Scenarios of the 2025-11-25 requirement set that exercise fixtures of the
/// SDK's reference ("everything") server, not transport or lifecycle rules.
/// This server declares only the `tools` capability and serves the product
/// catalogue, so each of these fails with "method not found" or "unknown
/// tool" by design.
const NOT_APPLICABLE: &[&str] = &[
    // `completion/complete` on fixture prompts: no `completions` capability.
    "completion-complete",
    // `logging/setLevel` and log notifications during a call: no `logging`
    // capability; a stateless JSON server sends no notifications.
    "logging-set-level",
    "tools-call-with-logging",
    // Fixture prompts: no `prompts` capability.
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
    // Fixture resources and subscriptions: no `resources` capability.
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
    // Calls of the reference server's `test_*` tools (text, image, audio,
    // embedded resource, mixed content, error, progress); the product tools'
    // results and errors are covered by the gateway and end-to-end tests.
    "tools-call-simple-text",
    "tools-call-image",
    "tools-call-audio",
    "tools-call-embedded-resource",
    "tools-call-mixed-content",
    "tools-call-error",
    "tools-call-with-progress",
    // Fixture tools that make server-to-client requests (sampling,
    // elicitation) over an SSE stream; this server makes none.
    "tools-call-sampling",
    "tools-call-elicitation",
    "elicitation-sep1034-defaults",
    "elicitation-sep1330-enums",
];

/// One run of `conformance.sh`: its output and the counts of its last line.
struct Run {
    label: String,
    output: String,
    passed: u32,
    failed: u32,
}

fn run(clients: &SdkClients, url: &str, token: &str, label: &str, options: &[&str]) -> Run {
    let output = Command::new("timeout")
        .arg("600")
        .arg("bash")
        .arg(&clients.conformance)
        .arg(url)
        .args(["--token", token, "--clients"])
        .arg(&clients.dir)
        .args(options)
        .output()
        .expect("conformance.sh runs");
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    // Last line of stdout: "conformance: N passed, M failed".
    let summary = String::from_utf8_lossy(&output.stdout)
        .lines()
        .rev()
        .find_map(|line| line.strip_prefix("conformance: ").map(str::to_owned))
        .unwrap_or_default();
    let count = |suffix: &str| -> u32 {
        summary
            .split(", ")
            .find_map(|part| part.strip_suffix(suffix))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    };
    Run {
        label: label.to_owned(),
        passed: count(" passed"),
        failed: if summary.is_empty() {
            u32::MAX
        } else {
            count(" failed")
        },
        output: text,
    }
}

fn passed(run: &Run, scenario: &str) -> bool {
    run.output.lines().any(|line| {
        let mut words = line.split_whitespace();
        matches!(words.next(), Some("PASS" | "PASS*")) && words.next() == Some(scenario)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_official_conformance_suite_passes() {
    let Some(clients) = SdkClients::find() else {
        return;
    };
    let sandbox = Sandbox::start(Backend::Sqlite)
        .await
        .expect("sqlite sandbox");
    let token = sandbox.token(demo::USER_MANAGER).await;
    let url = sandbox.mcp_url.clone();

    let mut xfail = Vec::new();
    for name in NOT_APPLICABLE {
        xfail.extend(["--xfail", name]);
    }
    let mut required = vec!["--suite", "required"];
    required.extend(xfail);
    let runs = tokio::task::block_in_place(|| {
        vec![
            run(
                &clients,
                &url,
                &token,
                "generic, alpha engine",
                &["--suite", "generic"],
            ),
            run(
                &clients,
                &url,
                &token,
                "generic, stable engine",
                &["--suite", "generic", "--engine", "stable"],
            ),
            run(
                &clients,
                &url,
                &token,
                "2025-11-25 requirement set",
                &required,
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
        for scenario in ["server-initialize", "ping", "tools-list"] {
            assert!(
                passed(run, scenario),
                "{}: {scenario} did not pass\n{}",
                run.label,
                run.output
            );
        }
    }
    assert!(
        passed(&runs[0], "server-session-lifecycle"),
        "stateless lifecycle on the alpha engine\n{}",
        runs[0].output
    );
    assert!(
        passed(&runs[2], "server-sse-multiple-streams"),
        "{}",
        runs[2].output
    );
    // The fixture scenarios did run (reported as expected failures), so the
    // whole requirement set was exercised, not skipped.
    assert!(
        runs[2].output.contains("expected failures"),
        "{}",
        runs[2].output
    );
}
