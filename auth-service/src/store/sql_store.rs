//! The store written once for both backends: [`SqlStore`] runs the shared
//! statements of [`super::sql`] on a sqlx pool of any [`Dialect`], and
//! implements [`Store`] (the other store traits are in `oauth_impl` and
//! `admin`).

use futures::TryFutureExt;
use sqlx::{ColumnIndex, Executor};

use super::dialect::{Dialect, Read};
use super::statement::Arg::{self, Bool, Bytes, Int, OptText, Text};
use super::statement::{changed, execute, fetch_all, fetch_one, fetch_optional, fetch_rows, run};
use super::{
    ClientConsent, Consent, KeyCheck, LiveMemberships, NewClient, NewMembership, NewSession,
    NewUser, SeedData, Store, StoreError, StoreFuture, StoredKey, sql,
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

impl<'a> KeyCheck<'a> {
    /// The parameters of a live read of `session_id` that checks these keys.
    fn args(self, session_id: &'a str) -> [Arg<'a>; 3] {
        [
            Text(session_id),
            OptText(self.token_kid),
            Text(self.signing_kid),
        ]
    }
}

impl NewUser {
    /// The parameters of `INSERT_USER` and `SEED_USER`.
    pub(super) fn args(&self, now_ms: i64) -> [Arg<'_>; 6] {
        [
            Text(&self.id),
            Text(&self.email),
            Text(&self.display_name),
            Text(&self.status),
            Bool(self.platform_admin),
            Int(now_ms),
        ]
    }
}

impl NewMembership {
    /// The parameters of `DELETE_MEMBERSHIP`: the membership's target.
    fn target(&self) -> [Arg<'_>; 3] {
        let location_id = self.location_id.as_deref();
        [
            Text(&self.user_id),
            Text(&self.organization_id),
            OptText(location_id),
        ]
    }

    /// The parameters of `INSERT_MEMBERSHIP`.
    fn args(&self, now_ms: i64) -> [Arg<'_>; 6] {
        let [user_id, organization_id, location_id] = self.target();
        let role = Text(&self.role);
        [
            Text(&self.id),
            user_id,
            organization_id,
            location_id,
            role,
            Int(now_ms),
        ]
    }
}

impl NewClient {
    /// The parameters of `PUT_CLIENT` and `SEED_CLIENT`.
    fn args(&self, now_ms: i64) -> [Arg<'_>; 4] {
        let uris = Text(&self.redirect_uris_json);
        [Text(&self.client_id), Text(&self.name), uris, Int(now_ms)]
    }
}

/// The where-clause is the sqlx capabilities the shared SQL needs of a
/// [`Dialect`] (see there why each store `impl` states them).
impl<DB: Dialect> Store for SqlStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
    String: Read<DB>,
    Vec<u8>: Read<DB>,
    i64: Read<DB>,
    bool: Read<DB>,
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
            let args = keys.args(session_id);
            let row: Option<sql::LiveRow> =
                fetch_optional(&self.pool, sql::LIVE_STATE, args).await?;
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
            let args = [
                Text(session_id),
                Text(permission),
                Text(organization_id),
                OptText(location_id),
                OptText(keys.token_kid),
                Text(keys.signing_kid),
            ];
            let row: Option<sql::LiveGrantRow> =
                fetch_optional(&self.pool, sql::LIVE_STATE_WITH_GRANT, args).await?;
            Ok(row.map(|row| row.into_parts(&keys)))
        })
    }

    fn grants<'a>(&'a self, user_id: &'a str, permission: &'a str) -> StoreFuture<'a, Vec<Grant>> {
        Box::pin(async move {
            let args = [Text(user_id), Text(permission)];
            let rows: Vec<sql::GrantRow> = fetch_all(&self.pool, sql::GRANTS, args).await?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }

    fn live_state_with_memberships<'a>(
        &'a self,
        session_id: &'a str,
        keys: KeyCheck<'a>,
    ) -> StoreFuture<'a, Option<LiveMemberships>> {
        Box::pin(async move {
            let args = keys.args(session_id);
            let rows = fetch_rows(&self.pool, sql::LIVE_STATE_WITH_MEMBERSHIPS, args).await?;
            sql::live_memberships(&rows, &keys).map_err(DB::store_error)
        })
    }

    fn active_signing_keys(&self) -> StoreFuture<'_, Vec<StoredKey>> {
        Box::pin(fetch_all(&self.pool, sql::ACTIVE_SIGNING_KEYS, []))
    }

    fn all_signing_keys(&self) -> StoreFuture<'_, Vec<StoredKey>> {
        Box::pin(fetch_all(&self.pool, sql::ALL_SIGNING_KEYS, []))
    }

    fn insert_signing_key<'a>(&'a self, key: &'a StoredKey) -> StoreFuture<'a, ()> {
        let args = [Text(&key.kid), Bytes(&key.material), Int(key.created_at_ms)];
        Box::pin(run(&self.pool, sql::INSERT_SIGNING_KEY, args))
    }

    fn replace_signing_key_material<'a>(
        &'a self,
        kid: &'a str,
        expected: &'a [u8],
        material: &'a [u8],
    ) -> StoreFuture<'a, bool> {
        let args = [Text(kid), Bytes(expected), Bytes(material)];
        Box::pin(changed(&self.pool, sql::REPLACE_SIGNING_KEY_MATERIAL, args))
    }

    fn user_exists<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, bool> {
        let count = fetch_one(&self.pool, sql::USER_EXISTS, [Text(user_id)]);
        Box::pin(count.map_ok(|(count,): (i64,)| count > 0))
    }

    fn client_exists<'a>(&'a self, client_id: &'a str) -> StoreFuture<'a, bool> {
        let count = fetch_one(&self.pool, sql::CLIENT_EXISTS, [Text(client_id)]);
        Box::pin(count.map_ok(|(count,): (i64,)| count > 0))
    }

    fn create_session<'a>(&'a self, session: &'a NewSession) -> StoreFuture<'a, ()> {
        let args = [
            Text(&session.id),
            Text(&session.user_id),
            Text(&session.client_id),
            Int(session.created_at_ms),
            Int(session.expires_at_ms),
        ];
        Box::pin(run(&self.pool, sql::INSERT_SESSION, args))
    }

    fn consent<'a>(
        &'a self,
        user_id: &'a str,
        client_id: &'a str,
    ) -> StoreFuture<'a, Option<Consent>> {
        Box::pin(async move {
            let args = [Text(user_id), Text(client_id)];
            let row: Option<(String, Option<i64>)> =
                fetch_optional(&self.pool, sql::CONSENT, args).await?;
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
        let args = [Text(user_id), Text(client_id), Text(scopes), Int(now_ms)];
        Box::pin(run(&self.pool, sql::GRANT_CONSENT, args))
    }

    fn set_user_status<'a>(&'a self, user_id: &'a str, status: &'a str) -> StoreFuture<'a, bool> {
        let args = [Text(user_id), Text(status)];
        Box::pin(changed(&self.pool, sql::SET_USER_STATUS, args))
    }

    fn set_platform_admin<'a>(&'a self, user_id: &'a str, admin: bool) -> StoreFuture<'a, bool> {
        let args = [Text(user_id), Bool(admin)];
        Box::pin(changed(&self.pool, sql::SET_PLATFORM_ADMIN, args))
    }

    fn revoke_session<'a>(&'a self, session_id: &'a str, now_ms: i64) -> StoreFuture<'a, bool> {
        let args = [Text(session_id), Int(now_ms)];
        Box::pin(changed(&self.pool, sql::REVOKE_SESSION, args))
    }

    fn revoke_user_sessions<'a>(
        &'a self,
        user_id: &'a str,
        client_id: Option<&'a str>,
        now_ms: i64,
    ) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await.map_err(DB::store_error)?;
            let args = [Text(user_id), OptText(client_id), Int(now_ms)];
            run(&mut *tx, sql::REVOKE_USER_REFRESH_TOKENS, args).await?;
            let ended = execute(&mut *tx, sql::REVOKE_USER_SESSIONS, args).await?;
            run(&mut *tx, sql::REVOKE_USER_BROWSER_SESSIONS, args).await?;
            tx.commit().await.map_err(DB::store_error)?;
            Ok(ended)
        })
    }

    fn user_consents<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, Vec<ClientConsent>> {
        Box::pin(async move {
            let rows: Vec<(String, String, Option<i64>)> =
                fetch_all(&self.pool, sql::USER_CONSENTS, [Text(user_id)]).await?;
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
        let args = [Text(client_id), Bool(enabled)];
        Box::pin(changed(&self.pool, sql::SET_CLIENT_ENABLED, args))
    }

    fn revoke_consent<'a>(
        &'a self,
        user_id: &'a str,
        client_id: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, bool> {
        let args = [Text(user_id), Text(client_id), Int(now_ms)];
        Box::pin(changed(&self.pool, sql::REVOKE_CONSENT, args))
    }

    fn set_consent_scopes<'a>(
        &'a self,
        user_id: &'a str,
        client_id: &'a str,
        scopes: &'a str,
    ) -> StoreFuture<'a, bool> {
        let args = [Text(user_id), Text(client_id), Text(scopes)];
        Box::pin(changed(&self.pool, sql::SET_CONSENT_SCOPES, args))
    }

    fn remove_membership<'a>(
        &'a self,
        user_id: &'a str,
        organization_id: &'a str,
        location_id: Option<&'a str>,
    ) -> StoreFuture<'a, bool> {
        let args = [Text(user_id), Text(organization_id), OptText(location_id)];
        Box::pin(changed(&self.pool, sql::DELETE_MEMBERSHIP, args))
    }

    fn put_membership<'a>(
        &'a self,
        membership: &'a NewMembership,
        now_ms: i64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await.map_err(DB::store_error)?;
            run(&mut *tx, sql::DELETE_MEMBERSHIP, membership.target()).await?;
            run(&mut *tx, sql::INSERT_MEMBERSHIP, membership.args(now_ms)).await?;
            tx.commit().await.map_err(DB::store_error)
        })
    }

    fn put_client<'a>(&'a self, client: &'a NewClient, now_ms: i64) -> StoreFuture<'a, ()> {
        Box::pin(run(&self.pool, sql::PUT_CLIENT, client.args(now_ms)))
    }

    fn apply_seed<'a>(&'a self, seed: &'a SeedData, now_ms: i64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await.map_err(DB::store_error)?;
            for user in &seed.users {
                run(&mut *tx, sql::SEED_USER, user.args(now_ms)).await?;
            }
            for (role, permission) in &seed.role_permissions {
                let args = [Text(role), Text(permission)];
                run(&mut *tx, sql::SEED_ROLE_PERMISSION, args).await?;
            }
            for membership in &seed.memberships {
                run(&mut *tx, sql::INSERT_MEMBERSHIP, membership.args(now_ms)).await?;
            }
            for client in &seed.clients {
                run(&mut *tx, sql::SEED_CLIENT, client.args(now_ms)).await?;
            }
            tx.commit().await.map_err(DB::store_error)
        })
    }
}
