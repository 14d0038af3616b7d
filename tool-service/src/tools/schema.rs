//! JSON Schemas of tool inputs and outputs, generated from the Rust types so
//! the schema, the deserializer and the gRPC mapping cannot drift apart, and
//! the validator that checks arguments against them before any logic runs.

use chataigne_common::codes::FieldViolation;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use crate::domain::DomainError;

/// A flat, self-contained (no `$ref`) 2020-12 schema of `T`.
pub fn schema_of<T: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(object) = schema.as_object_mut() {
        // The Rust type name means nothing to a client.
        object.remove("title");
        object.remove("$schema");
    }
    schema
}

/// The output schema of a tool: the envelope's structured content, whose
/// `data` is `T` and whose `meta` is the same for every tool.
pub fn output_schema_of<T: JsonSchema>() -> Value {
    let mut data = schema_of::<T>();
    if let Some(object) = data.as_object_mut() {
        object.remove("description");
    }
    json!({
        "type": "object",
        "properties": {
            "data": data,
            "meta": {
                "type": "object",
                "properties": {
                    "request_id": {"type": "string", "description": "Identifier of this call, for support requests."},
                    "next_cursor": {"type": "string", "description": "Opaque cursor of the next page, present only when more results exist."},
                    "truncated": {"type": "boolean", "description": "True when the result was cut to fit the output bound."},
                    "replayed": {"type": "boolean", "description": "True when this is the stored result of an earlier identical write."}
                },
                "required": ["request_id", "truncated", "replayed"]
            }
        },
        "required": ["data", "meta"]
    })
}

/// A compiled input validator (format checks on, no remote references).
pub struct InputValidator {
    validator: jsonschema::Validator,
}

impl InputValidator {
    pub fn new(schema: &Value) -> anyhow::Result<InputValidator> {
        let validator = jsonschema::options()
            .should_validate_formats(true)
            .build(schema)
            .map_err(|e| anyhow::anyhow!("invalid tool schema: {e}"))?;
        Ok(InputValidator { validator })
    }

    /// Field violations of `arguments`, naming the field and what was expected
    /// (never echoing the value, which may be sensitive).
    pub fn check(&self, arguments: &Value) -> Result<(), DomainError> {
        let violations: Vec<FieldViolation> = self
            .validator
            .iter_errors(arguments)
            .take(10)
            .map(|error| {
                let path = error.instance_path().to_string();
                FieldViolation {
                    field: path.trim_start_matches('/').replace('/', "."),
                    description: describe(error.kind()),
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

fn describe(kind: &jsonschema::error::ValidationErrorKind) -> String {
    use jsonschema::error::ValidationErrorKind as K;
    match kind {
        K::AdditionalProperties { unexpected } => {
            format!("unknown properties: {}", unexpected.join(", "))
        }
        K::Required { property } => format!("missing required property {property}"),
        K::Type { kind } => format!("expected type {kind:?}").to_lowercase(),
        K::Enum { options } => format!("expected one of {options}"),
        K::Format { format } => format!("expected format {format}"),
        K::Minimum { limit } => format!("must be at least {limit}"),
        K::Maximum { limit } => format!("must be at most {limit}"),
        K::MinLength { limit } => format!("must be at least {limit} characters"),
        K::MaxLength { limit } => format!("must be at most {limit} characters"),
        K::MaxItems { limit } => format!("must have at most {limit} items"),
        K::MinItems { limit } => format!("must have at least {limit} items"),
        K::Pattern { pattern } => format!("must match {pattern}"),
        _ => "does not match the input schema".to_owned(),
    }
}
