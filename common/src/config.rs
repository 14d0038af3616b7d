//! Layered configuration: compiled-in defaults, then an optional TOML file, then
//! `CHATAIGNE_*` environment variables (`__` separates nesting levels, e.g.
//! `CHATAIGNE_DATABASE__URL`). Each service validates the result at start-up.

use std::path::Path;

use schemars::JsonSchema;
use serde::{Serialize, de::DeserializeOwned};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration could not be loaded: {0}")]
    Load(#[from] config::ConfigError),
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// Loads `T` from `defaults`, then `file` (if given; it must exist), then the
/// environment variables starting with `CHATAIGNE_`. A variable of a list
/// (any key whose type is a list of values, found from `T`'s schema) may be
/// comma-separated.
pub fn load<T>(defaults: &T, file: Option<&Path>) -> Result<T, ConfigError>
where
    T: Serialize + DeserializeOwned + JsonSchema,
{
    warn_unknown_variables::<T>();
    load_from_env(defaults, file, std::env::vars())
}

/// One line on stderr per `CHATAIGNE_*` variable of the process that is no
/// setting of `T` ([`unknown_variables`]), naming it, never its value
/// (telemetry is not started yet when the configuration loads).
pub fn warn_unknown_variables<T: JsonSchema>() {
    for variable in unknown_variables::<T, _>(std::env::vars()) {
        eprintln!("warning: {variable} is not a configuration setting; ignored");
    }
}

/// The top-level key a setting variable falls under (`CHATAIGNE_DATABASE__URL`
/// is under `database`).
fn section_of(variable: &str) -> String {
    variable
        .trim_start_matches("CHATAIGNE_")
        .split("__")
        .next()
        .unwrap_or_default()
        .to_lowercase()
}

/// The top-level keys of `T` (settings and sections).
fn top_level_keys<T: JsonSchema>() -> std::collections::BTreeSet<String> {
    crate::config_reference::Service::schema::<T>("")
        .keys()
        .into_iter()
        .filter_map(|key| key.path.split(['.', '[']).next().map(str::to_owned))
        .collect()
}

/// The `CHATAIGNE_*` variables of `env` under no top-level key of `T` (e.g.
/// the `CHATAIGNE_GATEWAY_PORT` Kubernetes injects for a Service named
/// `chataigne-gateway`): ignored with a warning rather than fatal. A
/// variable under a known section (a typo'd `CHATAIGNE_DATABASE__URLL`) is
/// not among them: the load refuses it.
pub fn unknown_variables<T, I>(env: I) -> Vec<String>
where
    T: JsonSchema,
    I: IntoIterator<Item = (String, String)>,
{
    let known = top_level_keys::<T>();
    let mut unknown: Vec<String> = env
        .into_iter()
        .map(|(key, _)| key)
        .filter(|key| is_setting(key) && !known.contains(&section_of(key)))
        .collect();
    unknown.sort();
    unknown
}

/// The environment variable of a dotted key: `CHATAIGNE_` then the path in
/// capitals with `__` between levels (`database.url` is
/// `CHATAIGNE_DATABASE__URL`), for messages that name a missing key.
pub fn env_var(path: &str) -> String {
    format!("CHATAIGNE_{}", path.replace('.', "__").to_uppercase())
}

/// Variables with the prefix that are not settings: the file's own name, the
/// launcher's and command-line tools' inputs, and the test suite's knobs.
const NOT_SETTINGS: &[&str] = &[
    "CHATAIGNE_CONFIG",
    "CHATAIGNE_DATA_DIR",
    "CHATAIGNE_PORT",
    "CHATAIGNE_NEW_PASSWORD",
];

fn is_setting(key: &str) -> bool {
    key.starts_with("CHATAIGNE_")
        && !key.starts_with("CHATAIGNE_TEST_")
        && !NOT_SETTINGS.contains(&key)
}

/// [`load`] with an explicit environment, for tests.
pub fn load_from_env<T, I>(defaults: &T, file: Option<&Path>, env: I) -> Result<T, ConfigError>
where
    T: Serialize + DeserializeOwned + JsonSchema,
    I: IntoIterator<Item = (String, String)>,
{
    let mut builder = config::Config::builder().add_source(config::Config::try_from(defaults)?);
    if let Some(path) = file {
        builder = builder.add_source(config::File::from(path).required(true));
    }
    let known = top_level_keys::<T>();
    let env: config::Map<String, String> = env
        .into_iter()
        .filter(|(key, _)| is_setting(key) && known.contains(&section_of(key)))
        .collect();
    let mut variables = config::Environment::with_prefix("CHATAIGNE")
        .prefix_separator("_")
        .separator("__")
        .try_parsing(true)
        .list_separator(",");
    for key in crate::config_reference::Service::schema::<T>("").list_keys() {
        variables = variables.with_list_parse_key(&key);
    }
    builder = builder.add_source(variables.source(Some(env)));
    Ok(builder.build()?.try_deserialize()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        listen: String,
        database: Db,
    }

    #[derive(Debug, Serialize, Deserialize, PartialEq, JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Db {
        url: String,
        max_connections: u32,
        #[serde(default)]
        replicas: Vec<String>,
    }

    fn defaults() -> Sample {
        Sample {
            listen: "127.0.0.1:0".into(),
            database: Db {
                url: "sqlite::memory:".into(),
                max_connections: 5,
                replicas: Vec::new(),
            },
        }
    }

    #[test]
    fn environment_overrides_file_which_overrides_defaults() {
        let dir = std::env::temp_dir().join(format!("chataigne-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("svc.toml");
        std::fs::write(
            &file,
            "listen = \"0.0.0.0:8080\"\n[database]\nmax_connections = 9\n",
        )
        .unwrap();
        let env = vec![
            (
                "CHATAIGNE_DATABASE__URL".to_owned(),
                "postgres://db/x".to_owned(),
            ),
            ("OTHER_VAR".to_owned(), "ignored".to_owned()),
            ("CHATAIGNE_CONFIG".to_owned(), "svc.toml".to_owned()),
            (
                "CHATAIGNE_TEST_POSTGRES_URL".to_owned(),
                "postgres://x".to_owned(),
            ),
        ];
        let loaded: Sample = load_from_env(&defaults(), Some(&file), env).unwrap();
        assert_eq!(loaded.listen, "0.0.0.0:8080");
        assert_eq!(loaded.database.url, "postgres://db/x");
        assert_eq!(loaded.database.max_connections, 9);
    }

    #[test]
    fn every_list_of_values_may_be_given_comma_separated() {
        let env = vec![(
            "CHATAIGNE_DATABASE__REPLICAS".to_owned(),
            "postgres://a/x,postgres://b/x".to_owned(),
        )];
        let loaded: Sample = load_from_env(&defaults(), None, env).unwrap();
        assert_eq!(
            loaded.database.replicas,
            ["postgres://a/x", "postgres://b/x"]
        );
    }

    #[test]
    fn a_key_is_named_by_its_variable() {
        assert_eq!(
            env_var("oauth.rate_limits.redis.key_secret"),
            "CHATAIGNE_OAUTH__RATE_LIMITS__REDIS__KEY_SECRET"
        );
    }

    #[test]
    fn a_stray_variable_is_ignored_and_named_but_a_typo_in_a_known_section_is_refused() {
        // What Kubernetes injects for a Service named `chataigne-gateway`.
        let stray = vec![
            (
                "CHATAIGNE_GATEWAY_PORT".to_owned(),
                "tcp://10.0.0.1:80".to_owned(),
            ),
            (
                "CHATAIGNE_GATEWAY_SERVICE_HOST".to_owned(),
                "10.0.0.1".to_owned(),
            ),
            ("CHATAIGNE_LISTEN".to_owned(), "0.0.0.0:1".to_owned()),
        ];
        let loaded: Sample = load_from_env(&defaults(), None, stray.clone()).unwrap();
        assert_eq!(loaded.listen, "0.0.0.0:1");
        assert_eq!(
            unknown_variables::<Sample, _>(stray),
            ["CHATAIGNE_GATEWAY_PORT", "CHATAIGNE_GATEWAY_SERVICE_HOST"]
        );
        let typo = vec![(
            "CHATAIGNE_DATABASE__URLL".to_owned(),
            "postgres://db/x".to_owned(),
        )];
        assert!(unknown_variables::<Sample, _>(typo.clone()).is_empty());
        let error = load_from_env::<Sample, _>(&defaults(), None, typo)
            .unwrap_err()
            .to_string();
        assert!(error.contains("urll"), "{error}");
    }

    #[test]
    fn a_missing_file_is_an_error() {
        let missing = Path::new("/nonexistent/chataigne.toml");
        assert!(load_from_env(&defaults(), Some(missing), Vec::new()).is_err());
    }
}
