//! `chataigne_conversations_list` ↔ `Conversations/ListConversations`: a
//! location's conversations, most recently active first, optionally those
//! whose transcript contains a text. The transcript query is matched by the
//! database as a bound parameter and appears in no log, span or error.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::customer_view::conversation;
use super::support::Pager;
use super::{CallContext, DeadlineClass, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{
    ConversationChannel, ConversationFilter, ConversationStatus, ConversationSummary, DomainError,
    PageAfter, like_pattern,
};
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_conversations_list",
    title: "List conversations",
    description: "Lists the conversations between one location and its customers, most \
recently active first, with customer, channel, status, message count and a preview of the \
newest message (120 characters at most). Suited to reviewing open conversations, the exchanges \
on one channel, or finding a conversation that mentions a topic; transcripts come from \
chataigne_conversation_get. `query` is not logged. Returns 20 by default, 50 at most, with \
`meta.next_cursor` when more exist.",
    scope: "conversations.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Conversations/ListConversations",
};

#[derive(Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationsListInput {
    /// From chataigne_locations_list, e.g. "loc_01paris11".
    #[schemars(length(min = 1, max = 64))]
    pub location_id: String,
    /// Only this status: open (awaiting the restaurant), waiting (awaiting the customer) or closed; omitted: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ConversationStatus>,
    /// Only this channel; omitted: any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<ConversationChannel>,
    /// Text that a message of the transcript contains, ignoring the case of unaccented letters, e.g. "allergie".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 2, max = 200))]
    pub query: Option<String>,
    /// Page size; 20 when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<u32>,
    /// `meta.next_cursor` of the previous page, with the same filters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub cursor: Option<String>,
}

impl std::fmt::Debug for ConversationsListInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversationsListInput")
            .field("location_id", &self.location_id)
            .field("status", &self.status)
            .field("channel", &self.channel)
            .field("query", &self.query.as_ref().map(|_| ".."))
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ConversationsListOutput {
    /// Conversations, most recently active first.
    pub conversations: Vec<ConversationSummary>,
}

impl<S: Store, A: Access> Tools<S, A> {
    pub async fn conversations_list(
        &self,
        input: ConversationsListInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<ConversationsListOutput>, DomainError> {
        let owner = self
            .store
            .location_owner(&input.location_id)
            .await?
            .ok_or(DomainError::Forbidden)?;
        let principal = self
            .access
            .authorize(&ctx.credential, SPEC.scope, &owner)
            .await?;
        if let Some(query) = &input.query
            && !(2..=200).contains(&query.chars().count())
        {
            // The query itself is not echoed.
            return Err(DomainError::invalid(
                "query",
                "between 2 and 200 characters",
            ));
        }
        let filter = ConversationFilter {
            location_id: input.location_id.clone(),
            status: input.status,
            channel: input.channel,
            body_pattern: input.query.as_deref().map(like_pattern),
        };
        let pager = Pager::new(SPEC.name, &input, &principal, &self.cursors, ctx);
        let page = pager.request(input.limit, input.cursor.as_deref())?;
        let records = self.store.list_conversations(&filter, &page).await?;
        let (records, next_cursor) = pager.paginate(records, &page, |r| PageAfter {
            key: r.last_message_at_ms.to_string(),
            id: r.id.clone(),
        });
        let conversations = records
            .into_iter()
            .map(conversation)
            .collect::<Result<Vec<_>, _>>()?;
        let mut text = match (ctx.locale, conversations.len()) {
            ("fr", 0) => "Aucune conversation ne correspond.".to_owned(),
            ("fr", n) => format!("{n} conversation(s), de la plus récente à la plus ancienne."),
            (_, 0) => "No conversations match.".to_owned(),
            (_, n) => format!("{n} conversation(s), most recently active first."),
        };
        for c in conversations.iter().take(5) {
            text.push_str(&format!(
                "\n- {} · {} · {} · {} · {} · {}",
                c.id,
                c.customer_name,
                c.channel.as_str(),
                c.status.as_str(),
                c.last_message_at,
                c.last_message_preview
            ));
        }
        if next_cursor.is_some() {
            text.push_str(if ctx.locale == "fr" {
                "\nD'autres conversations suivent (meta.next_cursor)."
            } else {
                "\nMore conversations follow (meta.next_cursor)."
            });
        }
        Ok(ToolOutput {
            data: ConversationsListOutput { conversations },
            text,
            next_cursor,
        })
    }
}
