//! `chataigne_conversation_instruction_send` ↔
//! `ConversationWrites/SendInstruction`: an instruction to the assistant
//! handling a conversation (the customer does not see it), at most once per key.

use super::conversation_post::{Audience, InstructionSendInput, MessageSendOutput, Post};
use super::idempotency::Written;
use super::{
    CallContext, DeadlineClass, Tool, ToolFacts, ToolId, ToolKind, ToolSpec, Tools, WriteEffect,
};
use crate::access::Access;
use crate::domain::DomainError;
use crate::store::Store;

pub const SPEC: ToolSpec = ToolSpec {
    name: "chataigne_conversation_instruction_send",
    title: "Instruct a conversation's assistant",
    description: "Records an instruction (1 to 2000 characters) for the assistant handling one \
customer conversation, such as a promise to honour or a topic to avoid; the customer does not \
see it, unlike chataigne_conversation_message_send. `idempotency_key` (8 to 255 characters) is \
new per intended instruction; a retry with the same key and arguments returns the first result \
with `meta.replayed: true` and records nothing twice. Returns the message ID, delivery state \
(`recorded`) and time (ISO 8601, location's UTC offset). An unknown conversation is refused \
like an inaccessible one.",
    scope: "conversations.write",
    kind: ToolKind::Write,
    deadline: DeadlineClass::Write,
    idempotency_key_required: true,
    open_world: false,
    rpc: "chataigne.tools.v1.ConversationWrites/SendInstruction",
    facts: ToolFacts {
        effect: Some(WriteEffect::read_with(ToolId::ConversationGet)),
        ..ToolFacts::NONE
    },
};

/// `chataigne_conversation_instruction_send`, declared by [`SPEC`].
pub struct ConversationInstructionSend;

impl Tool for ConversationInstructionSend {
    type Input = InstructionSendInput;
    type Output = MessageSendOutput;
    type Reply = Written<MessageSendOutput>;
    const SPEC: ToolSpec = SPEC;

    async fn run<S: Store, A: Access>(
        tools: &Tools<S, A>,
        input: InstructionSendInput,
        ctx: &CallContext,
    ) -> Result<Written<MessageSendOutput>, DomainError> {
        let post = Post {
            spec: &SPEC,
            audience: Audience::Assistant,
            conversation_id: &input.conversation_id,
            text: &input.text,
            idempotency_key: &input.idempotency_key,
            input: &input,
        };
        tools.post(post, ctx).await
    }
}
