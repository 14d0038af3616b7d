//! The macro that implements [`super::Store`] for a sqlx pool of either
//! backend from the shared statements of [`super::sql`], so every query is
//! written once.

/// Implements [`super::Store`] for `$store`, a struct with a `pool` field of a
/// sqlx pool, a `migrator()` function returning its embedded migrations and a
/// `db_error(sqlx::Error) -> StoreError` function classifying the dialect's errors.
macro_rules! impl_sql_store {
    ($store:ty) => {
        impl $crate::store::Store for $store {
            fn pool_stats(&self) -> chataigne_common::metrics::PoolStats {
                chataigne_common::metrics::PoolStats::of(&self.pool)
            }

            fn migrate(&self) -> $crate::store::StoreFuture<'_, ()> {
                Box::pin(async move {
                    Self::migrator()
                        .run(&self.pool)
                        .await
                        .map_err(|e| $crate::store::StoreError::Failed(e.to_string()))
                })
            }

            fn live_state<'a>(
                &'a self,
                session_id: &'a str,
                keys: $crate::store::KeyCheck<'a>,
            ) -> $crate::store::StoreFuture<'a, Option<$crate::model::LiveState>> {
                Box::pin(async move {
                    let row: Option<$crate::store::sql::LiveRow> =
                        sqlx::query_as($crate::store::sql::LIVE_STATE)
                            .bind(session_id)
                            .bind(keys.token_kid)
                            .bind(keys.signing_kid)
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    Ok(row.map(|row| row.into_state(&keys)))
                })
            }

            fn live_state_with_grant<'a>(
                &'a self,
                session_id: &'a str,
                permission: &'a str,
                organization_id: &'a str,
                location_id: Option<&'a str>,
                keys: $crate::store::KeyCheck<'a>,
            ) -> $crate::store::StoreFuture<'a, Option<($crate::model::LiveState, bool)>> {
                Box::pin(async move {
                    let row: Option<$crate::store::sql::LiveGrantRow> =
                        sqlx::query_as($crate::store::sql::LIVE_STATE_WITH_GRANT)
                            .bind(session_id)
                            .bind(permission)
                            .bind(organization_id)
                            .bind(location_id)
                            .bind(keys.token_kid)
                            .bind(keys.signing_kid)
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    Ok(row.map(|row| row.into_parts(&keys)))
                })
            }

            fn grants<'a>(
                &'a self,
                user_id: &'a str,
                permission: &'a str,
            ) -> $crate::store::StoreFuture<'a, Vec<$crate::model::Grant>> {
                Box::pin(async move {
                    let rows: Vec<$crate::store::sql::GrantRow> =
                        sqlx::query_as($crate::store::sql::GRANTS)
                            .bind(user_id)
                            .bind(permission)
                            .fetch_all(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    Ok(rows.into_iter().map(Into::into).collect())
                })
            }

            fn live_state_with_memberships<'a>(
                &'a self,
                session_id: &'a str,
                keys: $crate::store::KeyCheck<'a>,
            ) -> $crate::store::StoreFuture<'a, Option<$crate::store::LiveMemberships>> {
                Box::pin(async move {
                    let rows: Vec<$crate::store::sql::LiveMembershipRow> =
                        sqlx::query_as($crate::store::sql::LIVE_STATE_WITH_MEMBERSHIPS)
                            .bind(session_id)
                            .bind(keys.token_kid)
                            .bind(keys.signing_kid)
                            .fetch_all(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    Ok($crate::store::sql::LiveMembershipRow::into_parts(
                        rows, &keys,
                    ))
                })
            }

            fn active_signing_keys(
                &self,
            ) -> $crate::store::StoreFuture<'_, Vec<$crate::store::StoredKey>> {
                Box::pin(async move {
                    let rows: Vec<(String, Vec<u8>, i64)> =
                        sqlx::query_as($crate::store::sql::ACTIVE_SIGNING_KEYS)
                            .fetch_all(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    Ok(rows.into_iter().map(Into::into).collect())
                })
            }

            fn all_signing_keys(
                &self,
            ) -> $crate::store::StoreFuture<'_, Vec<$crate::store::StoredKey>> {
                Box::pin(async move {
                    let rows: Vec<(String, Vec<u8>, i64)> =
                        sqlx::query_as($crate::store::sql::ALL_SIGNING_KEYS)
                            .fetch_all(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    Ok(rows.into_iter().map(Into::into).collect())
                })
            }

            fn insert_signing_key<'a>(
                &'a self,
                key: &'a $crate::store::StoredKey,
            ) -> $crate::store::StoreFuture<'a, ()> {
                Box::pin(async move {
                    sqlx::query($crate::store::sql::INSERT_SIGNING_KEY)
                        .bind(&key.kid)
                        .bind(&key.material)
                        .bind(key.created_at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(())
                })
            }

            fn replace_signing_key_material<'a>(
                &'a self,
                kid: &'a str,
                expected: &'a [u8],
                material: &'a [u8],
            ) -> $crate::store::StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query($crate::store::sql::REPLACE_SIGNING_KEY_MATERIAL)
                        .bind(kid)
                        .bind(expected)
                        .bind(material)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(done.rows_affected() > 0)
                })
            }

            fn user_exists<'a>(&'a self, user_id: &'a str) -> $crate::store::StoreFuture<'a, bool> {
                Box::pin(async move {
                    let count: i64 = sqlx::query_scalar($crate::store::sql::USER_EXISTS)
                        .bind(user_id)
                        .fetch_one(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(count > 0)
                })
            }

            fn client_exists<'a>(
                &'a self,
                client_id: &'a str,
            ) -> $crate::store::StoreFuture<'a, bool> {
                Box::pin(async move {
                    let count: i64 = sqlx::query_scalar($crate::store::sql::CLIENT_EXISTS)
                        .bind(client_id)
                        .fetch_one(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(count > 0)
                })
            }

            fn create_session<'a>(
                &'a self,
                session: &'a $crate::store::NewSession,
            ) -> $crate::store::StoreFuture<'a, ()> {
                Box::pin(async move {
                    sqlx::query($crate::store::sql::INSERT_SESSION)
                        .bind(&session.id)
                        .bind(&session.user_id)
                        .bind(&session.client_id)
                        .bind(session.created_at_ms)
                        .bind(session.expires_at_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(())
                })
            }

            fn consent<'a>(
                &'a self,
                user_id: &'a str,
                client_id: &'a str,
            ) -> $crate::store::StoreFuture<'a, Option<$crate::store::Consent>> {
                Box::pin(async move {
                    let row: Option<(String, Option<i64>)> =
                        sqlx::query_as($crate::store::sql::CONSENT)
                            .bind(user_id)
                            .bind(client_id)
                            .fetch_optional(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    Ok(row.map(|(scopes, revoked_at)| $crate::store::Consent {
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
            ) -> $crate::store::StoreFuture<'a, ()> {
                Box::pin(async move {
                    sqlx::query($crate::store::sql::GRANT_CONSENT)
                        .bind(user_id)
                        .bind(client_id)
                        .bind(scopes)
                        .bind(now_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(())
                })
            }

            fn set_user_status<'a>(
                &'a self,
                user_id: &'a str,
                status: &'a str,
            ) -> $crate::store::StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query($crate::store::sql::SET_USER_STATUS)
                        .bind(user_id)
                        .bind(status)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(done.rows_affected() > 0)
                })
            }

            fn set_platform_admin<'a>(
                &'a self,
                user_id: &'a str,
                admin: bool,
            ) -> $crate::store::StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query($crate::store::sql::SET_PLATFORM_ADMIN)
                        .bind(user_id)
                        .bind(admin)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(done.rows_affected() > 0)
                })
            }

            fn revoke_session<'a>(
                &'a self,
                session_id: &'a str,
                now_ms: i64,
            ) -> $crate::store::StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query($crate::store::sql::REVOKE_SESSION)
                        .bind(session_id)
                        .bind(now_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(done.rows_affected() > 0)
                })
            }

            fn revoke_user_sessions<'a>(
                &'a self,
                user_id: &'a str,
                client_id: Option<&'a str>,
                now_ms: i64,
            ) -> $crate::store::StoreFuture<'a, u64> {
                Box::pin(async move {
                    let mut tx = self.pool.begin().await.map_err(Self::db_error)?;
                    let mut ended = 0;
                    for (statement, counted) in [
                        ($crate::store::sql::REVOKE_USER_REFRESH_TOKENS, false),
                        ($crate::store::sql::REVOKE_USER_SESSIONS, true),
                        ($crate::store::sql::REVOKE_USER_BROWSER_SESSIONS, false),
                    ] {
                        let done = sqlx::query(statement)
                            .bind(user_id)
                            .bind(client_id)
                            .bind(now_ms)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::db_error)?;
                        if counted {
                            ended = done.rows_affected();
                        }
                    }
                    tx.commit().await.map_err(Self::db_error)?;
                    Ok(ended)
                })
            }

            fn user_consents<'a>(
                &'a self,
                user_id: &'a str,
            ) -> $crate::store::StoreFuture<'a, Vec<$crate::store::ClientConsent>> {
                Box::pin(async move {
                    let rows: Vec<(String, String, Option<i64>)> =
                        sqlx::query_as($crate::store::sql::USER_CONSENTS)
                            .bind(user_id)
                            .fetch_all(&self.pool)
                            .await
                            .map_err(Self::db_error)?;
                    Ok(rows
                        .into_iter()
                        .map(
                            |(client_id, scopes, revoked_at)| $crate::store::ClientConsent {
                                client_id,
                                scopes,
                                revoked: revoked_at.is_some(),
                            },
                        )
                        .collect())
                })
            }

            fn set_client_enabled<'a>(
                &'a self,
                client_id: &'a str,
                enabled: bool,
            ) -> $crate::store::StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query($crate::store::sql::SET_CLIENT_ENABLED)
                        .bind(client_id)
                        .bind(enabled)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(done.rows_affected() > 0)
                })
            }

            fn revoke_consent<'a>(
                &'a self,
                user_id: &'a str,
                client_id: &'a str,
                now_ms: i64,
            ) -> $crate::store::StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query($crate::store::sql::REVOKE_CONSENT)
                        .bind(user_id)
                        .bind(client_id)
                        .bind(now_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(done.rows_affected() > 0)
                })
            }

            fn set_consent_scopes<'a>(
                &'a self,
                user_id: &'a str,
                client_id: &'a str,
                scopes: &'a str,
            ) -> $crate::store::StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query($crate::store::sql::SET_CONSENT_SCOPES)
                        .bind(user_id)
                        .bind(client_id)
                        .bind(scopes)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(done.rows_affected() > 0)
                })
            }

            fn remove_membership<'a>(
                &'a self,
                user_id: &'a str,
                organization_id: &'a str,
                location_id: Option<&'a str>,
            ) -> $crate::store::StoreFuture<'a, bool> {
                Box::pin(async move {
                    let done = sqlx::query($crate::store::sql::DELETE_MEMBERSHIP)
                        .bind(user_id)
                        .bind(organization_id)
                        .bind(location_id)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(done.rows_affected() > 0)
                })
            }

            fn put_membership<'a>(
                &'a self,
                membership: &'a $crate::store::NewMembership,
                now_ms: i64,
            ) -> $crate::store::StoreFuture<'a, ()> {
                Box::pin(async move {
                    let mut tx = self.pool.begin().await.map_err(Self::db_error)?;
                    sqlx::query($crate::store::sql::DELETE_MEMBERSHIP)
                        .bind(&membership.user_id)
                        .bind(&membership.organization_id)
                        .bind(membership.location_id.as_deref())
                        .execute(&mut *tx)
                        .await
                        .map_err(Self::db_error)?;
                    sqlx::query($crate::store::sql::INSERT_MEMBERSHIP)
                        .bind(&membership.id)
                        .bind(&membership.user_id)
                        .bind(&membership.organization_id)
                        .bind(membership.location_id.as_deref())
                        .bind(&membership.role)
                        .bind(now_ms)
                        .execute(&mut *tx)
                        .await
                        .map_err(Self::db_error)?;
                    tx.commit().await.map_err(Self::db_error)
                })
            }

            fn put_client<'a>(
                &'a self,
                client: &'a $crate::store::NewClient,
                now_ms: i64,
            ) -> $crate::store::StoreFuture<'a, ()> {
                Box::pin(async move {
                    sqlx::query($crate::store::sql::PUT_CLIENT)
                        .bind(&client.client_id)
                        .bind(&client.name)
                        .bind(&client.redirect_uris_json)
                        .bind(now_ms)
                        .execute(&self.pool)
                        .await
                        .map_err(Self::db_error)?;
                    Ok(())
                })
            }

            fn apply_seed<'a>(
                &'a self,
                seed: &'a $crate::store::SeedData,
                now_ms: i64,
            ) -> $crate::store::StoreFuture<'a, ()> {
                Box::pin(async move {
                    let mut tx = self.pool.begin().await.map_err(Self::db_error)?;
                    for user in &seed.users {
                        sqlx::query($crate::store::sql::SEED_USER)
                            .bind(&user.id)
                            .bind(&user.email)
                            .bind(&user.display_name)
                            .bind(&user.status)
                            .bind(user.platform_admin)
                            .bind(now_ms)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::db_error)?;
                    }
                    for (role, permission) in &seed.role_permissions {
                        sqlx::query($crate::store::sql::SEED_ROLE_PERMISSION)
                            .bind(role)
                            .bind(permission)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::db_error)?;
                    }
                    for membership in &seed.memberships {
                        sqlx::query($crate::store::sql::INSERT_MEMBERSHIP)
                            .bind(&membership.id)
                            .bind(&membership.user_id)
                            .bind(&membership.organization_id)
                            .bind(membership.location_id.as_deref())
                            .bind(&membership.role)
                            .bind(now_ms)
                            .execute(&mut *tx)
                            .await
                            .map_err(Self::db_error)?;
                    }
                    for client in &seed.clients {
                        sqlx::query($crate::store::sql::SEED_CLIENT)
                            .bind(&client.client_id)
                            .bind(&client.name)
                            .bind(&client.redirect_uris_json)
                            .bind(now_ms)
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

pub(super) use impl_sql_store;
