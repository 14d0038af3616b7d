//! What only the administration commands read and write: the user list, a
//! user's memberships as stored, the roles' permissions, and the removal of
//! a client. One SQL text per statement for both backends, implemented on
//! [`SqlStore`].

use sqlx::{ColumnIndex, Executor};

use super::StoreFuture;
use super::dialect::{Dialect, Read};
use super::sql_store::SqlStore;
use super::statement::Arg::Text;
use super::statement::{fetch_all, fetch_optional, run};

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
    /// The user `user_id`, if any.
    fn user_record<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, Option<UserRecord>>;
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
pub(super) const USER_RECORD: &str = "SELECT id, email, display_name, status, platform_admin, \
     (password_hash IS NOT NULL) AS has_password FROM users WHERE id = $1";
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
    for<'a> &'a str: ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
    String: Read<DB>,
    Vec<u8>: Read<DB>,
    i64: Read<DB>,
    bool: Read<DB>,
{
    fn users(&self) -> StoreFuture<'_, Vec<UserRecord>> {
        Box::pin(fetch_all(&self.pool, USERS, []))
    }

    fn user_memberships<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, Vec<MembershipRecord>> {
        Box::pin(fetch_all(&self.pool, USER_MEMBERSHIPS, [Text(user_id)]))
    }

    fn user_record<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, Option<UserRecord>> {
        Box::pin(fetch_optional(&self.pool, USER_RECORD, [Text(user_id)]))
    }

    fn delete_client<'a>(&'a self, client_id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await.map_err(DB::store_error)?;
            let deleted: Option<(Option<String>,)> =
                fetch_optional(&mut *tx, DELETE_CLIENT, [Text(client_id)]).await?;
            let Some((service_user,)) = deleted else {
                return Ok(false);
            };
            if let Some(user_id) = service_user {
                run(&mut *tx, DELETE_SERVICE_USER, [Text(&user_id)]).await?;
            }
            tx.commit().await.map_err(DB::store_error)?;
            Ok(true)
        })
    }

    fn role_permissions(&self) -> StoreFuture<'_, Vec<(String, String)>> {
        Box::pin(fetch_all(&self.pool, ROLE_PERMISSIONS, []))
    }

    fn set_role_permissions<'a>(
        &'a self,
        role: &'a str,
        permissions: &'a [String],
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await.map_err(DB::store_error)?;
            run(&mut *tx, DELETE_ROLE, [Text(role)]).await?;
            for permission in permissions {
                let args = [Text(role), Text(permission)];
                run(&mut *tx, INSERT_ROLE_PERMISSION, args).await?;
            }
            tx.commit().await.map_err(DB::store_error)
        })
    }
}
