//! The launcher administers the embedded stack of its `--data-dir` with the
//! services' own administration commands: a service account created with
//! `chataigne clients add … --kind service` and given a role with
//! `chataigne memberships grant` gets a token from the running stack and
//! calls a tool with it on the tool-service's gRPC API; `chataigne writes`
//! flips the write switch the running stack reads.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use chataigne_proto::tools::v1::CallToolRequest;
use chataigne_proto::tools::v1::tool_catalog_client::ToolCatalogClient;
use chataigne_tests::TempDir;
use chataigne_tests::demo::ORG_BISTRO;
use chataigne_tests::process::start_embedded;

const LAUNCHER: &str = env!("CARGO_BIN_EXE_chataigne");

/// Runs the launcher with `args` on `data_dir`; its standard output.
fn administer(data_dir: &Path, args: &[&str]) -> String {
    let output = Command::new(LAUNCHER)
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .env("RUST_LOG", "warn")
        .output()
        .expect("the launcher runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "chataigne {args:?}: {stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The value of `key=` in `printed`.
fn printed<'a>(printed: &'a str, key: &str) -> &'a str {
    printed
        .lines()
        .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {key}= in {printed}"))
}

#[test]
fn the_launcher_creates_a_service_account_that_calls_a_tool_on_the_running_stack() {
    let data = TempDir::new("launcher-admin");
    let (_child, start) = start_embedded(Path::new(LAUNCHER), &data.0);

    let added = administer(
        &data.0,
        &[
            "clients",
            "add",
            "reporting",
            "--name",
            "Reporting",
            "--kind",
            "service",
            "--scope",
            "businessOrganization.read location.read orders.read",
        ],
    );
    let secret = printed(&added, "client_secret").to_owned();
    let service_user = printed(&added, "service_user_id").to_owned();
    administer(
        &data.0,
        &[
            "memberships",
            "grant",
            &service_user,
            "--organization",
            ORG_BISTRO,
            "--role",
            "manager",
        ],
    );
    let listed = administer(&data.0, &["clients", "list"]);
    assert!(listed.contains("reporting"), "{listed}");

    // A service account's token is for the tool-service's gRPC API.
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let called = runtime.block_on(async {
        let token: serde_json::Value = reqwest::Client::new()
            .post(format!("{}/token", start.issuer))
            .basic_auth("reporting", Some(&secret))
            .form(&[("grant_type", "client_credentials")])
            .timeout(Duration::from_secs(30))
            .send()
            .await
            .expect("token endpoint")
            .json()
            .await
            .expect("token answer");
        let token = token["access_token"]
            .as_str()
            .unwrap_or_else(|| panic!("a service-account token: {token}"))
            .to_owned();
        let channel = tonic::transport::Endpoint::from_shared(start.tool_service_grpc.clone())
            .expect("URL")
            .connect()
            .await
            .expect("tool-service reachable");
        let mut request = tonic::Request::new(CallToolRequest {
            name: "chataigne_organizations_list".to_owned(),
            arguments_json: "{}".to_owned(),
            ..Default::default()
        });
        request.set_timeout(Duration::from_secs(30));
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {token}").parse().expect("ascii"),
        );
        ToolCatalogClient::new(channel)
            .call_tool(request)
            .await
            .expect("the service account calls a tool")
            .into_inner()
    });
    let answer: serde_json::Value = serde_json::from_str(&called.data_json).unwrap();
    let organizations = answer["organizations"]
        .as_array()
        .unwrap_or_else(|| panic!("organizations: {answer}"));
    assert!(
        organizations.iter().any(|o| o["id"] == ORG_BISTRO),
        "the granted organization is readable: {answer}"
    );

    // The write switch of the same stack.
    let disabled = administer(&data.0, &["writes", "disable", "--reason", "inventaire"]);
    assert!(disabled.contains("disabled"), "{disabled}");
    let status = administer(&data.0, &["writes", "status"]);
    assert!(status.contains("inventaire"), "{status}");
    let enabled = administer(&data.0, &["writes", "enable"]);
    assert!(enabled.contains("enabled"), "{enabled}");
}

#[test]
fn administration_needs_an_existing_embedded_data_dir() {
    let empty = TempDir::new("launcher-admin-empty");
    let missing = empty.0.join("nothing-here");
    let output = Command::new(LAUNCHER)
        .args(["users", "list", "--data-dir"])
        .arg(&missing)
        .output()
        .expect("the launcher runs");
    assert!(!output.status.success(), "refused without a stack");
    assert!(
        !missing.exists(),
        "no data directory created by an administration command"
    );
}
