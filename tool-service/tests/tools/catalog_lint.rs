//! Lints every tool declaration against the catalogue rules: names, flat
//! strict input schemas, output schemas, explicit annotations, descriptions
//! without imperatives or other products' names, and a typed RPC that exists;
//! and every typed service of the contracts against its declaration: each RPC
//! runs its catalogue tool through the runner, or is a listed non-tool RPC.
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

const PACKAGE: &str = "chataigne.tools.v1";

/// The RPCs of the package that run no single catalogue tool, with why.
const NON_TOOL_RPCS: &[(&str, &str)] = &[
    (
        "ToolCatalog/ListTools",
        "lists the catalogue and the write switch; runs no tool",
    ),
    (
        "ToolCatalog/CallTool",
        "the MCP bridge: runs the named tool through the runner's deadline and the \
         catalogue's write gate, by the tool's kind",
    ),
];

/// `ListOrganizations` → `list_organizations`.
fn snake(name: &str) -> String {
    let mut out = String::new();
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// The source of every file of `src/grpc`, whitespace collapsed to single
/// spaces, by file name.
fn grpc_sources() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/grpc");
    let mut sources: Vec<(String, String)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let path = entry.unwrap().path();
            let text = std::fs::read_to_string(&path).unwrap();
            let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
            (
                path.file_name().unwrap().to_string_lossy().into_owned(),
                flat,
            )
        })
        .collect();
    sources.sort();
    sources
}

/// Every typed service of the contracts is declared once with
/// `typed_service!`, which generates each method as the runner running the
/// catalogue tool whose declared RPC it is; no service of the package is
/// implemented by hand but the MCP bridge, whose RPCs are listed with why.
#[test]
fn every_typed_rpc_runs_its_catalogue_tool_through_the_runner() {
    let set = FileDescriptorSet::decode(chataigne_proto::FILE_DESCRIPTOR_SET).unwrap();
    let catalog = build_catalog().unwrap();
    let sources = grpc_sources();
    let mut checked = 0;
    for file in set.file.iter().filter(|f| f.package() == PACKAGE) {
        for service in &file.service {
            let name = service.name();
            let non_tool: Vec<&str> = NON_TOOL_RPCS
                .iter()
                .filter(|(rpc, reason)| rpc.starts_with(&format!("{name}/")) && !reason.is_empty())
                .map(|(rpc, _)| *rpc)
                .collect();
            if !non_tool.is_empty() {
                for method in &service.method {
                    let rpc = format!("{name}/{}", method.name());
                    assert!(non_tool.contains(&rpc.as_str()), "{rpc} is not listed");
                }
                continue;
            }
            let header = format!("serves {}_server::{name} {{", snake(name));
            let declarations: Vec<&(String, String)> = sources
                .iter()
                .filter(|(_, source)| source.contains(&header))
                .collect();
            let [(file_name, source)] = declarations.as_slice() else {
                panic!(
                    "{name} is declared {} times with typed_service!",
                    declarations.len()
                );
            };
            let start = source.find(&header).unwrap();
            let block = &source[start..];
            let block = &block[..block.find("} }").unwrap_or(block.len())];
            assert_eq!(
                block.matches(" => ").count(),
                service.method.len(),
                "{file_name}: {name} declares exactly the RPCs of the contracts"
            );
            for method in &service.method {
                let rpc = format!("{PACKAGE}.{name}/{}", method.name());
                let entry = catalog
                    .iter()
                    .find(|entry| entry.spec.rpc == rpc)
                    .unwrap_or_else(|| panic!("{rpc} is the RPC of no catalogue tool"));
                let short = |path: &str| path.rsplit('.').next().unwrap_or_default().to_owned();
                let line = format!(
                    "{}: {} => {:?} -> {} {{",
                    snake(method.name()),
                    short(method.input_type()),
                    entry.id,
                    short(method.output_type()),
                );
                assert!(
                    block.contains(&line),
                    "{file_name} declares `{line}` for {rpc} ({})",
                    entry.spec.name
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 22, "the typed services were read: {checked}");
    let services: Vec<&str> = set
        .file
        .iter()
        .filter(|f| f.package() == PACKAGE)
        .flat_map(|f| f.service.iter().map(|s| s.name()))
        .collect();
    for (file_name, source) in &sources {
        let mut rest = source.as_str();
        while let Some(at) = rest.find("_server::") {
            let after = &rest[at + "_server::".len()..];
            let trait_name: String = after
                .chars()
                .take_while(char::is_ascii_alphanumeric)
                .collect();
            let before = &rest[..at];
            // The `impl … for` this trait name is part of, if any.
            let is_impl = [before.rfind("impl<"), before.rfind("impl ")]
                .into_iter()
                .flatten()
                .max()
                .is_some_and(|i| !before[i..].contains(['{', ';']));
            if is_impl && services.contains(&trait_name.as_str()) {
                assert_eq!(
                    trait_name, "ToolCatalog",
                    "{file_name} implements {trait_name} by hand: declare it with typed_service!"
                );
            }
            rest = after;
        }
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
