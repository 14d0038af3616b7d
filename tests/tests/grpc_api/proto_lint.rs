//! `buf lint` of the gRPC contracts (`proto/buf.yaml`: the STANDARD and
//! COMMENTS rule sets, each exception listed there with its reason) reports
//! nothing: every service, RPC, message, field and enum value is commented.
//! The same configuration does report an uncommented contract.

use std::path::Path;
use std::process::Command;

use chataigne_tests::{TempDir, grpc_tools};

/// Runs `buf lint` in `dir`; returns whether it passed and its findings.
fn buf_lint(buf: &Path, dir: &Path) -> (bool, String) {
    let output = Command::new(buf)
        .args(["lint", "--error-format", "text"])
        .current_dir(dir)
        // buf keeps its module cache under the temporary folder of the test,
        // not in the user's home.
        .env(
            "BUF_CACHE_DIR",
            std::env::temp_dir().join("chataigne-buf-cache"),
        )
        .output()
        .expect("buf runs");
    let findings = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), findings)
}

#[test]
fn buf_lint_reports_no_finding_on_the_contracts() {
    let Some(buf) = grpc_tools::buf() else {
        return;
    };
    let (passed, findings) = buf_lint(&buf, &grpc_tools::proto_dir());
    assert!(
        passed && findings.trim().is_empty(),
        "buf lint found:\n{findings}"
    );
}

/// The same configuration on a contract with an uncommented message and an
/// enum without a zero `_UNSPECIFIED` value: buf reports both, so the clean
/// run above means something.
#[test]
fn buf_lint_with_the_projects_configuration_reports_an_uncommented_contract() {
    let Some(buf) = grpc_tools::buf() else {
        return;
    };
    let dir = TempDir::new("buf-lint");
    let config =
        std::fs::read_to_string(grpc_tools::proto_dir().join("buf.yaml")).expect("proto/buf.yaml");
    std::fs::write(dir.0.join("buf.yaml"), config).expect("buf.yaml written");
    let package = dir.0.join("proto/chataigne/sample/v1");
    std::fs::create_dir_all(&package).expect("module folder");
    let contract = r#"// A sample contract.
syntax = "proto3";

package chataigne.sample.v1;

message Uncommented {
  // A field.
  string id = 1;
}

// Colours.
enum Colour {
  // Red.
  RED = 0;
}
"#;
    std::fs::write(package.join("sample.proto"), contract).expect("proto written");
    let (passed, findings) = buf_lint(&buf, &dir.0);
    assert!(!passed, "buf lint fails: {findings}");
    assert!(
        findings.contains(r#"Message "Uncommented" should have a non-empty comment"#),
        "{findings}"
    );
    assert!(
        findings.contains("RED"),
        "the enum zero value is reported: {findings}"
    );
}

/// The configuration uses both rule sets, and each exception has its reason
/// on the line above it.
#[test]
fn buf_yaml_uses_standard_and_comments_and_explains_each_exception() {
    let config =
        std::fs::read_to_string(grpc_tools::proto_dir().join("buf.yaml")).expect("proto/buf.yaml");
    for rule_set in ["- STANDARD", "- COMMENTS"] {
        assert!(config.contains(rule_set), "buf.yaml uses {rule_set}");
    }
    let lines: Vec<&str> = config.lines().collect();
    let except = lines
        .iter()
        .position(|line| line.trim() == "except:")
        .expect("an except list");
    for (index, line) in lines.iter().enumerate().skip(except + 1) {
        let item = line.trim();
        if !item.starts_with("- ") {
            if !item.is_empty() && !item.starts_with('#') {
                break;
            }
            continue;
        }
        assert!(
            lines[index - 1].trim().starts_with('#'),
            "the exception {item} has its reason on the line above"
        );
    }
}
