//! What a tool says about its limits is what it enforces: every number in a
//! tool's description and in its arguments' descriptions is one of the
//! limits the code holds in constants (`ToolId::limits`), the input schema's
//! bounds are those same numbers, and every such limit is stated in one or
//! the other.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use chataigne_tools::tools::build_catalog;
use serde_json::Value;

/// Names of standards whose numbers are not limits.
const STANDARD_NAMES: &[&str] = &["ISO 8601", "ISO 4217", "ISO 3166-1 alpha-2", "BCP 47"];

/// The numbers a text states, leaving out quoted examples and standards'
/// names.
fn numbers(text: &str) -> BTreeSet<u64> {
    let mut plain = String::new();
    let mut quoted = false;
    for c in text.chars() {
        if c == '"' {
            quoted = !quoted;
            plain.push(' ');
        } else if !quoted {
            plain.push(c);
        }
    }
    for name in STANDARD_NAMES {
        plain = plain.replace(name, " ");
    }
    let mut found = BTreeSet::new();
    let mut digits = String::new();
    for c in plain.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_digit() {
            digits.push(c);
        } else if !digits.is_empty() {
            found.insert(digits.parse().unwrap());
            digits.clear();
        }
    }
    found
}

/// The bounds an input schema states, except the technical length bounds
/// of identifiers, cursors and time zone names.
fn schema_bounds(schema: &Value) -> BTreeSet<u64> {
    let mut found = BTreeSet::new();
    for (name, property) in schema["properties"].as_object().unwrap() {
        if name.ends_with("_id") || name == "cursor" || name == "timezone" {
            continue;
        }
        for keyword in [
            "minimum",
            "maximum",
            "minLength",
            "maxLength",
            "minItems",
            "maxItems",
        ] {
            if let Some(bound) = property.get(keyword).and_then(Value::as_u64) {
                found.insert(bound);
            }
        }
    }
    found
}

#[test]
fn the_numbers_in_each_description_are_the_limits_the_code_enforces() {
    let mut problems = Vec::new();
    for entry in build_catalog().unwrap() {
        let name = entry.spec.name;
        let limits: BTreeSet<u64> = entry.id.limits().iter().map(|&(_, v)| v).collect();
        let mut stated = numbers(entry.spec.description);
        for property in entry.input_schema["properties"]
            .as_object()
            .unwrap()
            .values()
        {
            stated.extend(numbers(property["description"].as_str().unwrap_or("")));
        }
        // "1 to 8 metrics", "1 to 2000 characters": a lower bound of one is
        // stated with the upper bound it goes with.
        stated.remove(&1);
        for number in &stated {
            if !limits.contains(number) {
                problems.push(format!("{name}: states {number}, enforces {limits:?}"));
            }
        }
        let bounds = schema_bounds(&entry.input_schema);
        for bound in &bounds {
            if *bound > 1 && !limits.contains(bound) {
                problems.push(format!(
                    "{name}: the input schema bounds by {bound}, the code by {limits:?}"
                ));
            }
        }
        for (constant, value) in entry.id.limits() {
            if !stated.contains(&value) && !bounds.contains(&value) {
                problems.push(format!("{name}: {constant} = {value} is not stated"));
            }
        }
    }
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn analytics_states_its_366_day_inclusive_range_and_eight_metrics() {
    let catalog = build_catalog().unwrap();
    let analytics = catalog
        .iter()
        .find(|e| e.spec.name == "chataigne_analytics_query")
        .unwrap();
    assert!(
        analytics.spec.description.contains(
            "1 to 8 distinct metrics and a range of at most 366 days, both ends included"
        ),
        "{}",
        analytics.spec.description
    );
    assert_eq!(
        analytics.input_schema["properties"]["metrics"]["maxItems"],
        chataigne_tools::domain::MAX_METRICS
    );
}

#[test]
fn numbers_skip_examples_and_standards() {
    assert_eq!(
        numbers("Returns 20 by default, 50 at most, ISO 8601, e.g. \"2026-03-01\"."),
        BTreeSet::from([20, 50])
    );
}
