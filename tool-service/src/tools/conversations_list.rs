//! `chataigne_conversations_list` ↔ `Conversations/ListConversations`: a
//! location's conversations, most or least recently active first, optionally
//! those whose transcript contains a text (case and accents ignored). The transcript query is matched by the
//! database as a bound parameter and appears in no log, span or error.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::{page_output, paged_input};
use super::{CallContext, DeadlineClass, Tool, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{
    ConversationChannel, ConversationFilter, ConversationStatus, ConversationSummary, DomainError,
    Locale, PageAfter, SortOrder, contains_pattern, fold,
};
use crate::present::conversation;
use crate::store::Store;

/// Length of a transcript query, in characters.
pub const QUERY_CHARS: std::ops::RangeInclusive<usize> = 2..=200;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_conversations_list",
    title: "List conversations",
    description: "Lists the conversations between one location and its customers, most \
recently active first (or least, with `sort: oldest_first`), with customer, channel, status, \
message count and a preview of the newest message (120 characters at most). Suited to reviewing open conversations, the exchanges \
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

paged_input! {
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
        /// Text that a message of the transcript contains, case and accents ignored, e.g. "allergie".
        #[serde(default, skip_serializing_if = "Option::is_none")]
        #[schemars(length(min = 2, max = 200))]
        pub query: Option<String>,
        /// By time of the newest message: newest_first when omitted, or oldest_first.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub sort: Option<SortOrder>,
    }
    cursor: "`meta.next_cursor` of the previous page, with the same filters."
}

impl std::fmt::Debug for ConversationsListInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConversationsListInput")
            .field("location_id", &self.location_id)
            .field("status", &self.status)
            .field("channel", &self.channel)
            .field("query", &self.query.as_ref().map(|_| ".."))
            .field("sort", &self.sort)
            .field("limit", &self.limit)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ConversationsListOutput {
    /// Conversations in the requested order.
    pub conversations: Vec<ConversationSummary>,
}

/// `chataigne_conversations_list`, declared by [`SPEC`].
pub struct ConversationsList;

impl Tool for ConversationsList {
    type Input = ConversationsListInput;
    type Output = ConversationsListOutput;
    type Reply = ToolOutput<ConversationsListOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: ConversationsListInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<ConversationsListOutput>, DomainError> {
        let (_, principal) = tools
            .authorize_location(&input.location_id, SPEC.scope, ctx)
            .await?;
        if let Some(query) = &input.query
            && !QUERY_CHARS.contains(&query.chars().count())
        {
            // The query itself is not echoed.
            return Err(DomainError::invalid(
                "query",
                format!(
                    "must be {} to {} characters",
                    QUERY_CHARS.start(),
                    QUERY_CHARS.end()
                ),
            ));
        }
        let sort = input.sort.unwrap_or_default();
        let filter = ConversationFilter {
            location_id: input.location_id.clone(),
            status: input.status,
            channel: input.channel,
            body_pattern: input.query.as_deref().map(contains_pattern),
            sort,
        };
        // The cursor is bound to the folded query and to the order it was
        // issued for, explicit or not.
        let bound_input = ConversationsListInput {
            query: input.query.as_deref().map(fold),
            sort: Some(sort),
            ..input.clone()
        };
        let (pager, page) = tools.page(SPEC.name, &bound_input, &principal, ctx)?;
        let records = tools.store.list_conversations(&filter, &page).await?;
        let (records, next_cursor) = pager.paginate(records, &page, |r| PageAfter {
            key: r.last_message_at_ms.to_string(),
            id: r.id.clone(),
        });
        let conversations = records
            .into_iter()
            .map(|r| conversation(r, ctx.locale))
            .collect::<Result<Vec<_>, _>>()?;
        let mut text = match (ctx.locale, conversations.len(), sort.oldest_first()) {
            (Locale::Fr, 0, _) => "Aucune conversation ne correspond.".to_owned(),
            (Locale::Fr, n, false) => {
                format!("{n} conversation(s), de la plus récente à la plus ancienne.")
            }
            (Locale::Fr, n, true) => {
                format!("{n} conversation(s), de la plus ancienne à la plus récente.")
            }
            (_, 0, _) => "No conversations match.".to_owned(),
            (_, n, false) => format!("{n} conversation(s), most recently active first."),
            (_, n, true) => format!("{n} conversation(s), least recently active first."),
        };
        for c in conversations.iter().take(5) {
            text.push_str(&format!(
                "\n- {} · {} · {} · {} · {} · {}",
                c.id,
                c.customer_name,
                c.channel_label,
                c.status_label,
                c.last_message_at,
                c.last_message_preview
            ));
        }
        let more = ctx.locale.pick(
            "\nD'autres conversations suivent (meta.next_cursor).",
            "\nMore conversations follow (meta.next_cursor).",
        );
        Ok(page_output(
            ConversationsListOutput { conversations },
            text,
            next_cursor,
            more,
        ))
    }
}
