//! Idempotent writes: each effect (a conversation message, an organization,
//! a location) is applied in one transaction together with its idempotency
//! record (the scoped key's keyed hash, the arguments' hash and the result to
//! replay). The primary key on the key hash makes a concurrent duplicate
//! safe on both backends: the second insert finds the first's row (after it
//! commits) and its transaction rolls back without any effect.
//!
//! PostgreSQL also takes a transaction-scoped advisory lock on the key hash
//! (a duplicate running elsewhere is reported as in progress instead of
//! waiting) and bounds the transaction's statements with the caller's
//! remaining deadline (`SET LOCAL statement_timeout`). A write whose caller
//! goes away (the gateway crashed or cancelled the call, the deadline
//! passed) is cancelled in the server at once (`pg_cancel_backend` on its
//! own transaction): its transaction rolls back and frees the key's lock
//! within moments, so a retry runs afresh instead of hearing "in progress"
//! from a transaction nobody waits for. SQLite starts the
//! transaction `IMMEDIATE` (one writer, waiting up to the busy timeout) and is
//! bounded by the caller's timeout around the whole call. Those two openings
//! are each backend's `Backend::begin_write`; the rest is one body.

use std::future::Future;
use std::time::Duration;

use sqlx::postgres::PgConnection;

use super::backend::{Backend, Binds, RowsAffected};
use super::sql_store::SqlStore;
use crate::domain::{DomainError, fold};
use crate::store::Owner;

/// The idempotency record written with an effect.
#[derive(Debug, Clone)]
pub struct IdempotencyClaim {
    /// HMAC of client × user × tool × key (hex).
    pub key_hash: String,
    pub tool: &'static str,
    /// HMAC of the arguments without the key (hex).
    pub request_hash: String,
    /// The result to replay, serialized.
    pub result_json: String,
    pub now_ms: i64,
    pub expires_at_ms: i64,
}

/// A message or instruction appended to a conversation.
#[derive(Debug, Clone)]
pub struct NewMessage {
    pub id: String,
    pub conversation_id: String,
    /// `staff` (to the customer) or `instruction` (to the assistant).
    pub sender: &'static str,
    /// The text (never logged).
    pub body: String,
    pub created_at_ms: i64,
    /// Customer messages: the channel whose outbox receives it.
    pub outbox_channel: Option<String>,
}

#[derive(Debug, Clone)]
pub struct NewOrganization {
    pub id: String,
    pub name: String,
    pub created_at_ms: i64,
}

#[derive(Debug, Clone)]
pub struct NewLocation {
    pub id: String,
    pub organization_id: String,
    pub name: String,
    pub line1: String,
    pub city: String,
    pub postal_code: String,
    pub country: String,
    pub timezone: String,
    pub currency: String,
    pub created_at_ms: i64,
}

/// One effect to apply at most once.
#[derive(Debug, Clone)]
pub enum Effect {
    Message(NewMessage),
    Organization(NewOrganization),
    Location(NewLocation),
}

/// What [`IdempotentWrites::apply_once`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    /// The effect and its record were committed.
    Done,
    /// A live record of this key exists: nothing was written.
    Existing {
        request_hash: String,
        result_json: Option<String>,
    },
}

/// A conversation as a write needs it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ConversationTarget {
    pub organization_id: String,
    pub location_id: String,
    pub channel: String,
    pub status: String,
    pub timezone: String,
}

impl ConversationTarget {
    pub fn owner(&self) -> Owner {
        Owner {
            organization_id: self.organization_id.clone(),
            location_id: Some(self.location_id.clone()),
        }
    }
}

pub trait IdempotentWrites {
    /// The conversation `conversation_id` with its real owner.
    fn conversation_target(
        &self,
        conversation_id: &str,
    ) -> impl Future<Output = Result<Option<ConversationTarget>, DomainError>> + Send;

    /// Applies `effect` with its idempotency record in one transaction, or
    /// reports the live record of the same key. `timeout` bounds the
    /// transaction (the caller's remaining deadline).
    fn apply_once(
        &self,
        claim: &IdempotencyClaim,
        effect: &Effect,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<Applied, DomainError>> + Send;
}

pub(crate) const CONVERSATION_TARGET: &str = "SELECT c.organization_id, c.location_id, \
     c.channel, c.status, l.timezone FROM conversations c \
     JOIN locations l ON l.id = c.location_id WHERE c.id = $1";
const DELETE_EXPIRED: &str =
    "DELETE FROM idempotency_keys WHERE key_hash = $1 AND expires_at_ms <= $2";
const INSERT_CLAIM: &str = "INSERT INTO idempotency_keys \
     (key_hash, tool, request_hash, result, created_at_ms, expires_at_ms) \
     VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (key_hash) DO NOTHING";
const EXISTING_CLAIM: &str =
    "SELECT request_hash, result FROM idempotency_keys WHERE key_hash = $1";
const INSERT_MESSAGE: &str = "INSERT INTO conversation_messages \
     (id, conversation_id, sender, body, body_folded, created_at_ms) \
     VALUES ($1, $2, $3, $4, $5, $6)";
/// A message to the customer leaves the conversation waiting for their
/// answer; an instruction to the assistant changes nothing for them.
const TOUCH_CONVERSATION: &str = "UPDATE conversations SET \
     status = CASE WHEN $3 = 'staff' THEN 'waiting' ELSE status END, \
     last_message_at_ms = CASE WHEN last_message_at_ms < $2 THEN $2 ELSE last_message_at_ms END \
     WHERE id = $1";
const INSERT_OUTBOX: &str = "INSERT INTO outbound_messages \
     (message_id, conversation_id, channel, status, created_at_ms) VALUES ($1, $2, $3, 'queued', $4)";
const INSERT_ORGANIZATION: &str = "INSERT INTO organizations \
     (id, name, status, created_at_ms, updated_at_ms) VALUES ($1, $2, 'active', $3, $3)";
const INSERT_LOCATION: &str = "INSERT INTO locations \
     (id, organization_id, name, line1, city, postal_code, country, timezone, currency, \
      status, created_at_ms, updated_at_ms) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'accepting', $10, $10)";

/// The transaction (backend pid, start in µs) of `apply_once` on PostgreSQL.
const OWN_TRANSACTION: &str =
    "SELECT pg_backend_pid(), (extract(epoch FROM now()) * 1000000)::int8";
/// Cancels the running statement of that backend if it is still in that
/// transaction (never a later one of the same connection).
const CANCEL_ABANDONED: &str = "SELECT pg_cancel_backend(pid) FROM pg_stat_activity \
     WHERE pid = $1 AND (extract(epoch FROM xact_start) * 1000000)::int8 = $2";

/// Armed while a PostgreSQL write transaction runs; dropped armed (its
/// future abandoned before commit or rollback), it cancels the
/// transaction's statement from another connection of the pool.
pub struct CancelOnDrop {
    target: Option<(sqlx::PgPool, i32, i64)>,
}

impl CancelOnDrop {
    /// Nothing to cancel (SQLite: the work stops with its connection).
    pub(crate) fn none() -> CancelOnDrop {
        CancelOnDrop { target: None }
    }

    /// The transaction ended normally: nothing to cancel.
    pub(crate) fn disarm(mut self) {
        self.target = None;
    }
}

/// Arms a [`CancelOnDrop`] on the PostgreSQL transaction open on `tx`.
pub(crate) async fn cancel_own_transaction(
    pool: &sqlx::PgPool,
    tx: &mut PgConnection,
) -> Result<CancelOnDrop, sqlx::Error> {
    let (pid, started_us): (i32, i64) = sqlx::query_as(OWN_TRANSACTION).fetch_one(tx).await?;
    Ok(CancelOnDrop {
        target: Some((pool.clone(), pid, started_us)),
    })
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        let Some((pool, pid, started_us)) = self.target.take() else {
            return;
        };
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        tracing::info!("idempotent write abandoned by its caller: cancelling its transaction");
        runtime.spawn(async move {
            if let Err(error) = sqlx::query(CANCEL_ABANDONED)
                .bind(pid)
                .bind(started_us)
                .execute(&pool)
                .await
            {
                tracing::warn!(%error, "abandoned write not cancelled; the statement timeout ends it");
            }
        });
    }
}

/// A 64-bit advisory lock id from a hex key hash.
pub(crate) fn lock_id(key_hash: &str) -> i64 {
    key_hash
        .get(..16)
        .and_then(|hex| u64::from_str_radix(hex, 16).ok())
        .map_or(0, |v| v as i64)
}

impl<B: Backend> IdempotentWrites for SqlStore<B> {
    async fn conversation_target(
        &self,
        conversation_id: &str,
    ) -> Result<Option<ConversationTarget>, DomainError> {
        let mut conn = self.pool().acquire().await?;
        let query = sqlx::query(CONVERSATION_TARGET).text(conversation_id);
        let row = B::fetch_row(&mut conn, query).await?;
        Ok(row.as_ref().map(B::decode).transpose()?)
    }

    async fn apply_once(
        &self,
        claim: &IdempotencyClaim,
        effect: &Effect,
        timeout: Option<Duration>,
    ) -> Result<Applied, DomainError> {
        let work = async {
            let (mut tx, cancel) = B::begin_write(self.pool(), &claim.key_hash, timeout).await?;
            let expired = sqlx::query(DELETE_EXPIRED)
                .text(&claim.key_hash)
                .int(claim.now_ms);
            B::execute(&mut tx, expired).await?;
            let insert = sqlx::query(INSERT_CLAIM)
                .text(&claim.key_hash)
                .text(claim.tool)
                .text(&claim.request_hash)
                .text(&claim.result_json)
                .int(claim.now_ms)
                .int(claim.expires_at_ms);
            let inserted = B::execute(&mut tx, insert).await?.rows_affected();
            if inserted == 0 {
                let existing = sqlx::query(EXISTING_CLAIM).text(&claim.key_hash);
                let row = B::fetch_row(&mut tx, existing)
                    .await?
                    .ok_or(sqlx::Error::RowNotFound)?;
                let (request_hash, result_json): (String, Option<String>) = B::decode(&row)?;
                tx.rollback().await?;
                cancel.disarm();
                return Ok(Applied::Existing {
                    request_hash,
                    result_json,
                });
            }
            match effect {
                Effect::Message(message) => {
                    let insert = sqlx::query(INSERT_MESSAGE)
                        .text(&message.id)
                        .text(&message.conversation_id)
                        .text(message.sender)
                        .text(&message.body)
                        .text(&fold(&message.body))
                        .int(message.created_at_ms);
                    B::execute(&mut tx, insert).await?;
                    let touch = sqlx::query(TOUCH_CONVERSATION)
                        .text(&message.conversation_id)
                        .int(message.created_at_ms)
                        .text(message.sender);
                    B::execute(&mut tx, touch).await?;
                    if let Some(channel) = &message.outbox_channel {
                        let outbox = sqlx::query(INSERT_OUTBOX)
                            .text(&message.id)
                            .text(&message.conversation_id)
                            .text(channel)
                            .int(message.created_at_ms);
                        B::execute(&mut tx, outbox).await?;
                    }
                }
                Effect::Organization(org) => {
                    let insert = sqlx::query(INSERT_ORGANIZATION)
                        .text(&org.id)
                        .text(&org.name)
                        .int(org.created_at_ms);
                    B::execute(&mut tx, insert).await?;
                }
                Effect::Location(loc) => {
                    let insert = sqlx::query(INSERT_LOCATION)
                        .text(&loc.id)
                        .text(&loc.organization_id)
                        .text(&loc.name)
                        .text(&loc.line1)
                        .text(&loc.city)
                        .text(&loc.postal_code)
                        .text(&loc.country)
                        .text(&loc.timezone)
                        .text(&loc.currency)
                        .int(loc.created_at_ms);
                    B::execute(&mut tx, insert).await?;
                }
            }
            tx.commit().await?;
            cancel.disarm();
            Ok::<Applied, DomainError>(Applied::Done)
        };
        match timeout {
            Some(limit) => tokio::time::timeout(limit, work)
                .await
                .unwrap_or(Err(DomainError::DeadlineExceeded)),
            None => work.await,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lock_ids_come_from_the_hash_prefix() {
        assert_eq!(lock_id("0000000000000001ffff"), 1);
        assert_eq!(lock_id("ffffffffffffffff"), -1);
        assert_eq!(lock_id("xyz"), 0);
    }
}
