//! Lints every tool declaration against the catalogue rules: names, flat
//! strict input schemas, output schemas, explicit annotations, descriptions
//! without imperatives or other products' names, and a typed RPC that exists.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use chataigne_tools::tools::{ToolKind, build_catalog};
use prost::Message;
use prost_types::FileDescriptorSet;
use serde_json::Value;

fn rpc_names() -> Vec<String> {
    let set = FileDescriptorSet::decode(chataigne_proto::FILE_DESCRIPTOR_SET).unwrap();
    let mut names = Vec::new();
    for file in set.file {
        let package = file.package.unwrap_or_default();
        for service in file.service {
            let service_name = service.name.unwrap_or_default();
            for method in service.method {
                names.push(format!(
                    "{package}.{service_name}/{}",
                    method.name.unwrap_or_default()
                ));
            }
        }
    }
    names
}

#[test]
fn every_tool_names_an_existing_typed_rpc_and_every_rpc_has_a_tool() {
    let rpcs = rpc_names();
    let catalog = build_catalog().unwrap();
    for entry in &catalog {
        assert!(
            rpcs.contains(&entry.spec.rpc.to_owned()),
            "{} maps to {} which is not in the contracts",
            entry.spec.name,
            entry.spec.rpc
        );
    }
    // Every typed service (all but the MCP bridge itself) maps onto tools.
    let typed = rpcs
        .iter()
        .filter(|r| r.starts_with("chataigne.tools.v1.") && !r.contains(".ToolCatalog/"));
    for rpc in typed {
        assert!(
            catalog.iter().any(|e| e.spec.rpc == rpc),
            "{rpc} has no MCP tool"
        );
    }
}

#[test]
fn names_are_unique_and_in_the_product_form() {
    let catalog = build_catalog().unwrap();
    let mut names: Vec<&str> = catalog.iter().map(|e| e.spec.name).collect();
    for name in &names {
        assert!(name.starts_with("chataigne_"), "{name}");
        assert!(
            name.chars().all(|c| c.is_ascii_lowercase() || c == '_'),
            "{name}"
        );
    }
    names.sort();
    let before = names.len();
    names.dedup();
    assert_eq!(before, names.len());
}

fn assert_flat_strict(name: &str, schema: &Value) {
    assert_eq!(schema["type"], "object", "{name}");
    assert_eq!(schema["additionalProperties"], false, "{name}");
    assert!(
        schema.get("$ref").is_none() && schema.get("$defs").is_none(),
        "{name}"
    );
    let properties = schema["properties"].as_object().expect("properties");
    for (field, property) in properties {
        let description = property["description"].as_str().unwrap_or("");
        assert!(
            description.len() >= 10,
            "{name}.{field} needs a description"
        );
        let types: Vec<&str> = match &property["type"] {
            Value::String(t) => vec![t.as_str()],
            Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
            other => panic!("{name}.{field} has no type: {other}"),
        };
        assert!(!types.contains(&"object"), "{name}.{field} is nested");
        if types.contains(&"array") {
            let items = &property["items"];
            assert!(
                items["type"] == "string" || items["enum"].is_array(),
                "{name}.{field} arrays hold strings or enums: {items}"
            );
        }
        if field.ends_with("_id") {
            assert!(types.contains(&"string"), "{name}.{field}: IDs are strings");
        }
        if field == "limit" {
            // Seed 001: lists take at most 50, the conversation detail 100 messages.
            let max = if name == "chataigne_conversation_get" {
                100
            } else {
                50
            };
            assert_eq!(property["maximum"], max, "{name}.limit");
            assert_eq!(property["minimum"], 1, "{name}.limit");
        }
        if field.starts_with("created_") || field.ends_with("_at") {
            assert_eq!(property["format"], "date-time", "{name}.{field}");
        }
    }
}

#[test]
fn input_schemas_are_flat_strict_and_described() {
    for entry in build_catalog().unwrap() {
        assert_flat_strict(entry.spec.name, &entry.input_schema);
    }
}

#[test]
fn output_schemas_describe_the_envelope() {
    for entry in build_catalog().unwrap() {
        let schema = &entry.output_schema;
        assert_eq!(schema["type"], "object");
        assert_eq!(
            schema["properties"]["data"]["type"], "object",
            "{}",
            entry.spec.name
        );
        assert!(schema["properties"]["meta"]["properties"]["request_id"].is_object());
    }
}

#[test]
fn descriptions_follow_the_platform_rules() {
    const IMPERATIVES: &[&str] = &[
        "you must",
        "must ",
        "always ",
        "never ",
        "do not",
        "don't",
        "ignore ",
        "important",
        "critical",
        "you should",
        "make sure",
    ];
    const PRODUCTS: &[&str] = &[
        "google",
        "gemini",
        "openai",
        "chatgpt",
        "claude",
        "anthropic",
    ];
    for entry in build_catalog().unwrap() {
        let spec = entry.spec;
        let text = spec.description.to_lowercase();
        assert!(
            (120..=1200).contains(&spec.description.len()),
            "{}: a description says what, when, where arguments come from and what is returned",
            spec.name
        );
        for word in IMPERATIVES {
            assert!(!text.contains(word), "{}: imperative '{word}'", spec.name);
        }
        for product in PRODUCTS {
            assert!(!text.contains(product), "{}: names '{product}'", spec.name);
        }
        assert!(!spec.title.is_empty());
        assert!(
            chataigne_common::scopes::is_known(spec.scope),
            "{}",
            spec.scope
        );
        match spec.kind {
            ToolKind::Read => assert!(spec.scope.ends_with(".read"), "{}", spec.name),
            ToolKind::Write => assert!(!spec.scope.ends_with(".read"), "{}", spec.name),
        }
    }
}
