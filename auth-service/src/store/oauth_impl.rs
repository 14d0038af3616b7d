//! The macro that implements [`super::oauth::OAuthStore`] for a sqlx pool of
//! either backend from the shared statements of [`super::oauth_sql`].

/// The insert of a refresh token, bound, for the pool or a transaction.
macro_rules! insert_refresh {
    ($refresh:expr) => {
        sqlx::query($crate::store::oauth_sql::INSERT_REFRESH)
            .bind(&$refresh.token_hash)
            .bind(&$refresh.session_id)
            .bind(&$refresh.client_id)
            .bind(&$refresh.user_id)
            .bind(&$refresh.scopes)
            .bind(&$refresh.resource)
            .bind($refresh.created_at_ms)
            .bind($refresh.expires_at_ms)
    };
}

/// Implements [`super::oauth::OAuthStore`] for `$store` (same shape as
/// `impl_sql_store!` expects: a `pool` field and a `db_error` function).
macro_rules! impl_oauth_store {
    ($store:ty) => {
        impl $crate::store::oauth::OAuthStore for $store {
            fn client<'a>(
                &'a self,
                client_id: &'a str,
            ) -> $crate::store::StoreFuture<'a, Option<$crate::store::oauth::ClientRecord>> {
                Box::pin(async move {
                    let row: Option<$crate::store::oauth_sql::ClientRow> =
                        sqlx::query_as($crate::store::oauth_sql::CLIENT)
                            .bind(client_id)
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    Ok(row.map(Into::into))
                })
            }

            fn clients(
                &self,
            ) -> $crate::store::StoreFuture<'_, Vec<$crate::store::oauth::ClientRecord>> {
                Box::pin(async move {
                    let rows: Vec<$crate::store::oauth_sql::ClientRow> =
                        sqlx::query_as($crate::store::oauth_sql::CLIENTS)
                            .fetch_all(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    Ok(rows.into_iter().map(Into::into).collect())
                })
            }

            fn upsert_client<'a>(
                &'a self,
                client: &'a $crate::store::oauth::ClientRecord,
                now_ms: i64,
            ) -> $crate::store::StoreFuture<'a, ()> {
                Box::pin(async move {
                    let uris = serde_json::json!(client.redirect_uris).to_string();
                    sqlx::query($crate::store::oauth_sql::UPSERT_CLIENT)
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
                        .map_err(Self::db_error)?;
                    Ok(())
                })
            }

            fn user_login<'a>(
                &'a self,
                email: &'a str,
            ) -> $crate::store::StoreFuture<'a, Option<$crate::store::oauth::UserLogin>> {
                Box::pin(async move {
                    let row: Option<$crate::store::oauth_sql::LoginRow> =
                        sqlx::query_as($crate::store::oauth_sql::USER_LOGIN)
                            .bind(email)
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    Ok(row.map(Into::into))
                })
            }

            fn set_password_hash<'a>(
                &'a self,
                user_id: &'a str,
                hash: &'a str,
            ) -> $crate::store::StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query($crate::store::oauth_sql::SET_PASSWORD_HASH)
                        .bind(user_id)
                        .bind(hash)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(done.rows_affected() > 0)
                })
            }

            fn users_without_password<'a>(
                &'a self,
                user_ids: &'a [String],
            ) -> $crate::store::StoreFuture<'a, Vec<String>> {
                Box::pin(async move {
                    let mut missing = Vec::new();
                    for user_id in user_ids {
                        let (count,): (i64,) =
                            sqlx::query_as($crate::store::oauth_sql::USER_HAS_PASSWORD)
                                .bind(user_id)
                                .fetch_one(&self.pool)
                                .await
                                .map_err(Self::db_error)?;
                        if count == 0 {
                            missing.push(user_id.clone());
                        }
                    }
                    Ok(missing)
                })
            }

            fn insert_user<'a>(
                &'a self,
                user: &'a $crate::store::NewUser,
                now_ms: i64,
            ) -> $crate::store::StoreFuture<'a, ()> {
                Box::pin(async move {
                    sqlx::query($crate::store::oauth_sql::INSERT_USER)
                        .bind(&user.id)
                        .bind(&user.email)
                        .bind(&user.display_name)
                        .bind(&user.status)
                        .bind(user.platform_admin)
                        .bind(now_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(())
                })
            }

            fn create_browser_session<'a>(
                &'a self,
                id_hash: &'a str,
                user_id: &'a str,
                now_ms: i64,
                expires_at_ms: i64,
            ) -> $crate::store::StoreFuture<'a, ()> {
                Box::pin(async move {
                    sqlx::query($crate::store::oauth_sql::INSERT_BROWSER_SESSION)
                        .bind(id_hash)
                        .bind(user_id)
                        .bind(now_ms)
                        .bind(expires_at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(())
                })
            }

            fn browser_session_user<'a>(
                &'a self,
                id_hash: &'a str,
                now_ms: i64,
            ) -> $crate::store::StoreFuture<'a, Option<String>> {
                Box::pin(async move {
                    let row: Option<(String,)> =
                        sqlx::query_as($crate::store::oauth_sql::BROWSER_SESSION_USER)
                            .bind(id_hash)
                            .bind(now_ms)
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    Ok(row.map(|(user_id,)| user_id))
                })
            }

            fn insert_code<'a>(
                &'a self,
                code: &'a $crate::store::oauth::NewCode,
            ) -> $crate::store::StoreFuture<'a, ()> {
                Box::pin(async move {
                    sqlx::query($crate::store::oauth_sql::INSERT_CODE)
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
                        .map_err(Self::db_error)?;
                    Ok(())
                })
            }

            fn consume_code<'a>(
                &'a self,
                code_hash: &'a str,
                now_ms: i64,
            ) -> $crate::store::StoreFuture<
                'a,
                $crate::store::oauth::Consumed<$crate::store::oauth::CodeRecord>,
            > {
                Box::pin(async move {
                    let row: Option<$crate::store::oauth_sql::CodeRow> =
                        sqlx::query_as($crate::store::oauth_sql::CONSUME_CODE)
                            .bind(code_hash)
                            .bind(now_ms)
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    if let Some(row) = row {
                        return Ok($crate::store::oauth::Consumed::Fresh(row.into()));
                    }
                    let spent: Option<(Option<String>,)> =
                        sqlx::query_as($crate::store::oauth_sql::SPENT_CODE)
                            .bind(code_hash)
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    Ok(match spent {
                        Some((session_id,)) => {
                            $crate::store::oauth::Consumed::Reused { session_id }
                        }
                        None => $crate::store::oauth::Consumed::Missing,
                    })
                })
            }

            fn set_code_session<'a>(
                &'a self,
                code_hash: &'a str,
                session_id: &'a str,
            ) -> $crate::store::StoreFuture<'a, ()> {
                Box::pin(async move {
                    sqlx::query($crate::store::oauth_sql::SET_CODE_SESSION)
                        .bind(code_hash)
                        .bind(session_id)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(())
                })
            }

            fn insert_refresh<'a>(
                &'a self,
                refresh: &'a $crate::store::oauth::NewRefresh,
            ) -> $crate::store::StoreFuture<'a, ()> {
                Box::pin(async move {
                    $crate::store::oauth_impl::insert_refresh!(refresh)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(())
                })
            }

            fn rotate_refresh<'a>(
                &'a self,
                token_hash: &'a str,
                now_ms: i64,
                next: &'a $crate::store::oauth::NewRefresh,
            ) -> $crate::store::StoreFuture<'a, bool> {
                Box::pin(async move {
                    let mut tx = self.pool.begin().await.map_err(Self::db_error)?;
                    let spent = sqlx::query($crate::store::oauth_sql::SPEND_REFRESH)
                        .bind(token_hash)
                        .bind(now_ms)
                        .execute(&mut *tx)
                        .await
                        .map_err(Self::db_error)?;
                    if spent.rows_affected() == 0 {
                        tx.rollback().await.map_err(Self::db_error)?;
                        return Ok(false);
                    }
                    $crate::store::oauth_impl::insert_refresh!(next)
                        .execute(&mut *tx)
                        .await
                        .map_err(Self::db_error)?;
                    tx.commit().await.map_err(Self::db_error)?;
                    Ok(true)
                })
            }

            fn refresh<'a>(
                &'a self,
                token_hash: &'a str,
            ) -> $crate::store::StoreFuture<'a, Option<$crate::store::oauth::RefreshRecord>> {
                Box::pin(async move {
                    let row: Option<$crate::store::oauth_sql::RefreshRow> =
                        sqlx::query_as($crate::store::oauth_sql::REFRESH)
                            .bind(token_hash)
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    Ok(row.map(Into::into))
                })
            }

            fn revoke_family<'a>(
                &'a self,
                session_id: &'a str,
                now_ms: i64,
            ) -> $crate::store::StoreFuture<'a, ()> {
                Box::pin(async move {
                    let mut tx = self.pool.begin().await.map_err(Self::db_error)?;
                    for statement in [
                        $crate::store::oauth_sql::REVOKE_FAMILY_TOKENS,
                        $crate::store::oauth_sql::REVOKE_FAMILY_SESSION,
                    ] {
                        sqlx::query(statement)
                            .bind(session_id)
                            .bind(now_ms)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::db_error)?;
                    }
                    tx.commit().await.map_err(Self::db_error)
                })
            }

            fn purge_expired(
                &self,
                now_ms: i64,
                revoked_before_ms: i64,
                batch: i64,
            ) -> $crate::store::StoreFuture<'_, $crate::store::oauth::Purged> {
                Box::pin(async move {
                    let mut deleted = [0u64; 4];
                    // Refresh tokens before the sessions they cascade from,
                    // so that no statement deletes more than a batch.
                    for (count, statement) in deleted.iter_mut().zip([
                        $crate::store::oauth_sql::PURGE_CODES,
                        $crate::store::oauth_sql::PURGE_REFRESH_TOKENS,
                        $crate::store::oauth_sql::PURGE_BROWSER_SESSIONS,
                        $crate::store::oauth_sql::PURGE_SESSIONS,
                    ]) {
                        *count = sqlx::query(statement)
                            .bind(now_ms)
                            .bind(revoked_before_ms)
                            .bind(batch)
                            .execute(&self.pool)
                            .await
                            .map_err(Self::db_error)?
                            .rows_affected();
                    }
                    let [codes, refresh_tokens, browser_sessions, sessions] = deleted;
                    Ok($crate::store::oauth::Purged {
                        codes,
                        refresh_tokens,
                        browser_sessions,
                        sessions,
                    })
                })
            }

            fn signing_keys_info(
                &self,
            ) -> $crate::store::StoreFuture<'_, Vec<$crate::store::oauth::KeyInfo>> {
                Box::pin(async move {
                    let rows: Vec<$crate::store::oauth_sql::KeyInfoRow> =
                        sqlx::query_as($crate::store::oauth_sql::SIGNING_KEYS_INFO)
                            .fetch_all(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    Ok(rows.into_iter().map(Into::into).collect())
                })
            }

            fn retire_signing_key<'a>(
                &'a self,
                kid: &'a str,
                now_ms: i64,
            ) -> $crate::store::StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query($crate::store::oauth_sql::RETIRE_SIGNING_KEY)
                        .bind(kid)
                        .bind(now_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(done.rows_affected() > 0)
                })
            }
        }
    };
}

pub(super) use {impl_oauth_store, insert_refresh};
