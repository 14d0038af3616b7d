//! What only the administration commands read and write: the user list, a
//! user's memberships as stored, the roles' permissions, and the removal of
//! a client. One SQL text per statement for both backends, implemented on
//! [`SqlStore`].

use sqlx::{ColumnIndex, Executor};

use super::StoreFuture;
use super::dialect::{Bind, Dialect, Read};
use super::sql_store::SqlStore;

/// A user as the `users list` command shows it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct UserRecord {
    pub id: String,
    pub email: String,
    pub display_name: String,
    pub status: String,
    pub platform_admin: bool,
    pub has_password: bool,
}

/// One membership as stored: a role on an organization (`location_id`
/// `None`) or on one of its locations.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct MembershipRecord {
    pub organization_id: String,
    pub location_id: Option<String>,
    pub role: String,
}

/// The administration side of the store.
pub trait AdminStore {
    /// Every user, by id.
    fn users(&self) -> StoreFuture<'_, Vec<UserRecord>>;
    /// The memberships of `user_id`, by organization then location
    /// (organization-wide first).
    fn user_memberships<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, Vec<MembershipRecord>>;
    /// Deletes the client with everything that refers to it (consents,
    /// sessions, codes, refresh tokens) and, for a service account, its
    /// service user with its memberships, in one transaction.
    fn delete_client<'a>(&'a self, client_id: &'a str) -> StoreFuture<'a, bool>;
    /// Every `(role, permission)`, by role then permission.
    fn role_permissions(&self) -> StoreFuture<'_, Vec<(String, String)>>;
    /// Replaces the permissions of `role` (none: the role grants nothing).
    fn set_role_permissions<'a>(
        &'a self,
        role: &'a str,
        permissions: &'a [String],
    ) -> StoreFuture<'a, ()>;
}

pub(super) const USERS: &str = "SELECT id, email, display_name, status, platform_admin, \
     (password_hash IS NOT NULL) AS has_password FROM users ORDER BY id";
pub(super) const USER_MEMBERSHIPS: &str = "SELECT organization_id, location_id, role \
     FROM memberships WHERE user_id = $1 \
     ORDER BY organization_id, COALESCE(location_id, ''), role";
pub(super) const DELETE_CLIENT: &str =
    "DELETE FROM oauth_clients WHERE client_id = $1 RETURNING service_user_id";
pub(super) const DELETE_SERVICE_USER: &str = "DELETE FROM users WHERE id = $1";
pub(super) const ROLE_PERMISSIONS: &str =
    "SELECT role, permission FROM role_permissions ORDER BY role, permission";
pub(super) const DELETE_ROLE: &str = "DELETE FROM role_permissions WHERE role = $1";
pub(super) const INSERT_ROLE_PERMISSION: &str =
    "INSERT INTO role_permissions (role, permission) VALUES ($1, $2) ON CONFLICT DO NOTHING";

/// The where-clause is the sqlx capabilities the shared SQL needs of a
/// [`Dialect`] (see there why each store `impl` states them).
impl<DB: Dialect> AdminStore for SqlStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'a> &'a str: Bind<'a, DB> + ColumnIndex<DB::Row>,
    for<'a> Option<&'a str>: Bind<'a, DB>,
    for<'a> &'a [u8]: Bind<'a, DB>,
    String: for<'a> Bind<'a, DB> + Read<DB>,
    Vec<u8>: for<'a> Bind<'a, DB> + Read<DB>,
    i64: for<'a> Bind<'a, DB> + Read<DB>,
    bool: for<'a> Bind<'a, DB> + Read<DB>,
    usize: ColumnIndex<DB::Row>,
{
    fn users(&self) -> StoreFuture<'_, Vec<UserRecord>> {
        Box::pin(async move {
            sqlx::query_as(USERS)
                .fetch_all(&self.pool)
                .await
                .map_err(DB::store_error)
        })
    }

    fn user_memberships<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, Vec<MembershipRecord>> {
        Box::pin(async move {
            sqlx::query_as(USER_MEMBERSHIPS)
                .bind(user_id)
                .fetch_all(&self.pool)
                .await
                .map_err(DB::store_error)
        })
    }

    fn delete_client<'a>(&'a self, client_id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await.map_err(DB::store_error)?;
            let deleted: Option<(Option<String>,)> = sqlx::query_as(DELETE_CLIENT)
                .bind(client_id)
                .fetch_optional(&mut *tx)
                .await
                .map_err(DB::store_error)?;
            let Some((service_user,)) = deleted else {
                return Ok(false);
            };
            if let Some(user_id) = service_user {
                sqlx::query(DELETE_SERVICE_USER)
                    .bind(user_id)
                    .execute(&mut *tx)
                    .await
                    .map_err(DB::store_error)?;
            }
            tx.commit().await.map_err(DB::store_error)?;
            Ok(true)
        })
    }

    fn role_permissions(&self) -> StoreFuture<'_, Vec<(String, String)>> {
        Box::pin(async move {
            sqlx::query_as(ROLE_PERMISSIONS)
                .fetch_all(&self.pool)
                .await
                .map_err(DB::store_error)
        })
    }

    fn set_role_permissions<'a>(
        &'a self,
        role: &'a str,
        permissions: &'a [String],
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await.map_err(DB::store_error)?;
            sqlx::query(DELETE_ROLE)
                .bind(role)
                .execute(&mut *tx)
                .await
                .map_err(DB::store_error)?;
            for permission in permissions {
                sqlx::query(INSERT_ROLE_PERMISSION)
                    .bind(role)
                    .bind(permission)
                    .execute(&mut *tx)
                    .await
                    .map_err(DB::store_error)?;
            }
            tx.commit().await.map_err(DB::store_error)
        })
    }
}
