//! Test support shared by the tool-service's integration tests: an access
//! check that grants everything, for tests about something else than
//! authorization (logs, the write switch); the catalogue over a store with
//! it, a call context, migrated and loaded stores on both backends, and the operator
//! subcommands of the real binary.
// Each test binary uses only part of this module.
#![allow(dead_code)]

use std::process::{Command, Output};

use chataigne_common::demo;
use chataigne_tools::access::{Access, Credential, Principal};
use chataigne_tools::cursor::CursorCodec;
use chataigne_tools::domain::{DomainError, TenantScope};
use chataigne_tools::store::seed::{DataSet, SeedSpec};
use chataigne_tools::store::{Owner, PgStore, SqliteStore, Store, StoreOptions};
use chataigne_tools::tools::{CallContext, Tools};

/// The tool-service binary under test.
const BINARY: &str = env!("CARGO_BIN_EXE_chataigne-tool-service");

/// Runs the binary with `args` on the database at `url` (no configuration
/// file); returns its output, whether it succeeded or not.
pub fn invoke(url: &str, args: &[&str]) -> Output {
    Command::new(BINARY)
        .args(args)
        .env("CHATAIGNE_DATABASE__URL", url)
        .env_remove("CHATAIGNE_CONFIG")
        .output()
        .expect("the binary runs")
}

/// [`invoke`], panicking unless the binary succeeds.
pub fn run_binary(url: &str, args: &[&str]) -> Output {
    let output = invoke(url, args);
    assert!(
        output.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&output.stderr),
        String::from_utf8_lossy(&output.stdout)
    );
    output
}

/// The catalogue over `store`, every permission granted to `user`.
pub fn tools<S: Store>(store: S, user: &'static str) -> Tools<S, AllowAll> {
    Tools::new(
        store,
        AllowAll(user),
        CursorCodec::new(vec![vec![7; 32]], 60_000),
    )
    .unwrap()
}

/// A call in English at `now_ms` (the credential is not checked by
/// [`AllowAll`]).
pub fn context(now_ms: i64) -> CallContext {
    CallContext {
        credential: Credential::presented("assertion".into()),
        locale: chataigne_tools::domain::Locale::En,
        now_ms,
    }
}

/// A migrated in-memory SQLite store loaded with the data set of `spec`.
pub async fn seeded_sqlite(spec: &SeedSpec) -> SqliteStore {
    loaded_sqlite(&DataSet::generate(spec)).await
}

/// A migrated in-memory SQLite store loaded with `data`.
pub async fn loaded_sqlite(data: &DataSet) -> SqliteStore {
    let store = SqliteStore::connect("sqlite::memory:", &StoreOptions::default())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    store.load(data).await.unwrap();
    store
}

/// A fresh PostgreSQL database (named after `prefix`), migrated and loaded
/// with `data`; `None` only outside CI when no server is reachable.
pub async fn loaded_postgres(prefix: &str, data: &DataSet) -> Option<PgStore> {
    let url = chataigne_common::testing::fresh_postgres_database(prefix).await?;
    let store = PgStore::connect(&url, &StoreOptions::default())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    store.load(data).await.unwrap();
    Some(store)
}

/// Grants every permission on every tenant to the user it holds, through the
/// demo client.
#[derive(Clone)]
pub struct AllowAll(pub &'static str);

impl AllowAll {
    fn principal(&self) -> Principal {
        Principal {
            user_id: self.0.to_owned(),
            client_id: demo::DEMO_CLIENT_ID.to_owned(),
        }
    }
}

impl Access for AllowAll {
    async fn admit(&self, credential: Credential) -> Result<Credential, DomainError> {
        Ok(credential)
    }

    async fn authorize(
        &self,
        _credential: &Credential,
        _permission: &str,
        _owner: &Owner,
    ) -> Result<Principal, DomainError> {
        Ok(self.principal())
    }

    async fn resolve(
        &self,
        _credential: &Credential,
        _permission: &str,
    ) -> Result<(Principal, TenantScope), DomainError> {
        Ok((
            self.principal(),
            TenantScope {
                all_tenants: true,
                ..TenantScope::default()
            },
        ))
    }
}
