//! Every status and enumerated value a tool returns comes with its label in
//! the caller's language: in each output schema, a property holding an enum
//! value has a `<name>_label` sibling, and an array of enum values a
//! `<singular>_labels` sibling.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use chataigne_tools::tools::build_catalog;
use serde_json::{Map, Value};

/// Whether `schema` (inline, through `$ref`, or as the first branch of an
/// `anyOf`/`oneOf`) is an enumeration of strings.
fn is_enum(schema: &Value, defs: &Map<String, Value>) -> bool {
    if schema.get("enum").is_some() {
        return true;
    }
    if let Some(name) = schema
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        return defs.get(name).is_some_and(|def| is_enum(def, defs));
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(branches) = schema.get(key).and_then(Value::as_array) {
            return branches
                .iter()
                .any(|b| is_enum(b, defs) || b.get("const").is_some_and(Value::is_string));
        }
    }
    false
}

fn unlabelled(path: &str, schema: &Value, defs: &Map<String, Value>, found: &mut Vec<String>) {
    let Some(node) = schema.as_object() else {
        return;
    };
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            let labelled = if is_enum(property, defs) {
                Some(format!("{name}_label"))
            } else if property.get("type") == Some(&Value::from("array"))
                && property.get("items").is_some_and(|i| is_enum(i, defs))
            {
                Some(format!("{}_labels", name.trim_end_matches('s')))
            } else {
                None
            };
            if let Some(label) = labelled
                && !properties.contains_key(&label)
            {
                found.push(format!("{path}.{name} has no {label}"));
            }
        }
    }
    for (key, value) in node {
        match value {
            Value::Object(_) => unlabelled(&format!("{path}/{key}"), value, defs, found),
            Value::Array(items) => {
                for item in items {
                    unlabelled(&format!("{path}/{key}[]"), item, defs, found);
                }
            }
            _ => {}
        }
    }
}

#[test]
fn every_enum_value_in_an_output_has_a_label_beside_it() {
    let mut found = Vec::new();
    for entry in build_catalog().unwrap() {
        let defs = entry.output_schema["$defs"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        unlabelled(entry.spec.name, &entry.output_schema, &defs, &mut found);
    }
    assert!(found.is_empty(), "{found:#?}");
}
