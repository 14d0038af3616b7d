//! Layered configuration: compiled-in defaults, then an optional TOML file, then
//! `CHATAIGNE_*` environment variables (`__` separates nesting levels, e.g.
//! `CHATAIGNE_DATABASE__URL`). Each service validates the result at start-up.

use std::path::Path;

use serde::{Serialize, de::DeserializeOwned};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration could not be loaded: {0}")]
    Load(#[from] config::ConfigError),
    #[error("invalid configuration: {0}")]
    Invalid(String),
}

/// Loads `T` from `defaults`, then `file` (if given; it must exist), then the
/// environment variables starting with `CHATAIGNE_`.
pub fn load<T>(defaults: &T, file: Option<&Path>) -> Result<T, ConfigError>
where
    T: Serialize + DeserializeOwned,
{
    load_from_env(defaults, file, std::env::vars())
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
    T: Serialize + DeserializeOwned,
    I: IntoIterator<Item = (String, String)>,
{
    let mut builder = config::Config::builder().add_source(config::Config::try_from(defaults)?);
    if let Some(path) = file {
        builder = builder.add_source(config::File::from(path).required(true));
    }
    let env: config::Map<String, String> =
        env.into_iter().filter(|(key, _)| is_setting(key)).collect();
    builder = builder.add_source(
        config::Environment::with_prefix("CHATAIGNE")
            .prefix_separator("_")
            .separator("__")
            .try_parsing(true)
            .list_separator(",")
            .with_list_parse_key("allowed_cidrs")
            .with_list_parse_key("trusted_proxies")
            .with_list_parse_key("allowed_origins")
            .with_list_parse_key("cursor.keys")
            .source(Some(env)),
    );
    Ok(builder.build()?.try_deserialize()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        listen: String,
        database: Db,
    }

    #[derive(Debug, Serialize, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Db {
        url: String,
        max_connections: u32,
    }

    fn defaults() -> Sample {
        Sample {
            listen: "127.0.0.1:0".into(),
            database: Db {
                url: "sqlite::memory:".into(),
                max_connections: 5,
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
    fn a_missing_file_is_an_error() {
        let missing = Path::new("/nonexistent/chataigne.toml");
        assert!(load_from_env(&defaults(), Some(missing), Vec::new()).is_err());
    }
}
