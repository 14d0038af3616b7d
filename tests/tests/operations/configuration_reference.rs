//! `docs/configuration.md` is generated from the three services' typed
//! configurations; this test fails when the committed file differs from
//! what the code generates (`CHATAIGNE_UPDATE_DOCS=1` rewrites it) or when a
//! key has no description.

use std::path::PathBuf;

use chataigne_common::config_reference::{Service, render, undocumented};
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

fn services() -> Vec<Service> {
    vec![
        Service::of(
            "gateway",
            "chataigne-gateway",
            &chataigne_gateway::Config::default(),
        )
        .expect("gateway defaults serialize"),
        Service::of(
            "auth-service",
            "chataigne-auth-service",
            &chataigne_auth::Config::default(),
        )
        .expect("auth-service defaults serialize"),
        Service::of(
            "tool-service",
            "chataigne-tool-service",
            &chataigne_tools::Config::default(),
        )
        .expect("tool-service defaults serialize"),
    ]
}

fn reference_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md")
}

#[test]
fn the_committed_reference_is_the_generated_one() {
    let generated = render(&services());
    let path = reference_path();
    if std::env::var("CHATAIGNE_UPDATE_DOCS").is_ok_and(|v| v == "1") {
        std::fs::write(&path, &generated).expect("write docs/configuration.md");
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        committed == generated,
        "docs/configuration.md is not the reference the typed configuration generates; \
         run `CHATAIGNE_UPDATE_DOCS=1 cargo test -p chataigne-tests --test operations configuration_reference` \
         and commit the result"
    );
}

#[test]
fn every_key_of_every_service_is_described() {
    let missing = undocumented(&services());
    assert!(
        missing.is_empty(),
        "keys without a doc comment: {missing:#?}"
    );
}

#[test]
fn the_reference_names_the_shared_secrets_and_the_limits_that_zero_switches_off() {
    let services = services();
    let tools = &services[2];
    let keys = tools.keys();
    for shared in ["idempotency.secret", "cursor.keys", "database.url"] {
        let key = keys
            .iter()
            .find(|k| k.path == shared)
            .unwrap_or_else(|| panic!("{shared} is listed"));
        assert!(key.secret, "{shared} is marked secret");
    }
    let doc = render(&services);
    assert!(doc.contains("`CHATAIGNE_IDEMPOTENCY__SECRET`"));
    assert!(doc.contains("`CHATAIGNE_KEYS__ENCRYPTION_KEY`"));
    assert!(doc.contains("`CHATAIGNE_STARTUP__MAX_WAIT_SECS`"));
    let reads = doc
        .lines()
        .find(|line| line.starts_with("| `rate_limits.reads_per_minute`"))
        .expect("the gateway's read limit is listed");
    assert!(reads.contains("0 switches this limit off"), "{reads}");
}

/// Every documented variable is one the loader reads: each key set through
/// its variable to its default (lists comma-separated) loads.
fn variables_load<T>(defaults: &T, name: &str)
where
    T: Serialize + DeserializeOwned + JsonSchema,
{
    let service = Service::of(name, name, defaults).expect("defaults serialize");
    let mut checked = 0;
    for key in service.keys() {
        let (Some(env), Some(default)) = (&key.env, &key.default) else {
            continue;
        };
        let value = match default {
            Value::String(text) if !text.is_empty() => text.clone(),
            Value::Number(number) => number.to_string(),
            Value::Bool(flag) => flag.to_string(),
            Value::Array(items) if !items.is_empty() => items
                .iter()
                .filter_map(Value::as_str)
                .collect::<Vec<_>>()
                .join(","),
            _ => continue,
        };
        let loaded: Result<T, _> = chataigne_common::config::load_from_env(
            defaults,
            None,
            vec![(env.clone(), value.clone())],
        );
        assert!(loaded.is_ok(), "{name}: {env}={value}: {:?}", loaded.err());
        checked += 1;
    }
    assert!(checked > 10, "{name}: only {checked} variables checked");
}

#[test]
fn every_documented_variable_is_read_by_the_loader() {
    variables_load(&chataigne_gateway::Config::default(), "gateway");
    variables_load(&chataigne_auth::Config::default(), "auth-service");
    variables_load(&chataigne_tools::Config::default(), "tool-service");
}
