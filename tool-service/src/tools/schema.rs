//! JSON Schemas of tool inputs and outputs, generated from the Rust types so
//! the schema, the deserializer and the gRPC mapping cannot drift apart, and
//! the validator that checks arguments against them before any logic runs.

use chataigne_common::codes::FieldViolation;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use std::collections::HashMap;

use serde_json::{Map, Value, json};

use crate::domain::DomainError;

/// The `format` values of JSON Schema 2020-12 (§7.3); others (schemars'
/// `uint32`, `int64`, `double`, …) are not portable and are left out.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Which side of a tool a schema describes.
#[derive(Clone, Copy)]
enum Side {
    /// Arguments, as deserialized, with every subschema inline (flat).
    Input,
    /// Results, as serialized (fields filled only when presented are part
    /// of it), with shared definitions kept as references.
    Output,
}

/// The schema of `T` for `side`.
fn generate<T: JsonSchema>(side: Side) -> Value {
    let settings = SchemaSettings::draft2020_12();
    let settings = match side {
        Side::Input => settings,
        Side::Output => settings.for_serialize(),
    };
    let generator = settings
        .with(|settings| settings.inline_subschemas = matches!(side, Side::Input))
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(object) = schema.as_object_mut() {
        // The Rust type name means nothing to a client.
        object.remove("title");
        object.remove("$schema");
    }
    schema
}

/// The input schema of a tool: flat and self-contained (no `$ref`), with
/// optional arguments expressed only by their absence from `required` (no
/// `null` in types or enums, which the function-declaration subsets of
/// model hosts refuse) and only standard formats.
pub fn schema_of<T: JsonSchema>() -> Value {
    let mut schema = generate::<T>(Side::Input);
    walk(&mut schema, &mut |node| {
        standard_formats(node);
        without_null(node);
        // An array's items repeat the documentation of their type, which the
        // property's own description already covers.
        if let Some(Value::Object(items)) = node.get_mut("items") {
            items.remove("description");
        }
    });
    schema
}

/// Values an argument's listed schema offers, when fewer than it accepts:
/// (argument, values).
pub type Offered = [(&'static str, Vec<&'static str>)];

/// The input schema as listed to clients: [`schema_of`] without the keywords
/// of the validation that the function-declaration subset of model hosts
/// lacks (`uniqueItems`), and with only the `offered` values of the
/// arguments that have some (e.g. the statuses an order can move to); the
/// tool-service still validates arguments against the full schema and
/// answers the other values itself with what is allowed.
pub fn listed_input_schema(validated: &Value, offered: &Offered) -> Value {
    let mut listed = validated.clone();
    walk(&mut listed, &mut |node| {
        node.remove("uniqueItems");
    });
    for (argument, values) in offered {
        if let Some(Value::Object(property)) = listed
            .get_mut("properties")
            .and_then(|properties| properties.get_mut(*argument))
        {
            property.insert("enum".into(), json!(values));
        }
    }
    mirror_tenant_arguments(&mut listed);
    listed
}

/// The tenant arguments and the header each is mirrored in (`x-mcp-header`):
/// clients of MCP revisions that mirror arguments send them as
/// `Mcp-Param-{header}`, so that the edge can tell the tenant before reading
/// the body (the gateway checks header and body agree; authorization stays
/// the live check of the real owner here).
pub const TENANT_HEADERS: &[(&str, &str)] = &[
    ("organization_id", "OrganizationId"),
    ("location_id", "LocationId"),
];

/// Marks the top-level tenant arguments of a listed schema with the header
/// they are mirrored in.
fn mirror_tenant_arguments(listed: &mut Value) {
    let Some(Value::Object(properties)) = listed.get_mut("properties") else {
        return;
    };
    for (argument, header) in TENANT_HEADERS {
        if let Some(Value::Object(property)) = properties.get_mut(*argument)
            && property.get("type").and_then(Value::as_str) == Some("string")
        {
            property.insert("x-mcp-header".into(), json!(header));
        }
    }
}

/// Applies `visit` to `schema` and every subschema, parents first.
fn walk(schema: &mut Value, visit: &mut impl FnMut(&mut Map<String, Value>)) {
    match schema {
        Value::Object(node) => {
            visit(node);
            for value in node.values_mut() {
                walk(value, visit);
            }
        }
        Value::Array(items) => {
            for item in items {
                walk(item, visit);
            }
        }
        _ => {}
    }
}

/// Leaves out non-standard `format`s; an unsigned one becomes `minimum: 0`.
fn standard_formats(node: &mut Map<String, Value>) {
    let Some(format) = node.get("format").and_then(Value::as_str) else {
        return;
    };
    if STANDARD_FORMATS.contains(&format) {
        return;
    }
    let unsigned = format.starts_with("uint");
    node.remove("format");
    if unsigned && !node.contains_key("minimum") {
        node.insert("minimum".into(), json!(0));
    }
}

/// `["string", "null"]` → `"string"`, `null` out of enums, `anyOf [X, null]`
/// → `X`, no `default: null`.
fn without_null(node: &mut Map<String, Value>) {
    if let Some(Value::Array(types)) = node.get_mut("type") {
        types.retain(|t| t != "null");
        if types.len() == 1 {
            let single = types.remove(0);
            node.insert("type".into(), single);
        }
    }
    if let Some(Value::Array(options)) = node.get_mut("enum") {
        options.retain(|o| !o.is_null());
    }
    if node.get("default").is_some_and(Value::is_null) {
        node.remove("default");
    }
    if let Some(Value::Array(branches)) = node.get_mut("anyOf") {
        branches.retain(|b| b.get("type").and_then(Value::as_str) != Some("null"));
        if branches.len() == 1
            && let Some(Value::Object(branch)) = branches.pop()
        {
            node.remove("anyOf");
            for (key, value) in branch {
                node.entry(key).or_insert(value);
            }
        }
    }
}

/// The output schema of a tool: the envelope's structured content, whose
/// `data` is `T` and whose `meta` is the same for every tool. It states the
/// structure (names, types, enums, formats) and what the protocol requires
/// (`data`, `meta` and its fields); what the fields mean is said once, in the
/// tool's description, and by the payload itself (labels and display strings
/// beside codes, units in field names), so field descriptions and the
/// `required` lists inside `data` and `meta` (and `minimum: 0` on counts)
/// are left out to keep `tools/list` small
/// (SPEC: under 48 KiB for the 20 tools of a manager). Types used more
/// than once (money, statuses, …) are shared definitions under `$defs`
/// instead of repeated inline; the others are inlined.
pub fn output_schema_of<T: JsonSchema>() -> Value {
    let mut data = generate::<T>(Side::Output);
    let mut defs = match data.as_object_mut().and_then(|o| o.remove("$defs")) {
        Some(Value::Object(defs)) => defs,
        _ => Map::new(),
    };
    let mut structure_only = |node: &mut Map<String, Value>| {
        standard_formats(node);
        // Counts are never negative; saying so to a reader of the result
        // adds nothing.
        if node.get("minimum") == Some(&json!(0)) {
            node.remove("minimum");
        }
        if node.get("description").is_some_and(Value::is_string) {
            node.remove("description");
        }
        if node.get("required").is_some_and(Value::is_array) {
            node.remove("required");
        }
    };
    walk(&mut data, &mut structure_only);
    for def in defs.values_mut() {
        walk(def, &mut structure_only);
    }
    let mut schema = json!({
        "type": "object",
        "properties": {
            "data": data,
            "meta": {
                "type": "object",
                "properties": {
                    "request_id": {"type": "string"},
                    "next_cursor": {"type": "string"},
                    "truncated": {"type": "boolean"},
                    "replayed": {"type": "boolean"}
                }
            }
        },
        "required": ["data", "meta"]
    });
    inline_single_use(&mut schema, &mut defs);
    if !defs.is_empty()
        && let Some(object) = schema.as_object_mut()
    {
        object.insert("$defs".into(), Value::Object(defs));
    }
    schema
}

const DEF_PREFIX: &str = "#/$defs/";

/// How many times each definition is referenced from `schema` and `defs`.
fn reference_counts(schema: &Value, defs: &Map<String, Value>) -> HashMap<String, usize> {
    fn count(value: &Value, counts: &mut HashMap<String, usize>) {
        match value {
            Value::Object(node) => {
                if let Some(name) = node
                    .get("$ref")
                    .and_then(Value::as_str)
                    .and_then(|r| r.strip_prefix(DEF_PREFIX))
                {
                    *counts.entry(name.to_owned()).or_default() += 1;
                }
                node.values().for_each(|v| count(v, counts));
            }
            Value::Array(items) => items.iter().for_each(|v| count(v, counts)),
            _ => {}
        }
    }
    let mut counts = HashMap::new();
    count(schema, &mut counts);
    defs.values().for_each(|def| count(def, &mut counts));
    counts
}

/// Replaces each reference to a definition used once by the definition
/// itself (the reference's own keywords, e.g. its description, kept), and
/// drops definitions nothing references, until none is left to inline.
fn inline_single_use(schema: &mut Value, defs: &mut Map<String, Value>) {
    loop {
        let counts = reference_counts(schema, defs);
        defs.retain(|name, _| counts.get(name).is_some_and(|&n| n > 0));
        let Some(name) = defs
            .keys()
            .find(|name| counts.get(*name) == Some(&1))
            .cloned()
        else {
            return;
        };
        let Some(body) = defs.remove(&name) else {
            return;
        };
        let target = format!("{DEF_PREFIX}{name}");
        let mut replace = |node: &mut Map<String, Value>| {
            if node.get("$ref").and_then(Value::as_str) == Some(target.as_str()) {
                node.remove("$ref");
                if let Value::Object(body) = &body {
                    for (key, value) in body {
                        node.entry(key.clone()).or_insert_with(|| value.clone());
                    }
                }
            }
        };
        walk(schema, &mut replace);
        for def in defs.values_mut() {
            walk(def, &mut replace);
        }
    }
}

/// A compiled input validator (format checks on, no remote references).
pub struct InputValidator {
    validator: jsonschema::Validator,
    /// The values listed for arguments that offer fewer than they accept.
    offered: HashMap<String, Vec<&'static str>>,
}

impl InputValidator {
    pub fn new(schema: &Value, offered: &Offered) -> anyhow::Result<InputValidator> {
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(schema)
            .map_err(|e| anyhow::anyhow!("invalid tool schema: {e}"))?;
        Ok(InputValidator {
            validator,
            offered: offered
                .iter()
                .map(|(argument, values)| ((*argument).to_owned(), values.clone()))
                .collect(),
        })
    }

    /// Field violations of `arguments`, each naming the field, the rule and,
    /// where there is one, the next step (never echoing the value, which may
    /// be sensitive).
    pub fn check(&self, arguments: &Value) -> Result<(), DomainError> {
        let violations: Vec<FieldViolation> = self
            .validator
            .iter_errors(arguments)
            .take(10)
            .map(|error| {
                let path = error.instance_path().to_string();
                let field = path.trim_start_matches('/').replace('/', ".");
                match (error.kind(), self.offered.get(&field)) {
                    // The values the listed schema offers, not every one accepted.
                    (jsonschema::error::ValidationErrorKind::Enum { .. }, Some(values)) => {
                        FieldViolation {
                            description: format!("must be one of: {}", values.join(", ")),
                            field,
                        }
                    }
                    (kind, _) => violation(field, kind),
                }
            })
            .collect();
        if violations.is_empty() {
            Ok(())
        } else {
            Err(DomainError::InvalidArguments(violations))
        }
    }
}

/// A JSON type with its article, as a sentence says it.
fn type_name(kind: &jsonschema::error::TypeKind) -> String {
    use jsonschema::error::TypeKind;
    match kind {
        TypeKind::Single(single) => {
            let name = single.to_string();
            let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            format!("{article} {name}")
        }
        TypeKind::Multiple(_) => "of another type".to_owned(),
    }
}

/// The rule of a `format`, in the model's terms.
fn format_rule(format: &str) -> String {
    match format {
        "date-time" => "must be an ISO 8601 date-time with offset, e.g. \
                        2026-03-01T18:00:00+01:00"
            .to_owned(),
        "date" => "must be an ISO 8601 date, e.g. 2026-03-01".to_owned(),
        "email" => "must be an email address".to_owned(),
        "uri" => "must be an absolute URL".to_owned(),
        other => format!("must be in {other} format"),
    }
}

/// The listed values of an `enum`, e.g. `day, week, month`.
fn options(values: &Value) -> String {
    values
        .as_array()
        .map(|values| {
            values
                .iter()
                .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn violation(field: String, kind: &jsonschema::error::ValidationErrorKind) -> FieldViolation {
    use jsonschema::error::ValidationErrorKind as K;
    let (field, description) = match kind {
        K::AdditionalProperties { unexpected } => (
            unexpected.join(", "),
            "is not an argument of this tool; leave it out".to_owned(),
        ),
        K::Required { property } => (
            property.as_str().map_or(field, str::to_owned),
            "is required".to_owned(),
        ),
        K::Type { kind } => (field, format!("must be {}", type_name(kind))),
        K::Enum { options: values } => (field, format!("must be one of: {}", options(values))),
        K::Format { format } => (field, format_rule(format)),
        K::Minimum { limit } => (field, format!("must be at least {limit}")),
        K::Maximum { limit } if field == "limit" => (
            field,
            format!("must be at most {limit}; pass meta.next_cursor to read further pages"),
        ),
        K::Maximum { limit } => (field, format!("must be at most {limit}")),
        K::MinLength { limit } => (field, format!("must be at least {limit} characters long")),
        K::MaxLength { limit } => (field, format!("must be at most {limit} characters long")),
        K::MaxItems { limit } => (field, format!("must have at most {limit} items")),
        K::MinItems { limit } => (field, format!("must have at least {limit} items")),
        K::UniqueItems => (field, "must not repeat a value".to_owned()),
        K::Pattern { pattern } => (field, format!("must match the pattern {pattern}")),
        _ => (field, "is not valid for this tool".to_owned()),
    };
    FieldViolation { field, description }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    /// Daily figures.
    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Input {
        /// Location ID as returned by the locations list.
        location_id: String,
        /// Page size, 1 to 50.
        #[schemars(range(min = 1, max = 50))]
        limit: Option<u32>,
        /// Bucket size.
        bucket: Option<Bucket>,
        /// Lower bound.
        #[schemars(extend("format" = "date-time"))]
        from: Option<String>,
    }

    /// Bucket size.
    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Bucket {
        Day,
        Week,
    }

    #[derive(serde::Serialize, JsonSchema)]
    #[allow(dead_code)]
    struct Money {
        amount_minor: i64,
        display: String,
    }

    #[derive(serde::Serialize, JsonSchema)]
    #[allow(dead_code)]
    struct Output {
        /// A total.
        total: Money,
        fee: Option<Money>,
        count: u64,
        note: Option<String>,
    }

    fn violations(arguments: Value) -> Vec<FieldViolation> {
        let validator = InputValidator::new(&schema_of::<Input>(), &[]).unwrap();
        match validator.check(&arguments) {
            Err(DomainError::InvalidArguments(violations)) => violations,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn optional_inputs_are_absent_from_required_not_null() {
        let schema = schema_of::<Input>();
        let text = schema.to_string();
        assert!(!text.contains("null"), "{text}");
        assert!(!text.contains("uint32"), "{text}");
        assert_eq!(schema["required"], json!(["location_id"]));
        assert_eq!(schema["properties"]["limit"]["type"], "integer");
        assert_eq!(schema["properties"]["limit"]["minimum"], 1);
        assert_eq!(
            schema["properties"]["bucket"]["enum"],
            json!(["day", "week"])
        );
        assert_eq!(schema["properties"]["from"]["format"], "date-time");
    }

    #[test]
    fn output_schemas_share_repeated_types_and_state_only_structure() {
        let schema = output_schema_of::<Output>();
        let data = &schema["properties"]["data"];
        assert_eq!(schema["$defs"]["Money"]["type"], "object", "{schema}");
        assert_eq!(data["properties"]["total"]["$ref"], "#/$defs/Money");
        assert!(!schema.to_string().contains("uint64"), "{schema}");
        assert!(data["properties"]["count"].get("minimum").is_none());
        assert!(!schema.to_string().contains("description"), "{schema}");
        assert_eq!(schema["required"], json!(["data", "meta"]));
        assert!(data.get("required").is_none());
    }

    #[test]
    fn violations_name_the_field_the_rule_and_the_next_step() {
        let found = violations(json!({"limit": 99, "bucket": "year", "extra": 1}));
        let said: Vec<String> = found
            .iter()
            .map(|v| format!("{} {}", v.field, v.description))
            .collect();
        assert!(
            said.contains(&"location_id is required".to_owned()),
            "{said:?}"
        );
        assert!(
            said.contains(
                &"limit must be at most 50; pass meta.next_cursor to read further pages".to_owned()
            ),
            "{said:?}"
        );
        assert!(
            said.contains(&"bucket must be one of: day, week".to_owned()),
            "{said:?}"
        );
        assert!(
            said.contains(&"extra is not an argument of this tool; leave it out".to_owned()),
            "{said:?}"
        );
        let found =
            violations(json!({"location_id": "loc_1", "limit": "many", "from": "yesterday"}));
        let said: Vec<String> = found
            .iter()
            .map(|v| format!("{} {}", v.field, v.description))
            .collect();
        assert!(
            said.contains(&"limit must be an integer".to_owned()),
            "{said:?}"
        );
        assert!(
            said.iter()
                .any(|s| s.starts_with("from must be an ISO 8601 date-time")),
            "{said:?}"
        );
        assert!(
            said.iter()
                .all(|s| !s.contains("many") && !s.contains("yesterday")),
            "values are never echoed: {said:?}"
        );
    }
}
