//! `chataigne_conversation_get` ↔ `Conversations/GetConversation`: one
//! conversation with up to 100 of its messages, newest first (or oldest
//! first), and a cursor towards the rest.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::support::{Pager, Summary};
use super::{CallContext, DeadlineClass, Tool, ToolFacts, ToolKind, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{
    ConversationSummary, DomainError, Locale, PageAfter, SortOrder, TranscriptMessage,
};
use crate::present::{conversation, message};
use crate::store::Store;

/// Messages per call by default and at most (seed 001).
pub const DEFAULT_MESSAGES: u32 = 50;
pub const MAX_MESSAGES: u32 = 100;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_conversation_get",
    title: "Get a conversation",
    description: "Returns one conversation (customer, channel, status, message count) with its \
messages, newest first or, with `sort: oldest_first`, from the start: sender (customer, staff, assistant, or an instruction to it), text and time (ISO 8601, location's UTC offset). Suited to reading what a customer \
asked and what was answered. Returns 50 messages by default, 100 at most, with \
`meta.next_cursor` when more exist. An unknown conversation is refused like an \
inaccessible one.",
    scope: "conversations.read",
    kind: ToolKind::Read,
    deadline: DeadlineClass::Read,
    idempotency_key_required: false,
    open_world: false,
    rpc: "chataigne.tools.v1.Conversations/GetConversation",
    facts: ToolFacts {
        view: Some(&super::views::CONVERSATION),
        ..ToolFacts::NONE
    },
};

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationGetInput {
    /// From chataigne_conversations_list, e.g. "conv_01paris11_07".
    #[schemars(length(min = 1, max = 64))]
    pub conversation_id: String,
    /// Messages per call; 50 when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
    /// By time: newest_first when omitted, or oldest_first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sort: Option<SortOrder>,
    /// `meta.next_cursor` of the previous call, for the next messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(max = 1024))]
    pub cursor: Option<String>,
}

#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct ConversationGetOutput {
    pub conversation: ConversationSummary,
    /// Messages in the requested order.
    pub messages: Vec<TranscriptMessage>,
}

/// `chataigne_conversation_get`, declared by [`SPEC`].
pub struct ConversationGet;

impl Tool for ConversationGet {
    type Input = ConversationGetInput;
    type Output = ConversationGetOutput;
    type Reply = ToolOutput<ConversationGetOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: ConversationGetInput,
        ctx: &CallContext,
    ) -> Result<ToolOutput<ConversationGetOutput>, DomainError> {
        let owner = tools
            .store
            .conversation_owner(&input.conversation_id)
            .await?;
        let (_, principal) = tools.authorize_owner(owner, SPEC.scope, ctx).await?;
        let sort = input.sort.unwrap_or_default();
        // The cursor is bound to the order it was issued for, explicit or not.
        let bound_input = ConversationGetInput {
            sort: Some(sort),
            ..input.clone()
        };
        let pager = Pager::new(SPEC.name, &bound_input, &principal, &tools.cursors, ctx);
        let page = pager.request_within(
            input.limit,
            input.cursor.as_deref(),
            DEFAULT_MESSAGES,
            MAX_MESSAGES,
        )?;
        let record = tools
            .store
            .get_conversation(&input.conversation_id)
            .await?
            .ok_or(DomainError::NotFound)?;
        let timezone = record.timezone.clone();
        let records = tools
            .store
            .list_messages(&input.conversation_id, &page, sort)
            .await?;
        let (records, next_cursor) = pager.paginate(records, &page, |r| PageAfter {
            key: r.created_at_ms.to_string(),
            id: r.id.clone(),
        });
        let conversation = conversation(record, ctx.locale)?;
        let messages = records
            .into_iter()
            .map(|r| message(r, &timezone, ctx.locale))
            .collect::<Result<Vec<_>, _>>()?;
        let oldest = sort.oldest_first();
        let order = match (ctx.locale, oldest) {
            (Locale::Fr, true) => "du plus ancien au plus récent",
            (Locale::Fr, false) => "du plus récent au plus ancien",
            (_, true) => "oldest first",
            (_, false) => "newest first",
        };
        let c = &conversation;
        let (who, shown, total) = (&c.customer_name, messages.len(), c.message_count);
        let (channel, status) = (&c.channel_label, &c.status_label);
        let head = if ctx.locale == Locale::Fr {
            format!(
                "Conversation {} avec {who} ({}) · {} ({}) · {channel} · {status} · ouverte le {} · \
                 dernier message le {} : {shown} message(s) sur {total}, {order}.",
                c.id,
                c.customer_id,
                c.location_name,
                c.location_id,
                c.created_at,
                c.last_message_at
            )
        } else {
            format!(
                "Conversation {} with {who} ({}) · {} ({}) · {channel} · {status} · opened {} · \
                 last message {}: {shown} of {total} message(s), {order}.",
                c.id,
                c.customer_id,
                c.location_name,
                c.location_id,
                c.created_at,
                c.last_message_at
            )
        };
        let mut summary = Summary::new(ctx.locale, head);
        for m in &messages {
            summary.line(format!(
                "- {} · {} · {}{} {}",
                m.created_at,
                m.sender_label,
                m.id,
                ctx.locale.pick(" :", ":"),
                m.body
            ));
        }
        if oldest {
            summary.next("Messages suivants", "Later messages");
        } else {
            summary.next("Messages plus anciens", "Older messages");
        }
        Ok(pager.output(
            ConversationGetOutput {
                conversation,
                messages,
            },
            summary,
            next_cursor,
        ))
    }
}
