//! The store written once for both backends: [`SqlStore`] runs the shared
//! statements of [`super::sql`] on a sqlx pool of any [`Dialect`], and
//! implements [`Store`] (the other store traits are in `oauth_impl` and
//! `admin`).

use sqlx::{ColumnIndex, Executor};

use super::dialect::{Bind, Dialect, Read};
use super::{
    ClientConsent, Consent, KeyCheck, LiveMemberships, NewClient, NewMembership, NewSession,
    SeedData, Store, StoreError, StoreFuture, StoredKey, sql,
};
use crate::model::{Grant, LiveState};

/// The store on a pool of `DB` (PostgreSQL or SQLite).
pub struct SqlStore<DB: Dialect> {
    pub(super) pool: sqlx::Pool<DB>,
}

impl<DB: Dialect> SqlStore<DB> {
    /// The store on an open pool (migrations not applied).
    pub fn new(pool: sqlx::Pool<DB>) -> SqlStore<DB> {
        SqlStore { pool }
    }
}

impl<DB: Dialect> Clone for SqlStore<DB> {
    fn clone(&self) -> Self {
        SqlStore {
            pool: self.pool.clone(),
        }
    }
}

/// The where-clause is the sqlx capabilities the shared SQL needs of a
/// [`Dialect`] (see there why each store `impl` states them).
impl<DB: Dialect> Store for SqlStore<DB>
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
    fn pool_stats(&self) -> chataigne_common::metrics::PoolStats {
        chataigne_common::metrics::PoolStats::of(&self.pool)
    }

    fn migrate(&self) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            DB::migrate(&self.pool)
                .await
                .map_err(|e| StoreError::Failed(e.to_string()))
        })
    }

    fn live_state<'a>(
        &'a self,
        session_id: &'a str,
        keys: KeyCheck<'a>,
    ) -> StoreFuture<'a, Option<LiveState>> {
        Box::pin(async move {
            let row: Option<sql::LiveRow> = sqlx::query_as(sql::LIVE_STATE)
                .bind(session_id)
                .bind(keys.token_kid)
                .bind(keys.signing_kid)
                .fetch_optional(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(row.map(|row| row.into_state(&keys)))
        })
    }

    fn live_state_with_grant<'a>(
        &'a self,
        session_id: &'a str,
        permission: &'a str,
        organization_id: &'a str,
        location_id: Option<&'a str>,
        keys: KeyCheck<'a>,
    ) -> StoreFuture<'a, Option<(LiveState, bool)>> {
        Box::pin(async move {
            let row: Option<sql::LiveGrantRow> = sqlx::query_as(sql::LIVE_STATE_WITH_GRANT)
                .bind(session_id)
                .bind(permission)
                .bind(organization_id)
                .bind(location_id)
                .bind(keys.token_kid)
                .bind(keys.signing_kid)
                .fetch_optional(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(row.map(|row| row.into_parts(&keys)))
        })
    }

    fn grants<'a>(&'a self, user_id: &'a str, permission: &'a str) -> StoreFuture<'a, Vec<Grant>> {
        Box::pin(async move {
            let rows: Vec<sql::GrantRow> = sqlx::query_as(sql::GRANTS)
                .bind(user_id)
                .bind(permission)
                .fetch_all(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }

    fn live_state_with_memberships<'a>(
        &'a self,
        session_id: &'a str,
        keys: KeyCheck<'a>,
    ) -> StoreFuture<'a, Option<LiveMemberships>> {
        Box::pin(async move {
            let rows: Vec<sql::LiveMembershipRow> =
                sqlx::query_as(sql::LIVE_STATE_WITH_MEMBERSHIPS)
                    .bind(session_id)
                    .bind(keys.token_kid)
                    .bind(keys.signing_kid)
                    .fetch_all(&self.pool)
                    .await
                    .map_err(DB::store_error)?;
            Ok(sql::LiveMembershipRow::into_parts(rows, &keys))
        })
    }

    fn active_signing_keys(&self) -> StoreFuture<'_, Vec<StoredKey>> {
        Box::pin(async move {
            let rows: Vec<(String, Vec<u8>, i64)> = sqlx::query_as(sql::ACTIVE_SIGNING_KEYS)
                .fetch_all(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }

    fn all_signing_keys(&self) -> StoreFuture<'_, Vec<StoredKey>> {
        Box::pin(async move {
            let rows: Vec<(String, Vec<u8>, i64)> = sqlx::query_as(sql::ALL_SIGNING_KEYS)
                .fetch_all(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }

    fn insert_signing_key<'a>(&'a self, key: &'a StoredKey) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            sqlx::query(sql::INSERT_SIGNING_KEY)
                .bind(&key.kid)
                .bind(&key.material)
                .bind(key.created_at_ms)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(())
        })
    }

    fn replace_signing_key_material<'a>(
        &'a self,
        kid: &'a str,
        expected: &'a [u8],
        material: &'a [u8],
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let done = sqlx::query(sql::REPLACE_SIGNING_KEY_MATERIAL)
                .bind(kid)
                .bind(expected)
                .bind(material)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(DB::rows_affected(&done) > 0)
        })
    }

    fn user_exists<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let count: i64 = sqlx::query_scalar(sql::USER_EXISTS)
                .bind(user_id)
                .fetch_one(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(count > 0)
        })
    }

    fn client_exists<'a>(&'a self, client_id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let count: i64 = sqlx::query_scalar(sql::CLIENT_EXISTS)
                .bind(client_id)
                .fetch_one(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(count > 0)
        })
    }

    fn create_session<'a>(&'a self, session: &'a NewSession) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            sqlx::query(sql::INSERT_SESSION)
                .bind(&session.id)
                .bind(&session.user_id)
                .bind(&session.client_id)
                .bind(session.created_at_ms)
                .bind(session.expires_at_ms)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(())
        })
    }

    fn consent<'a>(
        &'a self,
        user_id: &'a str,
        client_id: &'a str,
    ) -> StoreFuture<'a, Option<Consent>> {
        Box::pin(async move {
            let row: Option<(String, Option<i64>)> = sqlx::query_as(sql::CONSENT)
                .bind(user_id)
                .bind(client_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(row.map(|(scopes, revoked_at)| Consent {
                scopes,
                revoked: revoked_at.is_some(),
            }))
        })
    }

    fn grant_consent<'a>(
        &'a self,
        user_id: &'a str,
        client_id: &'a str,
        scopes: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            sqlx::query(sql::GRANT_CONSENT)
                .bind(user_id)
                .bind(client_id)
                .bind(scopes)
                .bind(now_ms)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(())
        })
    }

    fn set_user_status<'a>(&'a self, user_id: &'a str, status: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let done = sqlx::query(sql::SET_USER_STATUS)
                .bind(user_id)
                .bind(status)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(DB::rows_affected(&done) > 0)
        })
    }

    fn set_platform_admin<'a>(&'a self, user_id: &'a str, admin: bool) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let done = sqlx::query(sql::SET_PLATFORM_ADMIN)
                .bind(user_id)
                .bind(admin)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(DB::rows_affected(&done) > 0)
        })
    }

    fn revoke_session<'a>(&'a self, session_id: &'a str, now_ms: i64) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let done = sqlx::query(sql::REVOKE_SESSION)
                .bind(session_id)
                .bind(now_ms)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(DB::rows_affected(&done) > 0)
        })
    }

    fn revoke_user_sessions<'a>(
        &'a self,
        user_id: &'a str,
        client_id: Option<&'a str>,
        now_ms: i64,
    ) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await.map_err(DB::store_error)?;
            let mut ended = 0;
            for (statement, counted) in [
                (sql::REVOKE_USER_REFRESH_TOKENS, false),
                (sql::REVOKE_USER_SESSIONS, true),
                (sql::REVOKE_USER_BROWSER_SESSIONS, false),
            ] {
                let done = sqlx::query(statement)
                    .bind(user_id)
                    .bind(client_id)
                    .bind(now_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(DB::store_error)?;
                if counted {
                    ended = DB::rows_affected(&done);
                }
            }
            tx.commit().await.map_err(DB::store_error)?;
            Ok(ended)
        })
    }

    fn user_consents<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, Vec<ClientConsent>> {
        Box::pin(async move {
            let rows: Vec<(String, String, Option<i64>)> = sqlx::query_as(sql::USER_CONSENTS)
                .bind(user_id)
                .fetch_all(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(rows
                .into_iter()
                .map(|(client_id, scopes, revoked_at)| ClientConsent {
                    client_id,
                    scopes,
                    revoked: revoked_at.is_some(),
                })
                .collect())
        })
    }

    fn set_client_enabled<'a>(
        &'a self,
        client_id: &'a str,
        enabled: bool,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let done = sqlx::query(sql::SET_CLIENT_ENABLED)
                .bind(client_id)
                .bind(enabled)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(DB::rows_affected(&done) > 0)
        })
    }

    fn revoke_consent<'a>(
        &'a self,
        user_id: &'a str,
        client_id: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let done = sqlx::query(sql::REVOKE_CONSENT)
                .bind(user_id)
                .bind(client_id)
                .bind(now_ms)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(DB::rows_affected(&done) > 0)
        })
    }

    fn set_consent_scopes<'a>(
        &'a self,
        user_id: &'a str,
        client_id: &'a str,
        scopes: &'a str,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let done = sqlx::query(sql::SET_CONSENT_SCOPES)
                .bind(user_id)
                .bind(client_id)
                .bind(scopes)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(DB::rows_affected(&done) > 0)
        })
    }

    fn remove_membership<'a>(
        &'a self,
        user_id: &'a str,
        organization_id: &'a str,
        location_id: Option<&'a str>,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let done = sqlx::query(sql::DELETE_MEMBERSHIP)
                .bind(user_id)
                .bind(organization_id)
                .bind(location_id)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(DB::rows_affected(&done) > 0)
        })
    }

    fn put_membership<'a>(
        &'a self,
        membership: &'a NewMembership,
        now_ms: i64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await.map_err(DB::store_error)?;
            sqlx::query(sql::DELETE_MEMBERSHIP)
                .bind(&membership.user_id)
                .bind(&membership.organization_id)
                .bind(membership.location_id.as_deref())
                .execute(&mut *tx)
                .await
                .map_err(DB::store_error)?;
            sqlx::query(sql::INSERT_MEMBERSHIP)
                .bind(&membership.id)
                .bind(&membership.user_id)
                .bind(&membership.organization_id)
                .bind(membership.location_id.as_deref())
                .bind(&membership.role)
                .bind(now_ms)
                .execute(&mut *tx)
                .await
                .map_err(DB::store_error)?;
            tx.commit().await.map_err(DB::store_error)
        })
    }

    fn put_client<'a>(&'a self, client: &'a NewClient, now_ms: i64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            sqlx::query(sql::PUT_CLIENT)
                .bind(&client.client_id)
                .bind(&client.name)
                .bind(&client.redirect_uris_json)
                .bind(now_ms)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(())
        })
    }

    fn apply_seed<'a>(&'a self, seed: &'a SeedData, now_ms: i64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await.map_err(DB::store_error)?;
            for user in &seed.users {
                sqlx::query(sql::SEED_USER)
                    .bind(&user.id)
                    .bind(&user.email)
                    .bind(&user.display_name)
                    .bind(&user.status)
                    .bind(user.platform_admin)
                    .bind(now_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(DB::store_error)?;
            }
            for (role, permission) in &seed.role_permissions {
                sqlx::query(sql::SEED_ROLE_PERMISSION)
                    .bind(role)
                    .bind(permission)
                    .execute(&mut *tx)
                    .await
                    .map_err(DB::store_error)?;
            }
            for membership in &seed.memberships {
                sqlx::query(sql::INSERT_MEMBERSHIP)
                    .bind(&membership.id)
                    .bind(&membership.user_id)
                    .bind(&membership.organization_id)
                    .bind(membership.location_id.as_deref())
                    .bind(&membership.role)
                    .bind(now_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(DB::store_error)?;
            }
            for client in &seed.clients {
                sqlx::query(sql::SEED_CLIENT)
                    .bind(&client.client_id)
                    .bind(&client.name)
                    .bind(&client.redirect_uris_json)
                    .bind(now_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(DB::store_error)?;
            }
            tx.commit().await.map_err(DB::store_error)
        })
    }
}
