//! `config check`, shared by the three binaries: load the configuration as
//! the service would (defaults, file, `CHATAIGNE_*` environment), run its
//! start-up validation, and print the effective configuration as TOML with
//! every secret redacted.

use std::path::Path;

use anyhow::Context;
use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;

use crate::config_reference::{Service, redact};

/// Loads `T` from `defaults`, `file` and the process environment, validates
/// it with `validate` and prints the redacted effective configuration to
/// standard output. An error (the binary then exits non-zero) says why the
/// configuration cannot start the service.
pub fn run<T>(
    service: &str,
    defaults: &T,
    file: Option<&Path>,
    validate: impl FnOnce(&T) -> anyhow::Result<()>,
) -> anyhow::Result<()>
where
    T: Serialize + DeserializeOwned + JsonSchema,
{
    crate::config::warn_unknown_variables::<T>();
    let report = check(service, defaults, file, std::env::vars(), validate)?;
    print!("{report}");
    Ok(())
}

/// [`run`] with an explicit environment; returns what `run` prints.
pub fn check<T, I>(
    service: &str,
    defaults: &T,
    file: Option<&Path>,
    env: I,
    validate: impl FnOnce(&T) -> anyhow::Result<()>,
) -> anyhow::Result<String>
where
    T: Serialize + DeserializeOwned + JsonSchema,
    I: IntoIterator<Item = (String, String)>,
{
    let config: T = crate::config::load_from_env(defaults, file, env)
        .with_context(|| format!("{service}: the configuration cannot be loaded"))?;
    validate(&config).with_context(|| format!("{service}: the configuration is invalid"))?;
    let described = Service::schema::<T>(service);
    let mut value = serde_json::to_value(&config)?;
    redact(&described, &mut value);
    drop_unset(&mut value);
    let body = toml::to_string(&value).context("rendering the configuration")?;
    let source = file.map_or_else(
        || "defaults and environment".to_owned(),
        |path| format!("defaults, {} and environment", path.display()),
    );
    Ok(format!(
        "# {service}: configuration valid ({source}); secrets redacted, unset keys omitted.\n{body}"
    ))
}

/// TOML has no null: unset optional keys are left out.
fn drop_unset(value: &mut Value) {
    match value {
        Value::Object(fields) => {
            fields.retain(|_, field| !field.is_null());
            fields.values_mut().for_each(drop_unset);
        }
        Value::Array(items) => items.iter_mut().for_each(drop_unset),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::{ExposeSecret, SecretString};
    use serde::Deserialize;

    #[derive(Debug, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields, default)]
    struct Sample {
        /// Where to listen.
        listen: String,
        /// The database.
        database: Db,
        /// Keys, newest first.
        #[serde(serialize_with = "secrets")]
        #[schemars(with = "Vec<String>", extend("x-secret" = true))]
        keys: Vec<SecretString>,
    }

    #[derive(Debug, Serialize, Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields, default)]
    struct Db {
        /// Connection URL.
        #[serde(serialize_with = "optional_secret")]
        #[schemars(with = "Option<String>", extend("x-secret" = true))]
        url: Option<SecretString>,
        /// Pool size.
        max_connections: u32,
    }

    impl Default for Sample {
        fn default() -> Self {
            Sample {
                listen: "127.0.0.1:0".into(),
                database: Db::default(),
                keys: Vec::new(),
            }
        }
    }

    impl Default for Db {
        fn default() -> Self {
            Db {
                url: None,
                max_connections: 5,
            }
        }
    }

    fn secrets<S: serde::Serializer>(v: &[SecretString], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v.iter().map(|k| k.expose_secret()))
    }

    fn optional_secret<S: serde::Serializer>(
        v: &Option<SecretString>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => s.serialize_some(v.expose_secret()),
            None => s.serialize_none(),
        }
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn the_effective_configuration_is_printed_with_secrets_redacted() {
        let report = check(
            "sample",
            &Sample::default(),
            None,
            env(&[
                ("CHATAIGNE_DATABASE__URL", "postgres://u:hunter2@db/x"),
                ("CHATAIGNE_DATABASE__MAX_CONNECTIONS", "9"),
            ]),
            |_| Ok(()),
        )
        .unwrap();
        assert!(!report.contains("hunter2"), "{report}");
        assert!(report.contains("url = \"<redacted>\""), "{report}");
        assert!(report.contains("max_connections = 9"), "{report}");
        assert!(report.contains("listen = \"127.0.0.1:0\""), "{report}");
        assert!(
            report.starts_with("# sample: configuration valid"),
            "{report}"
        );
    }

    #[test]
    fn an_invalid_configuration_is_an_error_with_the_reason() {
        let error = check("sample", &Sample::default(), None, Vec::new(), |_| {
            anyhow::bail!("database.url (CHATAIGNE_DATABASE__URL) is required")
        })
        .unwrap_err();
        let text = format!("{error:#}");
        assert!(
            text.contains("sample: the configuration is invalid"),
            "{text}"
        );
        assert!(text.contains("CHATAIGNE_DATABASE__URL"), "{text}");
        let error = check(
            "sample",
            &Sample::default(),
            None,
            // Inside a known section, an unknown key is refused.
            env(&[("CHATAIGNE_DATABASE__NOT_A_KEY", "1")]),
            |_| Ok(()),
        )
        .unwrap_err();
        assert!(
            format!("{error:#}").contains("cannot be loaded"),
            "{error:#}"
        );
    }

    #[test]
    fn the_reference_lists_every_key_with_its_variable_and_marks_secrets() {
        let service = Service::of("sample", "sample-bin", &Sample::default()).unwrap();
        let keys = service.keys();
        let paths: Vec<&str> = keys.iter().map(|k| k.path.as_str()).collect();
        assert_eq!(
            paths,
            ["database.max_connections", "database.url", "keys", "listen"]
        );
        let url = &keys[1];
        assert!(url.secret && url.optional);
        assert_eq!(url.env.as_deref(), Some("CHATAIGNE_DATABASE__URL"));
        assert_eq!(url.description, "Connection URL.");
        assert_eq!(keys[2].kind, "list of strings");
        assert!(keys[2].secret);
        assert_eq!(keys[0].default, Some(Value::from(5)));
        let doc = crate::config_reference::render(&[service]);
        assert!(
            doc.contains("| `database.max_connections` | `CHATAIGNE_DATABASE__MAX_CONNECTIONS` | integer | `5` | Pool size. |"),
            "{doc}"
        );
    }
}
