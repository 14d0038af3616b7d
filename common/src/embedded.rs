//! The layout of the embedded stack's data directory (the launcher's
//! `--data-dir`): where its SQLite databases and secret files are, so that the
//! launcher and every service's administration commands find the same ones.

use std::path::{Path, PathBuf};

use secrecy::SecretString;

/// The auth-service's database.
pub const AUTH_DB: &str = "auth.db";
/// The tool-service's database.
pub const TOOLS_DB: &str = "tools.db";
/// The auth-service's key-encryption key (sealing the signing keys in `auth.db`).
pub const SIGNING_KEYS_KEK: &str = "signing-keys.kek";
/// The tool-service's idempotency secret.
pub const IDEMPOTENCY_SECRET: &str = "idempotency.key";

/// One embedded data directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataDir {
    root: PathBuf,
}

impl DataDir {
    /// The directory at `root` (not read yet).
    pub fn new(root: impl Into<PathBuf>) -> DataDir {
        DataDir { root: root.into() }
    }

    /// The directory of a stack that has started at least once: `root` must
    /// hold `database`, else the error says how to create it. Administration
    /// commands use this, so that a mistyped path never creates an empty
    /// database beside the running stack's.
    pub fn existing(root: impl Into<PathBuf>, database: &str) -> anyhow::Result<DataDir> {
        let dir = DataDir::new(root);
        let path = dir.path(database);
        anyhow::ensure!(
            path.is_file(),
            "no embedded stack data in {}: {} is missing (start `chataigne --data-dir {}` once first)",
            dir.root.display(),
            database,
            dir.root.display()
        );
        Ok(dir)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// `name` inside the directory.
    pub fn path(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    /// The SQLite URL of `database` (one of [`AUTH_DB`], [`TOOLS_DB`]),
    /// created on first use when `create` is set.
    pub fn sqlite_url(&self, database: &str, create: bool) -> String {
        let mode = if create { "rwc" } else { "rw" };
        format!("sqlite://{}?mode={mode}", self.path(database).display())
    }

    /// The trimmed content of the secret file `name`, when it exists and is
    /// not empty.
    pub fn read_secret(&self, name: &str) -> Option<SecretString> {
        let content = std::fs::read_to_string(self.path(name)).ok()?;
        let trimmed = content.trim();
        (!trimmed.is_empty()).then(|| SecretString::from(trimmed.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use secrecy::ExposeSecret;

    #[test]
    fn urls_and_secrets_are_read_from_the_directory_and_a_missing_database_is_refused() {
        let root = std::env::temp_dir().join(format!(
            "chataigne-datadir-{}",
            uuid::Uuid::new_v4().simple()
        ));
        std::fs::create_dir_all(&root).unwrap();
        let refused = DataDir::existing(&root, AUTH_DB).unwrap_err().to_string();
        assert!(refused.contains("auth.db is missing"), "{refused}");
        std::fs::write(root.join(AUTH_DB), b"").unwrap();
        std::fs::write(root.join(SIGNING_KEYS_KEK), "  a-key \n").unwrap();
        let dir = DataDir::existing(&root, AUTH_DB).unwrap();
        assert_eq!(
            dir.sqlite_url(AUTH_DB, false),
            format!("sqlite://{}?mode=rw", root.join("auth.db").display())
        );
        assert!(
            dir.sqlite_url(TOOLS_DB, true)
                .ends_with("tools.db?mode=rwc")
        );
        assert_eq!(
            dir.read_secret(SIGNING_KEYS_KEK)
                .as_ref()
                .map(|s| s.expose_secret().to_owned()),
            Some("a-key".to_owned())
        );
        assert!(dir.read_secret(IDEMPOTENCY_SECRET).is_none());
        let _ = std::fs::remove_dir_all(&root);
    }
}
