//! [`OAuthStore`] on [`SqlStore`] for both backends, from the shared
//! statements of [`super::oauth_sql`].

use sqlx::{ColumnIndex, Executor};

use futures::TryFutureExt;

use super::dialect::{Dialect, Read};
use super::oauth::{
    ClientRecord, CodeRecord, Consumed, KeyInfo, NewCode, NewRefresh, OAuthStore, Purged,
    RefreshRecord, UserLogin,
};
use super::sql_store::SqlStore;
use super::statement::Arg::{self, Int, OptText, Text};
use super::statement::{changed, execute, fetch_all, fetch_one, fetch_optional, run};
use super::{NewUser, StoreFuture, oauth_sql};

impl NewRefresh {
    /// The parameters of `INSERT_REFRESH`.
    fn args(&self) -> [Arg<'_>; 8] {
        [
            Text(&self.token_hash),
            Text(&self.session_id),
            Text(&self.client_id),
            Text(&self.user_id),
            Text(&self.scopes),
            Text(&self.resource),
            Int(self.created_at_ms),
            Int(self.expires_at_ms),
        ]
    }
}

/// The where-clause is the sqlx capabilities the shared SQL needs of a
/// [`Dialect`] (see there why each store `impl` states them).
impl<DB: Dialect> OAuthStore for SqlStore<DB>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'a> &'a str: ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
    String: Read<DB>,
    Vec<u8>: Read<DB>,
    i64: Read<DB>,
    bool: Read<DB>,
{
    fn client<'a>(&'a self, client_id: &'a str) -> StoreFuture<'a, Option<ClientRecord>> {
        let row = fetch_optional(&self.pool, oauth_sql::CLIENT, [Text(client_id)]);
        Box::pin(row.map_ok(|row: Option<oauth_sql::ClientRow>| row.map(Into::into)))
    }

    fn clients(&self) -> StoreFuture<'_, Vec<ClientRecord>> {
        let rows = fetch_all(&self.pool, oauth_sql::CLIENTS, []);
        Box::pin(
            rows.map_ok(|rows: Vec<oauth_sql::ClientRow>| {
                rows.into_iter().map(Into::into).collect()
            }),
        )
    }

    fn upsert_client<'a>(&'a self, client: &'a ClientRecord, now_ms: i64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let uris = serde_json::json!(client.redirect_uris).to_string();
            let args = [
                Text(&client.client_id),
                Text(&client.name),
                Text(&uris),
                Text(client.kind.as_str()),
                OptText(client.secret_hash.as_deref()),
                Text(&client.allowed_scopes),
                OptText(client.service_user_id.as_deref()),
                Text(&client.origin),
                Int(now_ms),
            ];
            run(&self.pool, oauth_sql::UPSERT_CLIENT, args).await
        })
    }

    fn user_login<'a>(&'a self, email: &'a str) -> StoreFuture<'a, Option<UserLogin>> {
        let row = fetch_optional(&self.pool, oauth_sql::USER_LOGIN, [Text(email)]);
        Box::pin(row.map_ok(|row: Option<oauth_sql::LoginRow>| row.map(Into::into)))
    }

    fn set_password_hash<'a>(&'a self, user_id: &'a str, hash: &'a str) -> StoreFuture<'a, bool> {
        let args = [Text(user_id), Text(hash)];
        Box::pin(changed(&self.pool, oauth_sql::SET_PASSWORD_HASH, args))
    }

    fn users_without_password<'a>(
        &'a self,
        user_ids: &'a [String],
    ) -> StoreFuture<'a, Vec<String>> {
        Box::pin(async move {
            let mut missing = Vec::new();
            for user_id in user_ids {
                let args = [Text(user_id)];
                let (count,): (i64,) =
                    fetch_one(&self.pool, oauth_sql::USER_HAS_PASSWORD, args).await?;
                if count == 0 {
                    missing.push(user_id.clone());
                }
            }
            Ok(missing)
        })
    }

    fn insert_user<'a>(&'a self, user: &'a NewUser, now_ms: i64) -> StoreFuture<'a, ()> {
        Box::pin(run(&self.pool, oauth_sql::INSERT_USER, user.args(now_ms)))
    }

    fn create_browser_session<'a>(
        &'a self,
        id_hash: &'a str,
        user_id: &'a str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> StoreFuture<'a, ()> {
        let args = [
            Text(id_hash),
            Text(user_id),
            Int(now_ms),
            Int(expires_at_ms),
        ];
        Box::pin(run(&self.pool, oauth_sql::INSERT_BROWSER_SESSION, args))
    }

    fn browser_session_user<'a>(
        &'a self,
        id_hash: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, Option<String>> {
        let args = [Text(id_hash), Int(now_ms)];
        let row = fetch_optional(&self.pool, oauth_sql::BROWSER_SESSION_USER, args);
        Box::pin(row.map_ok(|row: Option<(String,)>| row.map(|(user_id,)| user_id)))
    }

    fn revoke_browser_session<'a>(&'a self, id_hash: &'a str, now_ms: i64) -> StoreFuture<'a, ()> {
        let args = [Text(id_hash), Int(now_ms)];
        Box::pin(run(&self.pool, oauth_sql::REVOKE_BROWSER_SESSION, args))
    }

    fn insert_code<'a>(&'a self, code: &'a NewCode) -> StoreFuture<'a, ()> {
        let args = [
            Text(&code.code_hash),
            Text(&code.client_id),
            Text(&code.user_id),
            Text(&code.redirect_uri),
            Text(&code.scopes),
            Text(&code.resource),
            Text(&code.code_challenge),
            Int(code.created_at_ms),
            Int(code.expires_at_ms),
        ];
        Box::pin(run(&self.pool, oauth_sql::INSERT_CODE, args))
    }

    fn consume_code<'a>(
        &'a self,
        code_hash: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, Consumed<CodeRecord>> {
        Box::pin(async move {
            let args = [Text(code_hash), Int(now_ms)];
            let row: Option<oauth_sql::CodeRow> =
                fetch_optional(&self.pool, oauth_sql::CONSUME_CODE, args).await?;
            if let Some(row) = row {
                return Ok(Consumed::Fresh(row.into()));
            }
            let spent: Option<(Option<String>,)> =
                fetch_optional(&self.pool, oauth_sql::SPENT_CODE, [Text(code_hash)]).await?;
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
        let args = [Text(code_hash), Text(session_id)];
        Box::pin(run(&self.pool, oauth_sql::SET_CODE_SESSION, args))
    }

    fn insert_refresh<'a>(&'a self, refresh: &'a NewRefresh) -> StoreFuture<'a, ()> {
        Box::pin(run(&self.pool, oauth_sql::INSERT_REFRESH, refresh.args()))
    }

    fn rotate_refresh<'a>(
        &'a self,
        token_hash: &'a str,
        now_ms: i64,
        next: &'a NewRefresh,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await.map_err(DB::store_error)?;
            let args = [Text(token_hash), Int(now_ms)];
            if !changed(&mut *tx, oauth_sql::SPEND_REFRESH, args).await? {
                tx.rollback().await.map_err(DB::store_error)?;
                return Ok(false);
            }
            run(&mut *tx, oauth_sql::INSERT_REFRESH, next.args()).await?;
            tx.commit().await.map_err(DB::store_error)?;
            Ok(true)
        })
    }

    fn refresh<'a>(&'a self, token_hash: &'a str) -> StoreFuture<'a, Option<RefreshRecord>> {
        let row = fetch_optional(&self.pool, oauth_sql::REFRESH, [Text(token_hash)]);
        Box::pin(row.map_ok(|row: Option<oauth_sql::RefreshRow>| row.map(Into::into)))
    }

    fn revoke_family<'a>(&'a self, session_id: &'a str, now_ms: i64) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut tx = self.pool.begin().await.map_err(DB::store_error)?;
            let args = [Text(session_id), Int(now_ms)];
            run(&mut *tx, oauth_sql::REVOKE_FAMILY_TOKENS, args).await?;
            run(&mut *tx, oauth_sql::REVOKE_FAMILY_SESSION, args).await?;
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
            let args = [Int(now_ms), Int(revoked_before_ms), Int(batch)];
            // Refresh tokens before the sessions they cascade from,
            // so that no statement deletes more than a batch.
            Ok(Purged {
                codes: execute(&self.pool, oauth_sql::PURGE_CODES, args).await?,
                refresh_tokens: execute(&self.pool, oauth_sql::PURGE_REFRESH_TOKENS, args).await?,
                browser_sessions: execute(&self.pool, oauth_sql::PURGE_BROWSER_SESSIONS, args)
                    .await?,
                sessions: execute(&self.pool, oauth_sql::PURGE_SESSIONS, args).await?,
            })
        })
    }

    fn signing_keys_info(&self) -> StoreFuture<'_, Vec<KeyInfo>> {
        let rows = fetch_all(&self.pool, oauth_sql::SIGNING_KEYS_INFO, []);
        Box::pin(
            rows.map_ok(|rows: Vec<oauth_sql::KeyInfoRow>| {
                rows.into_iter().map(Into::into).collect()
            }),
        )
    }

    fn retire_signing_key<'a>(&'a self, kid: &'a str, now_ms: i64) -> StoreFuture<'a, bool> {
        let args = [Text(kid), Int(now_ms)];
        Box::pin(changed(&self.pool, oauth_sql::RETIRE_SIGNING_KEY, args))
    }
}
