//! The database contract both services share: the `database` section of their
//! configuration and the one reading of its URL (which backend, whether an
//! SQLite database lives in memory, which file it is).

use schemars::JsonSchema;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::secrets::serialize_secret;

/// The database engines a service runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `postgres://…` or `postgresql://…`: production, several replicas.
    Postgres,
    /// `sqlite:…`: embedded mode, one process.
    Sqlite,
}

/// What a database URL names, read once by [`DatabaseUrl::parse`]. It keeps
/// no credentials: the URL itself stays in the configuration's secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseUrl {
    backend: Backend,
    in_memory: bool,
    path: Option<String>,
}

/// The message of a URL no backend accepts.
const UNKNOWN_SCHEME: &str = "database.url must start with postgres:// or sqlite:";

impl DatabaseUrl {
    /// Reads `url`: `postgres://…` and `postgresql://…` name PostgreSQL,
    /// `sqlite:…` (e.g. `sqlite://file.db?mode=rwc`, `sqlite::memory:`)
    /// SQLite; anything else is refused with a message naming `database.url`.
    pub fn parse(url: &str) -> Result<DatabaseUrl, String> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            return Ok(DatabaseUrl {
                backend: Backend::Postgres,
                in_memory: false,
                path: None,
            });
        }
        let Some(rest) = url.strip_prefix("sqlite:") else {
            return Err(UNKNOWN_SCHEME.to_owned());
        };
        let in_memory = rest.contains(":memory:") || rest.contains("mode=memory");
        let file = rest.strip_prefix("//").unwrap_or(rest);
        let file = file.split_once('?').map_or(file, |(file, _)| file);
        Ok(DatabaseUrl {
            backend: Backend::Sqlite,
            in_memory,
            path: (!in_memory && !file.is_empty()).then(|| file.to_owned()),
        })
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// An SQLite database that lives in memory (`:memory:` or
    /// `mode=memory`): it exists as long as its one connection.
    pub fn is_in_memory(&self) -> bool {
        self.in_memory
    }

    /// The file of an SQLite database on disk, as written in the URL (no
    /// query); `None` for PostgreSQL and in-memory databases.
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }
}

/// Where and how to reach the database. Each service gives its own defaults
/// (its file name, pool size and statement bound) in its configuration's
/// defaults, which the loader always starts from.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DatabaseConfig {
    /// `postgres://…` (production) or `sqlite:…` (embedded). May hold a password.
    #[serde(serialize_with = "serialize_secret")]
    #[schemars(with = "String", extend("x-secret" = true))]
    pub url: SecretString,
    /// Connections in the pool, 1 to 1000.
    pub max_connections: u32,
    /// Bound on opening (and waiting for) a connection; one start-up attempt.
    pub connect_timeout_ms: u64,
    /// Bound on any statement (Postgres `statement_timeout`, SQLite busy
    /// timeout); a call's own deadline may be shorter.
    pub statement_timeout_ms: u64,
}

impl DatabaseConfig {
    /// The connection URL. Never log it.
    pub fn url(&self) -> &str {
        self.url.expose_secret()
    }

    /// For an administration command: refuses to act on the compiled-in
    /// default (`default`, a file created in the working directory) when
    /// neither the configuration nor `--data-dir` named a database.
    pub fn named_for_administration(
        &self,
        default: &DatabaseConfig,
        data_dir_given: bool,
    ) -> Result<(), String> {
        if data_dir_given || self.url() != default.url() {
            return Ok(());
        }
        Err(format!(
            "no database configured: set database.url ({}) or pass --data-dir with the \
             embedded stack's data directory; nothing was created",
            crate::config::env_var("database.url")
        ))
    }

    /// What the URL names (see [`DatabaseUrl::parse`]).
    pub fn database_url(&self) -> Result<DatabaseUrl, String> {
        DatabaseUrl::parse(self.url())
    }

    /// The backend of the URL; `None` when no backend accepts it.
    pub fn backend(&self) -> Option<Backend> {
        self.database_url().ok().map(|url| url.backend())
    }

    /// Rejects a URL no backend accepts and bounds out of range, with a
    /// message naming the key; returns what the URL names.
    pub fn validate(&self) -> Result<DatabaseUrl, String> {
        let url = self.database_url()?;
        let bounds = [
            ("max_connections", u64::from(self.max_connections), 1_000),
            ("connect_timeout_ms", self.connect_timeout_ms, 60_000),
            ("statement_timeout_ms", self.statement_timeout_ms, 600_000),
        ];
        for (key, value, max) in bounds {
            if !(1..=max).contains(&value) {
                return Err(format!("database.{key} must be between 1 and {max}"));
            }
        }
        Ok(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(url: &str) -> DatabaseConfig {
        DatabaseConfig {
            url: SecretString::from(url.to_owned()),
            max_connections: 10,
            connect_timeout_ms: 3_000,
            statement_timeout_ms: 5_000,
        }
    }

    #[test]
    fn both_postgres_schemes_name_postgres() {
        for url in [
            "postgres://u:p@db/x",
            "postgresql://db:5432/x?sslmode=require",
        ] {
            let parsed = DatabaseUrl::parse(url).unwrap();
            assert_eq!(parsed.backend(), Backend::Postgres, "{url}");
            assert!(!parsed.is_in_memory());
            assert_eq!(parsed.path(), None);
        }
    }

    #[test]
    fn sqlite_urls_give_their_file_or_live_in_memory() {
        let cases = [
            (
                "sqlite://chataigne-auth.db?mode=rwc",
                false,
                Some("chataigne-auth.db"),
            ),
            ("sqlite:tools.db", false, Some("tools.db")),
            (
                "sqlite:///var/lib/c/auth.db?mode=rw",
                false,
                Some("/var/lib/c/auth.db"),
            ),
            ("sqlite::memory:", true, None),
            ("sqlite://:memory:", true, None),
            ("sqlite://shared?mode=memory&cache=shared", true, None),
        ];
        for (url, in_memory, path) in cases {
            let parsed = DatabaseUrl::parse(url).unwrap();
            assert_eq!(parsed.backend(), Backend::Sqlite, "{url}");
            assert_eq!(parsed.is_in_memory(), in_memory, "{url}");
            assert_eq!(parsed.path(), path, "{url}");
        }
    }

    #[test]
    fn other_schemes_are_refused_naming_the_key() {
        for url in ["mysql://x", "postgres:x", "", "redis://x", "SQLITE:x"] {
            let error = DatabaseUrl::parse(url).unwrap_err();
            assert!(error.contains("database.url"), "{url}: {error}");
            assert_eq!(config(url).backend(), None, "{url}");
        }
    }

    #[test]
    fn bounds_are_checked_with_the_key_name() {
        assert_eq!(
            config("sqlite::memory:")
                .validate()
                .map(|url| url.backend()),
            Ok(Backend::Sqlite)
        );
        type Mutation = fn(&mut DatabaseConfig);
        let cases: [(Mutation, &str); 6] = [
            (|c| c.max_connections = 0, "database.max_connections"),
            (|c| c.max_connections = 1_001, "database.max_connections"),
            (|c| c.connect_timeout_ms = 0, "database.connect_timeout_ms"),
            (
                |c| c.connect_timeout_ms = 60_001,
                "database.connect_timeout_ms",
            ),
            (
                |c| c.statement_timeout_ms = 0,
                "database.statement_timeout_ms",
            ),
            (
                |c| c.statement_timeout_ms = 600_001,
                "database.statement_timeout_ms",
            ),
        ];
        for (mutate, key) in cases {
            let mut config = config("postgres://db/x");
            mutate(&mut config);
            let error = config.validate().unwrap_err();
            assert!(error.contains(key), "{key}: {error}");
        }
    }

    #[test]
    fn debug_hides_the_url() {
        let config = config("postgres://u:hunter2@db/x");
        assert!(!format!("{config:?}").contains("hunter2"));
        assert!(!format!("{:?}", config.database_url()).contains("hunter2"));
    }
}
