//! `chataigne_conversation_message_send` ↔ `ConversationWrites/SendMessage`:
//! a message to the customer of a conversation, at most once per key.

use super::conversation_post::{Audience, MessageSendInput, MessageSendOutput, Post};
use super::idempotency::Written;
use super::{
    CallContext, DeadlineClass, Tool, ToolFacts, ToolId, ToolKind, ToolSpec, Tools, WriteEffect,
};
use crate::access::Access;
use crate::domain::DomainError;
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_conversation_message_send",
    title: "Send a message to a customer",
    description: "Sends a message to the customer of one conversation, through its channel; \
the customer reads the text (1 to 2000 characters) as written. \
chataigne_conversation_instruction_send addresses the assistant instead. `idempotency_key` (8 \
to 255 characters) is new per intended message; a retry with the same key and arguments \
returns the first result with `meta.replayed: true` and sends nothing twice. Returns the \
message ID, channel, delivery state (`queued`) and time (ISO 8601, location's UTC offset). An \
unknown conversation is refused like an inaccessible one.",
    scope: "conversations.write",
    kind: ToolKind::Write,
    deadline: DeadlineClass::Write,
    idempotency_key_required: true,
    open_world: true,
    rpc: "chataigne.tools.v1.ConversationWrites/SendMessage",
    facts: ToolFacts {
        effect: Some(WriteEffect::read_with(ToolId::ConversationGet)),
        ..ToolFacts::NONE
    },
};

/// `chataigne_conversation_message_send`, declared by [`SPEC`].
pub struct ConversationMessageSend;

impl Tool for ConversationMessageSend {
    type Input = MessageSendInput;
    type Output = MessageSendOutput;
    type Reply = Written<MessageSendOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: MessageSendInput,
        ctx: &CallContext,
    ) -> Result<Written<MessageSendOutput>, DomainError> {
        let post = Post {
            spec: &SPEC,
            audience: Audience::Customer,
            conversation_id: &input.conversation_id,
            text: &input.text,
            idempotency_key: &input.idempotency_key,
            input: &input,
        };
        tools.post(post, ctx).await
    }
}
