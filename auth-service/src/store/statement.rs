//! Running one shared statement: its parameters as [`Arg`]s bound in order,
//! executed or fetched on the pool or in a transaction alike, with the
//! backend's errors mapped to [`super::StoreError`].

use sqlx::query::Query;
use sqlx::{Executor, FromRow};

use super::StoreResult;
use super::dialect::{Bind, Dialect};

/// A parameter of a shared statement, in one of the types the SQL binds.
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    Text(&'a str),
    OptText(Option<&'a str>),
    Int(i64),
    Bool(bool),
    Bytes(&'a [u8]),
}

/// A statement of `DB` with (some of) its parameters bound.
type Bound<'q, DB> = Query<'q, DB, <DB as sqlx::Database>::Arguments>;

/// Binding an [`Arg`], for every backend that encodes all of its types: a
/// supertrait of [`Dialect`], so that generic code binds without stating
/// those bounds.
pub trait BindArg: sqlx::Database {
    /// `query` with `arg` bound as its next parameter.
    fn bind_arg<'q>(query: Bound<'q, Self>, arg: Arg<'_>) -> Bound<'q, Self>;
}

impl<DB: sqlx::Database> BindArg for DB
where
    for<'a> &'a str: Bind<'a, DB>,
    for<'a> Option<&'a str>: Bind<'a, DB>,
    for<'a> &'a [u8]: Bind<'a, DB>,
    i64: for<'a> Bind<'a, DB>,
    bool: for<'a> Bind<'a, DB>,
{
    fn bind_arg<'q>(query: Bound<'q, DB>, arg: Arg<'_>) -> Bound<'q, DB> {
        match arg {
            Arg::Text(value) => query.bind(value),
            Arg::OptText(value) => query.bind(value),
            Arg::Int(value) => query.bind(value),
            Arg::Bool(value) => query.bind(value),
            Arg::Bytes(value) => query.bind(value),
        }
    }
}

/// `sql` with `args` bound as `$1`, `$2`, ….
fn bound<'q, DB: Dialect, const N: usize>(sql: &'static str, args: [Arg<'_>; N]) -> Bound<'q, DB> {
    args.into_iter().fold(sqlx::query(sql), DB::bind_arg)
}

/// Runs `sql` on `executor` (the pool or a transaction): the rows it changed.
pub(super) async fn execute<'c, DB: Dialect, const N: usize>(
    executor: impl Executor<'c, Database = DB>,
    sql: &'static str,
    args: [Arg<'_>; N],
) -> StoreResult<u64> {
    let done = bound(sql, args)
        .execute(executor)
        .await
        .map_err(DB::store_error)?;
    Ok(DB::rows_affected(&done))
}

/// [`execute`], for a statement whose row count does not matter.
pub(super) async fn run<'c, DB: Dialect, const N: usize>(
    executor: impl Executor<'c, Database = DB>,
    sql: &'static str,
    args: [Arg<'_>; N],
) -> StoreResult<()> {
    execute(executor, sql, args).await.map(drop)
}

/// [`execute`]: whether the statement changed a row.
pub(super) async fn changed<'c, DB: Dialect, const N: usize>(
    executor: impl Executor<'c, Database = DB>,
    sql: &'static str,
    args: [Arg<'_>; N],
) -> StoreResult<bool> {
    Ok(execute(executor, sql, args).await? > 0)
}

/// The first row of `sql` on `executor`, decoded, if there is one.
pub(super) async fn fetch_optional<'c, DB: Dialect, O, const N: usize>(
    executor: impl Executor<'c, Database = DB>,
    sql: &'static str,
    args: [Arg<'_>; N],
) -> StoreResult<Option<O>>
where
    O: for<'r> FromRow<'r, DB::Row>,
{
    let row = bound(sql, args)
        .fetch_optional(executor)
        .await
        .map_err(DB::store_error)?;
    row.map(|row| O::from_row(&row))
        .transpose()
        .map_err(DB::store_error)
}

/// The one row of `sql` on `executor` (none is an error), decoded.
pub(super) async fn fetch_one<'c, DB: Dialect, O, const N: usize>(
    executor: impl Executor<'c, Database = DB>,
    sql: &'static str,
    args: [Arg<'_>; N],
) -> StoreResult<O>
where
    O: for<'r> FromRow<'r, DB::Row>,
{
    fetch_optional(executor, sql, args)
        .await?
        .ok_or_else(|| DB::store_error(sqlx::Error::RowNotFound))
}

/// Every row of `sql` on `executor`, undecoded, in order (for a caller that
/// decodes some columns from one row only).
pub(super) async fn fetch_rows<'c, DB: Dialect, const N: usize>(
    executor: impl Executor<'c, Database = DB>,
    sql: &'static str,
    args: [Arg<'_>; N],
) -> StoreResult<Vec<DB::Row>> {
    bound(sql, args)
        .fetch_all(executor)
        .await
        .map_err(DB::store_error)
}

/// Every row of `sql` on `executor`, decoded, in order.
pub(super) async fn fetch_all<'c, DB: Dialect, O, const N: usize>(
    executor: impl Executor<'c, Database = DB>,
    sql: &'static str,
    args: [Arg<'_>; N],
) -> StoreResult<Vec<O>>
where
    O: for<'r> FromRow<'r, DB::Row>,
{
    let rows = fetch_rows(executor, sql, args).await?;
    rows.iter()
        .map(O::from_row)
        .collect::<Result<_, _>>()
        .map_err(DB::store_error)
}
