//! `chataigne-gateway config check`: it refuses an invalid configuration,
//! naming the key and never echoing a secret, and prints a valid one with
//! every secret redacted (exit status 0). A variable under no key of the
//! gateway (a leftover idempotency secret, what Kubernetes injects) is
//! ignored with a warning; a typo inside a known section is refused.

fn config_check(env: &[(&str, &str)]) -> (bool, String, String) {
    chataigne_common::testing::run_with_env(
        env!("CARGO_BIN_EXE_chataigne-gateway"),
        &["config", "check"],
        env,
    )
}

const REDIS: (&str, &str) = ("CHATAIGNE_REDIS__URL", "rediss://:hunter2@cache:6380/0");

#[test]
fn a_redis_url_of_another_scheme_is_refused_without_its_password() {
    let (ok, out, err) = config_check(&[("CHATAIGNE_REDIS__URL", "http://:hunter2@cache:6380/0")]);
    assert!(!ok, "{out}");
    assert!(err.contains("redis.url"), "{err}");
    assert!(!err.contains("hunter2"), "{err}");
}

#[test]
fn a_stray_variable_is_ignored_with_a_warning_naming_it_never_its_value() {
    // A leftover of another service's configuration, and what Kubernetes
    // injects for a Service named `chataigne-gateway`.
    let (ok, out, err) = config_check(&[
        (
            "CHATAIGNE_IDEMPOTENCY__SECRET",
            "idempotency-secret-0123456789abcdef",
        ),
        ("CHATAIGNE_GATEWAY_PORT", "tcp://10.0.0.1:80"),
    ]);
    assert!(ok, "{err}");
    for variable in ["CHATAIGNE_IDEMPOTENCY__SECRET", "CHATAIGNE_GATEWAY_PORT"] {
        assert_eq!(
            err.matches(variable).count(),
            1,
            "one warning naming {variable}: {err}"
        );
    }
    assert!(!err.contains("idempotency-secret-0123"), "{err}");
    assert!(
        !err.contains("10.0.0.1") && !out.contains("10.0.0.1"),
        "{err}"
    );
}

#[test]
fn a_typo_inside_a_known_section_is_still_refused() {
    let (ok, _, err) = config_check(&[("CHATAIGNE_REDIS__URLL", "rediss://cache:6380/0")]);
    assert!(!ok);
    assert!(err.contains("urll"), "{err}");
}

#[test]
fn a_valid_configuration_is_printed_with_secrets_redacted() {
    let (ok, out, err) = config_check(&[REDIS, ("CHATAIGNE_RATE_LIMITS__READS_PER_MINUTE", "0")]);
    assert!(ok, "{err}");
    assert!(out.contains("reads_per_minute = 0"), "{out}");
    assert!(out.contains("url = \"<redacted>\""), "{out}");
    assert!(!out.contains("hunter2"), "{out}");
}

#[test]
fn an_invalid_value_fails_naming_the_key() {
    let (ok, _, err) = config_check(&[("CHATAIGNE_MAX_JSON_DEPTH", "0")]);
    assert!(!ok);
    assert!(err.contains("max_json_depth"), "{err}");
}

#[test]
fn dash_dash_version_prints_the_version_and_the_revision() {
    chataigne_common::testing::assert_prints_its_version(env!("CARGO_BIN_EXE_chataigne-gateway"));
}
