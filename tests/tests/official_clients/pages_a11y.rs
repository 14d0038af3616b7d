//! The sign-in, wrong-password, consent, signed-out and error pages in the
//! system's Chromium (playwright-core) with axe-core, at 360 px and 1280 px,
//! in French and in English: no serious or critical violation, touch targets
//! of at least 44 px, a visible focus ring, the page in the browser's
//! language, the e-mail kept after a wrong password. Screenshots are written
//! under the target directory (`pages-a11y/`).

use std::path::Path;
use std::process::Command;

use chataigne_tests::{Backend, Sandbox, SdkClients, demo};
use serde_json::Value;

/// The system's Chromium, found on `PATH` (`scripts/test.sh` installs it).
fn chromium() -> std::path::PathBuf {
    std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("chromium"))
        .find(|path| path.is_file())
        .expect("chromium on PATH (scripts/test.sh installs it)")
}

fn authorize_url(sandbox: &Sandbox, client_id: &str) -> String {
    let mut query = url::form_urlencoded::Serializer::new(String::new());
    query
        .append_pair("response_type", "code")
        .append_pair("client_id", client_id)
        .append_pair("redirect_uri", "http://127.0.0.1:9/callback")
        .append_pair(
            "scope",
            "openid orders.read catalog.read orders.write conversations.write",
        )
        .append_pair("state", "a11y")
        .append_pair(
            "code_challenge",
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        )
        .append_pair("code_challenge_method", "S256")
        .append_pair("resource", &sandbox.mcp_url);
    format!("{}/authorize?{}", sandbox.auth_http_url, query.finish())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_pass_axe_at_phone_and_desk_widths_in_both_languages() {
    let Some(clients) = SdkClients::find() else {
        return;
    };
    let sandbox = Sandbox::start(Backend::Sqlite)
        .await
        .expect("sqlite sandbox");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("clients/pages_a11y.mjs");
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("pages-a11y");
    let (authorize, error) = (
        authorize_url(&sandbox, demo::DEMO_CLIENT_ID),
        authorize_url(&sandbox, "no-such-client"),
    );
    let output = tokio::task::block_in_place(|| {
        Command::new(&clients.node22)
            .arg(&script)
            .arg("--clients")
            .arg(&clients.dir)
            .arg("--chromium")
            .arg(chromium())
            .arg("--out")
            .arg(&shots)
            .args([
                authorize.as_str(),
                error.as_str(),
                "louis.bernard@bistro.example",
                demo::DEMO_PASSWORD,
            ])
            .output()
            .expect("node runs")
    });
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "the pages were not driven: {stderr}"
    );
    let report: Vec<Value> = serde_json::from_slice(&output.stdout).expect("a report");
    assert_eq!(report.len(), 2 * 2 * 5, "every page, width and language");
    for entry in &report {
        let serious: Vec<&Value> = entry["violations"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v["impact"] == "serious" || v["impact"] == "critical")
            .collect();
        assert!(serious.is_empty(), "{entry}");
        assert_eq!(entry["small_targets"], serde_json::json!([]), "{entry}");
        assert_eq!(entry["html_lang"], entry["lang"], "{entry}");
        // The error page has nothing to focus; every other control shows a ring.
        if entry["page"] != "error" {
            let outline = entry["focus_outline"].as_str().unwrap_or_default();
            assert!(
                outline.starts_with("solid") && !outline.ends_with(" 0px"),
                "a visible focus ring: {entry}"
            );
        }
        if entry["page"] == "wrong-password" {
            assert_eq!(entry["email_kept"], true, "{entry}");
        }
        let shot = shots.join(format!(
            "{}-{}-{}.png",
            entry["page"].as_str().unwrap(),
            entry["lang"].as_str().unwrap(),
            entry["width"]
        ));
        assert!(shot.exists(), "{}", shot.display());
    }
    sandbox.shutdown().await;
}
