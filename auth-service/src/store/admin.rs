//! What only the administration commands read and write: the user list, a
//! user's memberships as stored, the roles' permissions, and the removal of
//! a client. One SQL text per
//! statement for both backends, implemented by [`impl_admin_store`].

use super::StoreFuture;

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

/// Implements [`AdminStore`] for `$store` (a sqlx pool in `pool`, errors
/// classified by `db_error`).
macro_rules! impl_admin_store {
    ($store:ty) => {
        impl $crate::store::admin::AdminStore for $store {
            fn users(
                &self,
            ) -> $crate::store::StoreFuture<'_, Vec<$crate::store::admin::UserRecord>> {
                Box::pin(async move {
                    sqlx::query_as($crate::store::admin::USERS)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(Self::db_error)
                })
            }

            fn user_memberships<'a>(
                &'a self,
                user_id: &'a str,
            ) -> $crate::store::StoreFuture<'a, Vec<$crate::store::admin::MembershipRecord>> {
                Box::pin(async move {
                    sqlx::query_as($crate::store::admin::USER_MEMBERSHIPS)
                        .bind(user_id)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(Self::db_error)
                })
            }

            fn delete_client<'a>(
                &'a self,
                client_id: &'a str,
            ) -> $crate::store::StoreFuture<'a, bool> {
                Box::pin(async move {
                    let mut tx = self.pool.begin().await.map_err(Self::db_error)?;
                    let deleted: Option<(Option<String>,)> =
                        sqlx::query_as($crate::store::admin::DELETE_CLIENT)
                            .bind(client_id)
                            .fetch_optional(&mut *tx)
                            .await
                            .map_err(Self::db_error)?;
                    let Some((service_user,)) = deleted else {
                        return Ok(false);
                    };
                    if let Some(user_id) = service_user {
                        sqlx::query($crate::store::admin::DELETE_SERVICE_USER)
                            .bind(user_id)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::db_error)?;
                    }
                    tx.commit().await.map_err(Self::db_error)?;
                    Ok(true)
                })
            }

            fn role_permissions(&self) -> $crate::store::StoreFuture<'_, Vec<(String, String)>> {
                Box::pin(async move {
                    sqlx::query_as($crate::store::admin::ROLE_PERMISSIONS)
                        .fetch_all(&self.pool)
                        .await
                        .map_err(Self::db_error)
                })
            }

            fn set_role_permissions<'a>(
                &'a self,
                role: &'a str,
                permissions: &'a [String],
            ) -> $crate::store::StoreFuture<'a, ()> {
                Box::pin(async move {
                    let mut tx = self.pool.begin().await.map_err(Self::db_error)?;
                    sqlx::query($crate::store::admin::DELETE_ROLE)
                        .bind(role)
                        .execute(&mut *tx)
                        .await
                        .map_err(Self::db_error)?;
                    for permission in permissions {
                        sqlx::query($crate::store::admin::INSERT_ROLE_PERMISSION)
                            .bind(role)
                            .bind(permission)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::db_error)?;
                    }
                    tx.commit().await.map_err(Self::db_error)
                })
            }
        }
    };
}

pub(super) use impl_admin_store;
