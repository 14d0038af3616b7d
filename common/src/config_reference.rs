//! The configuration reference, generated from each service's typed config:
//! its JSON Schema (derived with `schemars`, so doc comments become
//! descriptions) walked into one row per key with its environment variable,
//! type and default, rendered as `docs/configuration.md`. Fields marked
//! `x-secret` in the schema are secrets: shown as such here and redacted by
//! `config check` ([`redact`]).

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

pub use crate::config::env_var;

/// The schema extension that marks a secret field:
/// `#[schemars(with = "String", extend("x-secret" = true))]`.
pub const SECRET: &str = "x-secret";

/// One service's typed configuration, ready to document.
pub struct Service {
    /// Section title, e.g. `gateway`.
    pub name: String,
    /// The binary that reads it, e.g. `chataigne-gateway`.
    pub binary: String,
    schema: Value,
    defaults: Value,
}

impl Service {
    /// The schema of `T` and the values of `defaults` (what the loader
    /// starts from).
    pub fn of<T: JsonSchema + Serialize>(
        name: &str,
        binary: &str,
        defaults: &T,
    ) -> Result<Service, serde_json::Error> {
        Ok(Service {
            name: name.to_owned(),
            binary: binary.to_owned(),
            schema: schemars::schema_for!(T).to_value(),
            defaults: serde_json::to_value(defaults)?,
        })
    }

    /// The schema of `T` alone (no defaults), e.g. to [`redact`] a value.
    pub fn schema<T: JsonSchema>(name: &str) -> Service {
        Service {
            name: name.to_owned(),
            binary: name.to_owned(),
            schema: schemars::schema_for!(T).to_value(),
            defaults: Value::Null,
        }
    }

    /// The keys that hold a list of values (not tables), which a variable
    /// may give comma-separated.
    pub fn list_keys(&self) -> Vec<String> {
        self.keys()
            .into_iter()
            .filter(|key| key.env.is_some() && key.kind.starts_with("list of "))
            .map(|key| key.path)
            .collect()
    }

    /// Every key, sorted by path.
    pub fn keys(&self) -> Vec<Key> {
        let mut keys = Vec::new();
        let walk = Walk { root: &self.schema };
        walk.object(&self.schema, "", Some(&self.defaults), false, &mut keys);
        keys
    }
}

/// One configuration key.
#[derive(Debug, Clone, PartialEq)]
pub struct Key {
    /// Dotted path; `[]` marks the entries of a list of tables.
    pub path: String,
    /// `CHATAIGNE_…` variable; `None` inside lists of tables (file only).
    pub env: Option<String>,
    /// Rendered type, e.g. `integer`, `list of strings`, `"default" or "google"`.
    pub kind: String,
    /// Unset by default (an absent optional value).
    pub optional: bool,
    pub secret: bool,
    /// Compiled-in default; `None` when unknown (inside lists of tables
    /// without a schema default).
    pub default: Option<Value>,
    /// The field's doc comment on one line.
    pub description: String,
}

struct Walk<'a> {
    root: &'a Value,
}

impl Walk<'_> {
    /// `node` itself, or the definition its `$ref` names.
    fn resolve<'n>(&'n self, node: &'n Value) -> &'n Value {
        let Some(reference) = node.get("$ref").and_then(Value::as_str) else {
            return node;
        };
        reference
            .strip_prefix("#/")
            .map(|pointer| format!("/{pointer}"))
            .and_then(|pointer| self.root.pointer(&pointer))
            .unwrap_or(node)
    }

    /// The non-null alternative of a nullable node, and whether it was nullable.
    fn unwrap_nullable<'n>(&'n self, node: &'n Value) -> (&'n Value, bool) {
        for combinator in ["anyOf", "oneOf"] {
            if let Some(alternatives) = node.get(combinator).and_then(Value::as_array) {
                let non_null: Vec<&Value> =
                    alternatives.iter().filter(|a| !is_null_type(a)).collect();
                if non_null.len() == 1 && non_null.len() < alternatives.len() {
                    return (self.resolve(non_null[0]), true);
                }
            }
        }
        let nullable = node
            .get("type")
            .and_then(Value::as_array)
            .is_some_and(|types| types.iter().any(|t| t == "null"));
        (self.resolve(node), nullable)
    }

    fn object(
        &self,
        node: &Value,
        prefix: &str,
        defaults: Option<&Value>,
        in_list: bool,
        keys: &mut Vec<Key>,
    ) {
        let Some(properties) = node.get("properties").and_then(Value::as_object) else {
            return;
        };
        let mut names: Vec<&String> = properties.keys().collect();
        names.sort();
        for name in names {
            let property = &properties[name.as_str()];
            let path = if prefix.is_empty() {
                name.clone()
            } else {
                format!("{prefix}.{name}")
            };
            let default = defaults
                .and_then(|d| d.get(name.as_str()))
                .or_else(|| property.get("default"));
            self.property(property, &path, default, in_list, keys);
        }
    }

    fn property(
        &self,
        property: &Value,
        path: &str,
        default: Option<&Value>,
        in_list: bool,
        keys: &mut Vec<Key>,
    ) {
        let (node, optional) = self.unwrap_nullable(self.resolve(property));
        let secret = is_secret(property) || is_secret(node);
        let description = description(property)
            .or_else(|| description(node))
            .unwrap_or_default();
        if !secret && node.get("properties").is_some() {
            if optional {
                // An optional table: its own row says what leaving it out means.
                keys.push(Key {
                    path: path.to_owned(),
                    env: None,
                    kind: "table".to_owned(),
                    optional,
                    secret,
                    default: Some(Value::Null),
                    description,
                });
            }
            let default = default.filter(|d| !d.is_null());
            self.object(node, path, default, in_list, keys);
            return;
        }
        let kind = self.kind(node);
        let table_list = kind == "list of tables";
        keys.push(Key {
            path: path.to_owned(),
            env: (!in_list && !table_list).then(|| env_var(path)),
            kind,
            optional,
            secret,
            default: default.cloned(),
            description,
        });
        if let Some(items) = node.get("items") {
            let (items, _) = self.unwrap_nullable(self.resolve(items));
            if items.get("properties").is_some() {
                self.object(items, &format!("{path}[]"), None, true, keys);
            }
        }
    }

    fn kind(&self, node: &Value) -> String {
        let (node, _) = self.unwrap_nullable(self.resolve(node));
        let choices = choices(node);
        if !choices.is_empty() {
            return choices
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(" or ");
        }
        let type_name = match node.get("type") {
            Some(Value::String(t)) => t.as_str(),
            Some(Value::Array(types)) => types
                .iter()
                .filter_map(Value::as_str)
                .find(|t| *t != "null")
                .unwrap_or("value"),
            _ => "value",
        };
        match type_name {
            "array" => match node.get("items") {
                Some(items) => {
                    let (items, _) = self.unwrap_nullable(self.resolve(items));
                    if items.get("properties").is_some() {
                        "list of tables".to_owned()
                    } else {
                        format!("list of {}s", self.kind(items))
                    }
                }
                None => "list".to_owned(),
            },
            "object" => "table".to_owned(),
            other => other.to_owned(),
        }
    }
}

fn is_null_type(node: &Value) -> bool {
    node.get("type").is_some_and(|t| t == "null")
}

fn is_secret(node: &Value) -> bool {
    node.get(SECRET).and_then(Value::as_bool).unwrap_or(false)
}

/// The values of a string enumeration (`enum`, or `oneOf` of `const`s).
fn choices(node: &Value) -> Vec<String> {
    if let Some(values) = node.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect();
    }
    node.get("oneOf")
        .and_then(Value::as_array)
        .map(|alternatives| {
            alternatives
                .iter()
                .filter_map(|a| a.get("const").and_then(Value::as_str).map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn description(node: &Value) -> Option<String> {
    node.get("description")
        .and_then(Value::as_str)
        .map(|text| text.split_whitespace().collect::<Vec<_>>().join(" "))
        .filter(|text| !text.is_empty())
}

/// Replaces every secret value of `value` (a serialized configuration of
/// `service`'s type) with `"<redacted>"`; unset secrets stay unset.
pub fn redact(service: &Service, value: &mut Value) {
    let walk = Walk {
        root: &service.schema,
    };
    redact_node(&walk, &service.schema, value);
}

fn redact_node(walk: &Walk<'_>, node: &Value, value: &mut Value) {
    if value.is_null() {
        return;
    }
    let resolved = walk.resolve(node);
    let (inner, _) = walk.unwrap_nullable(resolved);
    if is_secret(node) || is_secret(resolved) || is_secret(inner) {
        *value = match value {
            Value::Array(items) => Value::Array(vec![redacted(); items.len()]),
            _ => redacted(),
        };
        return;
    }
    match value {
        Value::Object(fields) => {
            let Some(properties) = inner.get("properties").and_then(Value::as_object) else {
                return;
            };
            for (name, field) in fields.iter_mut() {
                if let Some(property) = properties.get(name) {
                    redact_node(walk, property, field);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = inner.get("items") {
                for item in items {
                    redact_node(walk, item_schema, item);
                }
            }
        }
        _ => {}
    }
}

fn redacted() -> Value {
    Value::String("<redacted>".to_owned())
}

/// The keys of `services` without a description (every key must have one).
pub fn undocumented(services: &[Service]) -> Vec<String> {
    services
        .iter()
        .flat_map(|service| {
            service
                .keys()
                .into_iter()
                .filter(|key| key.description.is_empty())
                .map(|key| format!("{}: {}", service.name, key.path))
        })
        .collect()
}

/// The whole reference document.
pub fn render(services: &[Service]) -> String {
    let mut out = String::new();
    out.push_str(INTRO);
    for service in services {
        let _ = write!(
            out,
            "\n## {} (`{}`)\n\n| Key | Environment variable | Type | Default | Description |\n|---|---|---|---|---|\n",
            service.name, service.binary
        );
        for key in service.keys() {
            let env = match key.env.as_deref() {
                Some(env) => format!("`{env}`"),
                None if key.kind == "table" => "(through its keys)".to_owned(),
                None => "(file only)".to_owned(),
            };
            let mut kind = key.kind.clone();
            if key.secret {
                kind.push_str(", **secret**");
            }
            if key.optional {
                kind.push_str(", optional");
            }
            let default = match &key.default {
                Some(value) if !value.is_null() => format!("`{}`", inline(value)),
                Some(_) => "unset".to_owned(),
                None if key.optional => "unset".to_owned(),
                None => match key.path.rsplit_once('.') {
                    Some((table, _)) => format!("required in `{table}`"),
                    None => "required".to_owned(),
                },
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {} | {} | {} |",
                key.path,
                env,
                cell(&kind),
                cell(&default),
                cell(&key.description)
            );
        }
    }
    out
}

/// A value in TOML's inline notation.
fn inline(value: &Value) -> String {
    match value {
        Value::Null => "unset".to_owned(),
        Value::String(text) => format!("{text:?}"),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(inline).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(fields) => {
            let entries = sorted(fields)
                .into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| format!("{k} = {}", inline(v)))
                .collect::<Vec<_>>();
            format!("{{ {} }}", entries.join(", "))
        }
        other => other.to_string(),
    }
}

fn sorted(fields: &Map<String, Value>) -> Vec<(&String, &Value)> {
    let mut entries: Vec<_> = fields.iter().collect();
    entries.sort_by(|a, b| a.0.cmp(b.0));
    entries
}

/// Escapes a table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|")
}

const INTRO: &str = "# Configuration reference

<!-- Generated from the services' typed configuration (doc comments become
descriptions). Do not edit by hand: change the doc comments or defaults, then
run `CHATAIGNE_UPDATE_DOCS=1 cargo test -p chataigne-tests --test operations configuration_reference`. -->

Each service reads its settings in three layers, later ones winning: the
compiled-in defaults below, then the TOML file given with `--config` (or
`CHATAIGNE_CONFIG`), then environment variables. A variable is `CHATAIGNE_`
followed by the key's path in capitals with `__` between levels
(`database.url` is `CHATAIGNE_DATABASE__URL`); lists may be given
comma-separated. Keys inside lists of tables (`[]`) are set in the file only.
Unknown keys are refused, but for a `CHATAIGNE_` variable under no top-level
key of the service (e.g. the `CHATAIGNE_GATEWAY_PORT` Kubernetes injects for a
Service named `chataigne-gateway`): it is ignored with one warning on stderr
naming it, never its value. A variable inside a known section that names no
key (`CHATAIGNE_DATABASE__URLL`) is refused.

`<binary> config check` loads the same layers, runs the start-up validation
and prints the effective configuration with secrets redacted (exit status 0
when it is valid).

Secrets are marked **secret**: pass them as environment variables from a
secret store, never in the file. With PostgreSQL the services refuse to start
without the secrets every replica must share and keep across restarts: the
tool-service's `idempotency.secret` and `cursor.keys`, the auth-service's
`keys.encryption_key` (and, with shared rate limits,
`oauth.rate_limits.redis.key_secret`). The gateway holds no such secret.
";
