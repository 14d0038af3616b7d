//! What the SQL store needs from a database backend: [`Backend`], the few
//! spots where PostgreSQL and SQLite truly differ (connecting, the per-call
//! bound, the write lock, the migrations, a bucket expression), on top of the
//! sqlx capabilities every method of [`SqlStore`](super::SqlStore) relies on,
//! gathered here once so that generic code states none of them.
//!
//! sqlx expresses those capabilities as bounds on other types (`String:
//! Encode<DB>`, `Record: FromRow<DB::Row>`, `&mut DB::Connection: Executor`),
//! which Rust does not carry along with a trait bound. [`Dialect`],
//! [`Executes`] and [`Decodes`] restate them as traits of the database type
//! itself, implemented once for every database that has them; being
//! supertraits of `Backend`, they come with every `B: Backend`.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use sqlx::database::HasStatementCache;
use sqlx::query::Query;
use sqlx::{
    Database, Encode, Executor, FromRow, IntoArguments, Pool, QueryBuilder, Transaction, Type,
};

use super::analytics_store::MetricsBucketRecord;
use super::conversation_store::{ConversationRecord, MessageRecord};
use super::customer_store::CustomerRecord;
use super::operator_flags::WritesSwitch;
use super::writes::{CancelOnDrop, ConversationTarget};
use super::{
    CatalogItemRecord, DiscountRecord, IntegrationRecord, LocationRecord, LocationStatusRecord,
    OrderLineRecord, OrderRecord, OrderStatusChangeRecord, OrganizationRecord, SettingsRecord,
    StoreOptions,
};
use crate::domain::{Bucket, DomainError};

/// A database call in flight, as sqlx's executors return it.
pub type Pending<'e, T> = Pin<Box<dyn Future<Output = Result<T, sqlx::Error>> + Send + 'e>>;

/// One read run on a connection of the pool by [`Backend::bounded_read`].
pub type BoxedRead<'c, T> = Pending<'c, T>;

/// A statement with its bound values, on backend `DB`.
pub type Statement<'q, DB> = Query<'q, DB, <DB as Database>::Arguments>;

/// The few things the backends do differently; everything else is the same
/// SQL run by [`SqlStore`](super::SqlStore).
pub trait Backend:
    Dialect
    + Executes
    + Records
    + HasStatementCache
    + Database<Arguments: IntoArguments<Self>, QueryResult: RowsAffected>
{
    /// Most bound parameters one statement may carry.
    const MAX_PARAMS: usize;

    /// What the store keeps beside its pool (SQLite: the statement timeout
    /// it enforces itself).
    type Limits: std::fmt::Debug + Clone + Send + Sync + 'static;

    /// Opens the pool at `url`, failing within about `options.connect_timeout`.
    fn connect(
        url: &str,
        options: &StoreOptions,
    ) -> impl Future<Output = Result<(Pool<Self>, Self::Limits), DomainError>> + Send;

    /// Runs one database future within the statement bound; errors map to
    /// `DomainError`.
    fn guard<T: Send>(
        limits: &Self::Limits,
        query: impl Future<Output = Result<T, sqlx::Error>> + Send,
    ) -> impl Future<Output = Result<T, DomainError>> + Send;

    /// Runs one read bounded by `timeout` (the caller's remaining deadline)
    /// in the database as well, so that a read the caller gave up on stops
    /// there instead of holding a connection.
    fn bounded_read<T: Send>(
        pool: &Pool<Self>,
        limits: &Self::Limits,
        timeout: Option<Duration>,
        read: impl for<'c> FnOnce(&'c mut Self::Connection) -> BoxedRead<'c, T> + Send,
    ) -> impl Future<Output = Result<T, DomainError>> + Send;

    /// Applies this backend's migrations (its own folder).
    fn run_migrations(pool: &Pool<Self>) -> impl Future<Output = Result<(), DomainError>> + Send;

    /// Opens the transaction of an idempotent write of `key_hash`, bounded
    /// by `timeout` and holding the backend's write lock (an advisory lock
    /// on PostgreSQL, `BEGIN IMMEDIATE` on SQLite), with what cancels it
    /// when its caller goes away.
    fn begin_write(
        pool: &Pool<Self>,
        key_hash: &str,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<(Transaction<'static, Self>, CancelOnDrop), DomainError>> + Send;

    /// The SQL expression of a bucket's first day from `local_date`.
    fn bucket_start(bucket: Bucket) -> &'static str;
}

/// Rows a statement changed.
pub trait RowsAffected {
    fn rows_affected(&self) -> u64;
}

impl RowsAffected for sqlx::postgres::PgQueryResult {
    fn rows_affected(&self) -> u64 {
        sqlx::postgres::PgQueryResult::rows_affected(self)
    }
}

impl RowsAffected for sqlx::sqlite::SqliteQueryResult {
    fn rows_affected(&self) -> u64 {
        sqlx::sqlite::SqliteQueryResult::rows_affected(self)
    }
}

/// Binding values, into a [`QueryBuilder`] or a static statement; each
/// backend writes its own placeholders.
pub trait Dialect: Database {
    fn bind_text(qb: &mut QueryBuilder<Self>, value: &str);
    fn bind_int(qb: &mut QueryBuilder<Self>, value: i64);
    fn bind_opt_text(qb: &mut QueryBuilder<Self>, value: Option<&str>);
    fn bind_opt_int(qb: &mut QueryBuilder<Self>, value: Option<i64>);
    fn with_text<'q>(query: Statement<'q, Self>, value: &str) -> Statement<'q, Self>;
    fn with_opt_text<'q>(query: Statement<'q, Self>, value: Option<&str>) -> Statement<'q, Self>;
    fn with_int<'q>(query: Statement<'q, Self>, value: i64) -> Statement<'q, Self>;
    fn with_opt_int<'q>(query: Statement<'q, Self>, value: Option<i64>) -> Statement<'q, Self>;
    fn with_flag<'q>(query: Statement<'q, Self>, value: bool) -> Statement<'q, Self>;
}

impl<DB> Dialect for DB
where
    DB: Database,
    for<'a> &'a str: Encode<'a, DB> + Type<DB>,
    for<'a> Option<&'a str>: Encode<'a, DB> + Type<DB>,
    for<'a> String: Encode<'a, DB> + Type<DB>,
    for<'a> Option<String>: Encode<'a, DB> + Type<DB>,
    for<'a> i64: Encode<'a, DB> + Type<DB>,
    for<'a> Option<i64>: Encode<'a, DB> + Type<DB>,
    for<'a> bool: Encode<'a, DB> + Type<DB>,
{
    fn bind_text(qb: &mut QueryBuilder<Self>, value: &str) {
        qb.push_bind(value.to_owned());
    }
    fn bind_int(qb: &mut QueryBuilder<Self>, value: i64) {
        qb.push_bind(value);
    }
    fn bind_opt_text(qb: &mut QueryBuilder<Self>, value: Option<&str>) {
        qb.push_bind(value.map(str::to_owned));
    }
    fn bind_opt_int(qb: &mut QueryBuilder<Self>, value: Option<i64>) {
        qb.push_bind(value);
    }
    fn with_text<'q>(query: Statement<'q, Self>, value: &str) -> Statement<'q, Self> {
        query.bind(value)
    }
    fn with_opt_text<'q>(query: Statement<'q, Self>, value: Option<&str>) -> Statement<'q, Self> {
        query.bind(value)
    }
    fn with_int<'q>(query: Statement<'q, Self>, value: i64) -> Statement<'q, Self> {
        query.bind(value)
    }
    fn with_opt_int<'q>(query: Statement<'q, Self>, value: Option<i64>) -> Statement<'q, Self> {
        query.bind(value)
    }
    fn with_flag<'q>(query: Statement<'q, Self>, value: bool) -> Statement<'q, Self> {
        query.bind(value)
    }
}

/// Method syntax for [`Dialect`]'s binds on a static statement:
/// `sqlx::query(SQL).text(id).int(now_ms)`.
pub trait Binds: Sized {
    fn text(self, value: &str) -> Self;
    fn opt_text(self, value: Option<&str>) -> Self;
    fn int(self, value: i64) -> Self;
    fn opt_int(self, value: Option<i64>) -> Self;
    fn flag(self, value: bool) -> Self;
}

impl<DB: Dialect> Binds for Statement<'_, DB> {
    fn text(self, value: &str) -> Self {
        DB::with_text(self, value)
    }
    fn opt_text(self, value: Option<&str>) -> Self {
        DB::with_opt_text(self, value)
    }
    fn int(self, value: i64) -> Self {
        DB::with_int(self, value)
    }
    fn opt_int(self, value: Option<i64>) -> Self {
        DB::with_opt_int(self, value)
    }
    fn flag(self, value: bool) -> Self {
        DB::with_flag(self, value)
    }
}

/// Running a statement on a connection (of the pool or of a transaction).
pub trait Executes: Database {
    fn fetch_rows<'e, 'q: 'e>(
        conn: &'e mut Self::Connection,
        query: Statement<'q, Self>,
    ) -> Pending<'e, Vec<Self::Row>>;
    fn fetch_row<'e, 'q: 'e>(
        conn: &'e mut Self::Connection,
        query: Statement<'q, Self>,
    ) -> Pending<'e, Option<Self::Row>>;
    fn execute<'e, 'q: 'e>(
        conn: &'e mut Self::Connection,
        query: Statement<'q, Self>,
    ) -> Pending<'e, Self::QueryResult>;
}

impl<DB> Executes for DB
where
    DB: Database<Arguments: IntoArguments<DB>>,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
{
    fn fetch_rows<'e, 'q: 'e>(
        conn: &'e mut Self::Connection,
        query: Statement<'q, Self>,
    ) -> Pending<'e, Vec<Self::Row>> {
        conn.fetch_all(query)
    }
    fn fetch_row<'e, 'q: 'e>(
        conn: &'e mut Self::Connection,
        query: Statement<'q, Self>,
    ) -> Pending<'e, Option<Self::Row>> {
        conn.fetch_optional(query)
    }
    fn execute<'e, 'q: 'e>(
        conn: &'e mut Self::Connection,
        query: Statement<'q, Self>,
    ) -> Pending<'e, Self::QueryResult> {
        Executor::execute(conn, query)
    }
}

/// Reading a row as `R`.
pub trait Decodes<R>: Database {
    fn decode(row: &Self::Row) -> Result<R, sqlx::Error>;
}

impl<DB: Database, R> Decodes<R> for DB
where
    R: for<'r> FromRow<'r, DB::Row>,
{
    fn decode(row: &Self::Row) -> Result<R, sqlx::Error> {
        R::from_row(row)
    }
}

/// Declares [`Records`] as decoding each of the listed types, and implements
/// it for every database that does.
macro_rules! records {
    ($($record:ty),* $(,)?) => {
        /// Every record (and tuple) the store reads.
        pub trait Records: $(Decodes<$record> +)* {}

        impl<DB> Records for DB where DB: $(Decodes<$record> +)* {}
    };
}

records!(
    OrganizationRecord,
    LocationRecord,
    OrderRecord,
    OrderLineRecord,
    OrderStatusChangeRecord,
    LocationStatusRecord,
    SettingsRecord,
    CatalogItemRecord,
    DiscountRecord,
    IntegrationRecord,
    CustomerRecord,
    ConversationRecord,
    MessageRecord,
    MetricsBucketRecord,
    WritesSwitch,
    ConversationTarget,
    (String, String),
    (String, Option<String>),
    (String, String, i64, i64),
);
