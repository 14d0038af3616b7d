//! [`SqlStore`]: the one store implementation, generic over its
//! [`Backend`]: a pool, what the backend keeps beside it, and the few
//! helpers every store method runs its statements through.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use sqlx::Pool;

use super::StoreOptions;
use super::backend::{Backend, BoxedRead, Decodes, RowsAffected, Statement};
use super::owners::Owners;
use crate::domain::DomainError;

/// The restaurant data in a SQL database (see [`PgStore`](super::PgStore)
/// and [`SqliteStore`](super::SqliteStore)).
pub struct SqlStore<B: Backend> {
    pool: Pool<B>,
    limits: B::Limits,
    /// Owners already read, shared by the clones (see [`Owners`]).
    pub(crate) owners: Arc<Owners>,
}

impl<B: Backend> Clone for SqlStore<B> {
    fn clone(&self) -> Self {
        SqlStore {
            pool: self.pool.clone(),
            limits: self.limits.clone(),
            owners: self.owners.clone(),
        }
    }
}

impl<B: Backend> std::fmt::Debug for SqlStore<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlStore")
            .field("backend", &B::NAME)
            .field("pool", &self.pool)
            .field("limits", &self.limits)
            .finish()
    }
}

impl<B: Backend> SqlStore<B> {
    /// Opens the database at `url` (see each backend for the URL forms).
    pub async fn connect(url: &str, options: &StoreOptions) -> Result<SqlStore<B>, DomainError> {
        let (pool, limits) = B::connect(url, options).await?;
        Ok(SqlStore {
            pool,
            limits,
            owners: Arc::new(Owners::new()),
        })
    }

    /// The underlying pool, for work the `Store` trait does not cover.
    pub fn pool(&self) -> &Pool<B> {
        &self.pool
    }

    /// Runs one database future within the statement bound.
    pub(crate) async fn guard<T: Send>(
        &self,
        query: impl Future<Output = Result<T, sqlx::Error>> + Send,
    ) -> Result<T, DomainError> {
        B::guard(&self.limits, query).await
    }

    /// Every row of `query` as `R`.
    pub(crate) async fn fetch_all<R>(&self, query: Statement<'_, B>) -> Result<Vec<R>, DomainError>
    where
        B: Decodes<R>,
    {
        let rows = self
            .guard(async {
                let mut conn = self.pool.acquire().await?;
                B::fetch_rows(&mut conn, query).await
            })
            .await?;
        Ok(rows.iter().map(B::decode).collect::<Result<_, _>>()?)
    }

    /// The first row of `query` as `R`, if any.
    pub(crate) async fn fetch_optional<R>(
        &self,
        query: Statement<'_, B>,
    ) -> Result<Option<R>, DomainError>
    where
        B: Decodes<R>,
    {
        let row = self
            .guard(async {
                let mut conn = self.pool.acquire().await?;
                B::fetch_row(&mut conn, query).await
            })
            .await?;
        Ok(row.as_ref().map(B::decode).transpose()?)
    }

    /// Runs `query`; how many rows it changed.
    pub(crate) async fn execute(&self, query: Statement<'_, B>) -> Result<u64, DomainError> {
        let done = self
            .guard(async {
                let mut conn = self.pool.acquire().await?;
                B::execute(&mut conn, query).await
            })
            .await?;
        Ok(done.rows_affected())
    }

    /// Runs one read bounded by `timeout` in the database as well (see
    /// [`Backend::bounded_read`]).
    pub(crate) async fn bounded_read<T: Send>(
        &self,
        timeout: Option<Duration>,
        read: impl for<'c> FnOnce(&'c mut B::Connection) -> BoxedRead<'c, T> + Send,
    ) -> Result<T, DomainError> {
        B::bounded_read(&self.pool, &self.limits, timeout, read).await
    }

    /// Applies the backend's migrations, then folds the searched texts
    /// written before their folded columns existed.
    pub(crate) async fn run_migrations(&self) -> Result<(), DomainError> {
        B::run_migrations(&self.pool).await?;
        self.backfill_search_columns().await
    }
}
