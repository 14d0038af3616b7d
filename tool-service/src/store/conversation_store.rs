//! `ConversationStore`: a location's conversations with their newest message
//! and their transcripts, read newest or oldest first, for both backends from one body
//! of SQL. Transcript patterns are bound
//! parameters, never part of the SQL text or of any log.

use std::future::Future;

use sqlx::QueryBuilder;

use super::Owner;
use super::backend::{Backend, Binds, Dialect};
use super::sql::push_page_limit;
use super::sql_store::SqlStore;
use crate::domain::{ConversationFilter, DomainError, PageRequest, SortOrder};

/// A conversation as stored, with its location, customer and newest message.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct ConversationRecord {
    pub id: String,
    pub organization_id: String,
    pub location_id: String,
    pub location_name: String,
    pub timezone: String,
    pub customer_id: String,
    pub customer_name: String,
    pub channel: String,
    pub status: String,
    pub created_at_ms: i64,
    pub last_message_at_ms: i64,
    pub message_count: i64,
    pub last_message_body: Option<String>,
    pub last_message_sender: Option<String>,
    /// In a transcript search, the newest message that matched.
    pub matched_message_id: Option<String>,
    pub matched_message_body: Option<String>,
    pub matched_message_sender: Option<String>,
    pub matched_message_at_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct MessageRecord {
    pub id: String,
    pub conversation_id: String,
    /// `customer`, `staff`, `assistant` or `instruction`.
    pub sender: String,
    pub body: String,
    pub created_at_ms: i64,
}

pub trait ConversationStore: Send + Sync {
    /// Conversations matching `filter`, by (last_message_at, id) in the
    /// filter's order.
    fn list_conversations(
        &self,
        filter: &ConversationFilter,
        page: &PageRequest,
    ) -> impl Future<Output = Result<Vec<ConversationRecord>, DomainError>> + Send;

    fn get_conversation(
        &self,
        conversation_id: &str,
    ) -> impl Future<Output = Result<Option<ConversationRecord>, DomainError>> + Send;

    /// The real owner of a conversation.
    fn conversation_owner(
        &self,
        conversation_id: &str,
    ) -> impl Future<Output = Result<Option<Owner>, DomainError>> + Send;

    /// Messages of one conversation by (created_at, id), newest or oldest
    /// first; at most `page.limit + 1`.
    fn list_messages(
        &self,
        conversation_id: &str,
        page: &PageRequest,
        sort: SortOrder,
    ) -> impl Future<Output = Result<Vec<MessageRecord>, DomainError>> + Send;
}

const CONVERSATION_SELECT: &str = "SELECT v.id, v.organization_id, v.location_id, \
     l.name AS location_name, l.timezone, v.customer_id, c.display_name AS customer_name, \
     v.channel, v.status, v.created_at_ms, v.last_message_at_ms, \
     (SELECT COUNT(*) FROM conversation_messages m WHERE m.conversation_id = v.id) \
     AS message_count, \
     (SELECT m.body FROM conversation_messages m WHERE m.conversation_id = v.id \
     ORDER BY m.created_at_ms DESC, m.id DESC LIMIT 1) AS last_message_body, \
     (SELECT m.sender FROM conversation_messages m WHERE m.conversation_id = v.id \
     ORDER BY m.created_at_ms DESC, m.id DESC LIMIT 1) AS last_message_sender, \
     mm.id AS matched_message_id, mm.body AS matched_message_body, \
     mm.sender AS matched_message_sender, mm.created_at_ms AS matched_message_at_ms \
     FROM conversations v JOIN locations l ON l.id = v.location_id \
     JOIN customers c ON c.id = v.customer_id LEFT JOIN conversation_messages mm ON ";

/// The join of [`CONVERSATION_SELECT`] when no transcript is searched.
const NO_MATCH: &str = "1 = 0 WHERE ";

const CONVERSATION_OWNER: &str =
    "SELECT organization_id, location_id FROM conversations WHERE id = $1";

/// Parses a keyset position whose key is a time in Unix milliseconds.
fn position(page: &PageRequest) -> Result<Option<(i64, &str)>, DomainError> {
    page.after
        .as_ref()
        .map(|after| {
            after
                .key
                .parse::<i64>()
                .map(|key| (key, after.id.as_str()))
                .map_err(|_| DomainError::CursorInvalid)
        })
        .transpose()
}

/// ` AND (<time>, <id>) < (key, id)` (newest first) or `>` (oldest first),
/// spelled out for both backends.
fn push_past<DB: Dialect>(
    qb: &mut QueryBuilder<DB>,
    time: &str,
    id: &str,
    at: (i64, &str),
    sort: SortOrder,
) {
    let beyond = if sort.oldest_first() { ">" } else { "<" };
    qb.push(format_args!(" AND ({time} {beyond} "));
    DB::bind_int(qb, at.0);
    qb.push(format_args!(" OR ({time} = "));
    DB::bind_int(qb, at.0);
    qb.push(format_args!(" AND {id} {beyond} "));
    DB::bind_text(qb, at.1);
    qb.push("))");
}

pub(crate) fn conversations_query<DB: Dialect>(
    filter: &ConversationFilter,
    page: &PageRequest,
) -> Result<QueryBuilder<DB>, DomainError> {
    let mut qb = QueryBuilder::new(CONVERSATION_SELECT);
    // A search joins the newest matching message (the pattern bound once)
    // and keeps the conversations that have one.
    match &filter.body_pattern {
        Some(pattern) => {
            qb.push(
                "mm.id = (SELECT q.id FROM conversation_messages q \
                 WHERE q.conversation_id = v.id AND q.body_folded LIKE ",
            );
            DB::bind_text(&mut qb, pattern);
            qb.push(
                " ESCAPE '\\' ORDER BY q.created_at_ms DESC, q.id DESC LIMIT 1) \
                 WHERE mm.id IS NOT NULL AND ",
            );
        }
        None => {
            qb.push(NO_MATCH);
        }
    }
    qb.push("v.location_id = ");
    DB::bind_text(&mut qb, &filter.location_id);
    if let Some(status) = filter.status {
        qb.push(" AND v.status = ");
        DB::bind_text(&mut qb, status.as_str());
    }
    if let Some(channel) = filter.channel {
        qb.push(" AND v.channel = ");
        DB::bind_text(&mut qb, channel.as_str());
    }
    if let Some(at) = position(page)? {
        push_past(&mut qb, "v.last_message_at_ms", "v.id", at, filter.sort);
    }
    qb.push(if filter.sort.oldest_first() {
        " ORDER BY v.last_message_at_ms ASC, v.id ASC"
    } else {
        " ORDER BY v.last_message_at_ms DESC, v.id DESC"
    });
    push_page_limit(&mut qb, page);
    Ok(qb)
}

pub(crate) fn conversation_query<DB: Dialect>(conversation_id: &str) -> QueryBuilder<DB> {
    let mut qb = QueryBuilder::new(CONVERSATION_SELECT);
    qb.push(NO_MATCH);
    qb.push("v.id = ");
    DB::bind_text(&mut qb, conversation_id);
    qb
}

pub(crate) fn messages_query<DB: Dialect>(
    conversation_id: &str,
    page: &PageRequest,
    sort: SortOrder,
) -> Result<QueryBuilder<DB>, DomainError> {
    let mut qb = QueryBuilder::new(
        "SELECT id, conversation_id, sender, body, created_at_ms \
         FROM conversation_messages WHERE conversation_id = ",
    );
    DB::bind_text(&mut qb, conversation_id);
    if let Some(at) = position(page)? {
        push_past(&mut qb, "created_at_ms", "id", at, sort);
    }
    qb.push(if sort.oldest_first() {
        " ORDER BY created_at_ms ASC, id ASC"
    } else {
        " ORDER BY created_at_ms DESC, id DESC"
    });
    push_page_limit(&mut qb, page);
    Ok(qb)
}

impl<B: Backend> ConversationStore for SqlStore<B> {
    async fn list_conversations(
        &self,
        filter: &ConversationFilter,
        page: &PageRequest,
    ) -> Result<Vec<ConversationRecord>, DomainError> {
        let mut qb = conversations_query::<B>(filter, page)?;
        self.fetch_all(qb.build()).await
    }

    async fn get_conversation(
        &self,
        conversation_id: &str,
    ) -> Result<Option<ConversationRecord>, DomainError> {
        let mut qb = conversation_query::<B>(conversation_id);
        self.fetch_optional(qb.build()).await
    }

    async fn conversation_owner(
        &self,
        conversation_id: &str,
    ) -> Result<Option<Owner>, DomainError> {
        let row: Option<(String, String)> = self
            .fetch_optional(sqlx::query(CONVERSATION_OWNER).text(conversation_id))
            .await?;
        Ok(row.map(|(organization_id, location_id)| Owner {
            organization_id,
            location_id: Some(location_id),
        }))
    }

    async fn list_messages(
        &self,
        conversation_id: &str,
        page: &PageRequest,
        sort: SortOrder,
    ) -> Result<Vec<MessageRecord>, DomainError> {
        let mut qb = messages_query::<B>(conversation_id, page, sort)?;
        self.fetch_all(qb.build()).await
    }
}
