//! [`OAuthStore`] on [`SqlStore`] for both backends, from the shared
//! statements of [`super::oauth_sql`].

use sqlx::{ColumnIndex, Executor};

use super::dialect::{Bind, Dialect, Read};
use super::oauth::{
    ClientRecord, CodeRecord, Consumed, KeyInfo, NewCode, NewRefresh, OAuthStore, Purged,
    RefreshRecord, UserLogin,
};
use super::sql_store::SqlStore;
use super::{NewUser, StoreFuture, oauth_sql};

/// The insert of a refresh token, bound, for the pool or a transaction.
fn insert_refresh<DB: Dialect>(
    refresh: &NewRefresh,
) -> sqlx::query::Query<'static, DB, <DB as sqlx::Database>::Arguments>
where
    for<'a> &'a str: Bind<'a, DB>,
    i64: for<'a> Bind<'a, DB>,
{
    sqlx::query(oauth_sql::INSERT_REFRESH)
        .bind(refresh.token_hash.as_str())
        .bind(refresh.session_id.as_str())
        .bind(refresh.client_id.as_str())
        .bind(refresh.user_id.as_str())
        .bind(refresh.scopes.as_str())
        .bind(refresh.resource.as_str())
        .bind(refresh.created_at_ms)
        .bind(refresh.expires_at_ms)
}

/// The where-clause is the sqlx capabilities the shared SQL needs of a
/// [`Dialect`] (see there why each store `impl` states them).
impl<DB: Dialect> OAuthStore for SqlStore<DB>
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
    fn client<'a>(&'a self, client_id: &'a str) -> StoreFuture<'a, Option<ClientRecord>> {
        Box::pin(async move {
            let row: Option<oauth_sql::ClientRow> = sqlx::query_as(oauth_sql::CLIENT)
                .bind(client_id)
                .fetch_optional(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(row.map(Into::into))
        })
    }

    fn clients(&self) -> StoreFuture<'_, Vec<ClientRecord>> {
        Box::pin(async move {
            let rows: Vec<oauth_sql::ClientRow> = sqlx::query_as(oauth_sql::CLIENTS)
                .fetch_all(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }

    fn upsert_client<'a>(&'a self, client: &'a ClientRecord, now_ms: i64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let uris = serde_json::json!(client.redirect_uris).to_string();
            sqlx::query(oauth_sql::UPSERT_CLIENT)
                .bind(&client.client_id)
                .bind(&client.name)
                .bind(uris)
                .bind(client.kind.as_str())
                .bind(client.secret_hash.as_deref())
                .bind(&client.allowed_scopes)
                .bind(client.service_user_id.as_deref())
                .bind(&client.origin)
                .bind(now_ms)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(())
        })
    }

    fn user_login<'a>(&'a self, email: &'a str) -> StoreFuture<'a, Option<UserLogin>> {
        Box::pin(async move {
            let row: Option<oauth_sql::LoginRow> = sqlx::query_as(oauth_sql::USER_LOGIN)
                .bind(email)
                .fetch_optional(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(row.map(Into::into))
        })
    }

    fn set_password_hash<'a>(&'a self, user_id: &'a str, hash: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let done = sqlx::query(oauth_sql::SET_PASSWORD_HASH)
                .bind(user_id)
                .bind(hash)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(DB::rows_affected(&done) > 0)
        })
    }

    fn users_without_password<'a>(
        &'a self,
        user_ids: &'a [String],
    ) -> StoreFuture<'a, Vec<String>> {
        Box::pin(async move {
            let mut missing = Vec::new();
            for user_id in user_ids {
                let (count,): (i64,) = sqlx::query_as(oauth_sql::USER_HAS_PASSWORD)
                    .bind(user_id)
                    .fetch_one(&self.pool)
                    .await
                    .map_err(DB::store_error)?;
                if count == 0 {
                    missing.push(user_id.clone());
                }
            }
            Ok(missing)
        })
    }

    fn insert_user<'a>(&'a self, user: &'a NewUser, now_ms: i64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            sqlx::query(oauth_sql::INSERT_USER)
                .bind(&user.id)
                .bind(&user.email)
                .bind(&user.display_name)
                .bind(&user.status)
                .bind(user.platform_admin)
                .bind(now_ms)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(())
        })
    }

    fn create_browser_session<'a>(
        &'a self,
        id_hash: &'a str,
        user_id: &'a str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            sqlx::query(oauth_sql::INSERT_BROWSER_SESSION)
                .bind(id_hash)
                .bind(user_id)
                .bind(now_ms)
                .bind(expires_at_ms)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(())
        })
    }

    fn browser_session_user<'a>(
        &'a self,
        id_hash: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, Option<String>> {
        Box::pin(async move {
            let row: Option<(String,)> = sqlx::query_as(oauth_sql::BROWSER_SESSION_USER)
                .bind(id_hash)
                .bind(now_ms)
                .fetch_optional(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(row.map(|(user_id,)| user_id))
        })
    }

    fn insert_code<'a>(&'a self, code: &'a NewCode) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            sqlx::query(oauth_sql::INSERT_CODE)
                .bind(&code.code_hash)
                .bind(&code.client_id)
                .bind(&code.user_id)
                .bind(&code.redirect_uri)
                .bind(&code.scopes)
                .bind(&code.resource)
                .bind(&code.code_challenge)
                .bind(code.created_at_ms)
                .bind(code.expires_at_ms)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(())
        })
    }

    fn consume_code<'a>(
        &'a self,
        code_hash: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, Consumed<CodeRecord>> {
        Box::pin(async move {
            let row: Option<oauth_sql::CodeRow> = sqlx::query_as(oauth_sql::CONSUME_CODE)
                .bind(code_hash)
                .bind(now_ms)
                .fetch_optional(&self.pool)
                .await
                .map_err(DB::store_error)?;
            if let Some(row) = row {
                return Ok(Consumed::Fresh(row.into()));
            }
            let spent: Option<(Option<String>,)> = sqlx::query_as(oauth_sql::SPENT_CODE)
                .bind(code_hash)
                .fetch_optional(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(match spent {
                Some((session_id,)) => Consumed::Reused { session_id },
                None => Consumed::Missing,
            })
        })
    }

    fn set_code_session<'a>(
        &'a self,
        code_hash: &'a str,
        session_id: &'a str,
    ) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            sqlx::query(oauth_sql::SET_CODE_SESSION)
                .bind(code_hash)
                .bind(session_id)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(())
        })
    }

    fn insert_refresh<'a>(&'a self, refresh: &'a NewRefresh) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            insert_refresh(refresh)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(())
        })
    }

    fn rotate_refresh<'a>(
        &'a self,
        token_hash: &'a str,
        now_ms: i64,
        next: &'a NewRefresh,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await.map_err(DB::store_error)?;
            let spent = sqlx::query(oauth_sql::SPEND_REFRESH)
                .bind(token_hash)
                .bind(now_ms)
                .execute(&mut *tx)
                .await
                .map_err(DB::store_error)?;
            if DB::rows_affected(&spent) == 0 {
                tx.rollback().await.map_err(DB::store_error)?;
                return Ok(false);
            }
            insert_refresh(next)
                .execute(&mut *tx)
                .await
                .map_err(DB::store_error)?;
            tx.commit().await.map_err(DB::store_error)?;
            Ok(true)
        })
    }

    fn refresh<'a>(&'a self, token_hash: &'a str) -> StoreFuture<'a, Option<RefreshRecord>> {
        Box::pin(async move {
            let row: Option<oauth_sql::RefreshRow> = sqlx::query_as(oauth_sql::REFRESH)
                .bind(token_hash)
                .fetch_optional(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(row.map(Into::into))
        })
    }

    fn revoke_family<'a>(&'a self, session_id: &'a str, now_ms: i64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await.map_err(DB::store_error)?;
            for statement in [
                oauth_sql::REVOKE_FAMILY_TOKENS,
                oauth_sql::REVOKE_FAMILY_SESSION,
            ] {
                sqlx::query(statement)
                    .bind(session_id)
                    .bind(now_ms)
                    .execute(&mut *tx)
                    .await
                    .map_err(DB::store_error)?;
            }
            tx.commit().await.map_err(DB::store_error)
        })
    }

    fn purge_expired(
        &self,
        now_ms: i64,
        revoked_before_ms: i64,
        batch: i64,
    ) -> StoreFuture<'_, Purged> {
        Box::pin(async move {
            let mut deleted = [0u64; 4];
            // Refresh tokens before the sessions they cascade from,
            // so that no statement deletes more than a batch.
            for (count, statement) in deleted.iter_mut().zip([
                oauth_sql::PURGE_CODES,
                oauth_sql::PURGE_REFRESH_TOKENS,
                oauth_sql::PURGE_BROWSER_SESSIONS,
                oauth_sql::PURGE_SESSIONS,
            ]) {
                let done = sqlx::query(statement)
                    .bind(now_ms)
                    .bind(revoked_before_ms)
                    .bind(batch)
                    .execute(&self.pool)
                    .await
                    .map_err(DB::store_error)?;
                *count = DB::rows_affected(&done);
            }
            let [codes, refresh_tokens, browser_sessions, sessions] = deleted;
            Ok(Purged {
                codes,
                refresh_tokens,
                browser_sessions,
                sessions,
            })
        })
    }

    fn signing_keys_info(&self) -> StoreFuture<'_, Vec<KeyInfo>> {
        Box::pin(async move {
            let rows: Vec<oauth_sql::KeyInfoRow> = sqlx::query_as(oauth_sql::SIGNING_KEYS_INFO)
                .fetch_all(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(rows.into_iter().map(Into::into).collect())
        })
    }

    fn retire_signing_key<'a>(&'a self, kid: &'a str, now_ms: i64) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let done = sqlx::query(oauth_sql::RETIRE_SIGNING_KEY)
                .bind(kid)
                .bind(now_ms)
                .execute(&self.pool)
                .await
                .map_err(DB::store_error)?;
            Ok(DB::rows_affected(&done) > 0)
        })
    }
}
