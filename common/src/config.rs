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
    load_from_env(defaults, file, std::env::vars())
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
    let env: config::Map<String, String> =
        env.into_iter().filter(|(key, _)| is_setting(key)).collect();
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
    fn a_missing_file_is_an_error() {
        let missing = Path::new("/nonexistent/chataigne.toml");
        assert!(load_from_env(&defaults(), Some(missing), Vec::new()).is_err());
    }
}
