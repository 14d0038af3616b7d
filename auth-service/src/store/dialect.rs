//! What differs between the two backends of the store (connecting with the
//! statement bound, the migrations, the affected-row count) as a trait on
//! the sqlx database types; everything else is written once in
//! [`super::sql_store::SqlStore`].

use std::future::Future;

use chataigne_common::database::{Backend, DatabaseUrl};
use chataigne_common::sql_error::SqlErrorKind;
use sqlx::migrate::MigrateError;
use sqlx::{Decode, Encode, IntoArguments, Type};

use super::StoreError;
use super::statement::BindArg;
use crate::config::DatabaseConfig;

/// A sqlx database the store runs on: [`sqlx::Postgres`] or [`sqlx::Sqlite`].
///
/// The shared SQL also needs sqlx capabilities of the backend. Binding its
/// parameters reaches generic code through the supertrait [`BindArg`];
/// executing on a pool and in a transaction, and decoding text, integers,
/// booleans and bytes, are where-clauses, which the compiler does not carry
/// to a trait's users, so each `impl` of a store trait for
/// [`super::sql_store::SqlStore`] states them once, in the same words.
pub trait Dialect: sqlx::Database<Arguments: IntoArguments<Self>> + BindArg {
    /// The backend, for reading its error codes.
    const BACKEND: Backend;

    /// Opens the pool of `config` (whose URL names this backend, read into
    /// `url`), with the connection and statement bounds applied.
    fn connect(
        config: &DatabaseConfig,
        url: &DatabaseUrl,
    ) -> impl Future<Output = anyhow::Result<sqlx::Pool<Self>>> + Send;

    /// Applies the embedded migrations of this backend.
    fn migrate(pool: &sqlx::Pool<Self>) -> impl Future<Output = Result<(), MigrateError>> + Send;

    /// Rows a statement changed.
    fn rows_affected(result: &Self::QueryResult) -> u64;

    /// A storage error of this backend, split by what the caller can do.
    fn store_error(error: sqlx::Error) -> StoreError {
        if SqlErrorKind::of(Self::BACKEND, &error).is_transient() {
            StoreError::Unavailable(error.to_string())
        } else {
            StoreError::Failed(error.to_string())
        }
    }
}

/// A value the shared SQL binds as a parameter of `DB` (borrowing for `'q`).
pub trait Bind<'q, DB: sqlx::Database>: Encode<'q, DB> + Type<DB> {}

impl<'q, DB: sqlx::Database, T: Encode<'q, DB> + Type<DB>> Bind<'q, DB> for T {}

/// A value the shared SQL reads from a column of `DB`.
pub trait Read<DB: sqlx::Database>: for<'r> Decode<'r, DB> + Type<DB> {}

impl<DB: sqlx::Database, T: for<'r> Decode<'r, DB> + Type<DB>> Read<DB> for T {}
