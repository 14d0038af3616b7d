//! What the message and instruction tools share: their input and output
//! types and the write itself (owner resolution, live authorization, then
//! the message appended at most once with its idempotency record). The text
//! is stored and never logged; the result does not repeat it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::idempotency::{Once, Written, check_key};
use super::{CallContext, ToolOutput, ToolSpec, Tools};
use crate::access::Access;
use crate::domain::{DomainError, Locale};
use crate::present;
use crate::store::Store;
use crate::store::writes::{Effect, NewMessage};

/// Longest text, in characters.
pub const MAX_TEXT_CHARS: usize = 2000;

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MessageSendInput {
    /// From chataigne_conversations_list, e.g. "conv_01paris11_07".
    #[schemars(length(min = 1, max = 64))]
    pub conversation_id: String,
    /// The message as the customer will read it, not only spaces.
    #[schemars(length(min = 1, max = 2000))]
    pub text: String,
    /// New random string per intended message; the same only to retry that message.
    #[schemars(length(min = 8, max = 255))]
    pub idempotency_key: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct InstructionSendInput {
    /// From chataigne_conversations_list, e.g. "conv_01paris11_07".
    #[schemars(length(min = 1, max = 64))]
    pub conversation_id: String,
    /// The instruction for the conversation's assistant, not only spaces; the customer does not see it.
    #[schemars(length(min = 1, max = 2000))]
    pub text: String,
    /// New random string per intended instruction; the same only to retry that instruction.
    #[schemars(length(min = 8, max = 255))]
    pub idempotency_key: String,
}

/// The message as recorded.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct SentMessage {
    /// Message ID, e.g. "msg_01a24f44229e71f3a6c9747166831e2e".
    /// Results recorded before the one id convention replay as they were.
    #[serde(alias = "message_id")]
    pub id: String,
    pub conversation_id: String,
    /// `staff` (to the customer) or `instruction` (to the assistant).
    pub kind: String,
    /// `queued` (waiting for the channel) or `recorded` (instructions).
    pub delivery: String,
    /// Channel of the conversation: sms, whatsapp, web_chat or email.
    pub channel: String,
    /// ISO 8601 with the location's UTC offset.
    pub created_at: String,
    /// Length of the text, in characters.
    pub length_chars: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct MessageSendOutput {
    pub message: SentMessage,
}

/// Who the text is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    Customer,
    Assistant,
}

/// The fields both inputs share.
pub struct Post<'a, I> {
    pub spec: &'static ToolSpec,
    pub audience: Audience,
    pub conversation_id: &'a str,
    pub text: &'a str,
    pub idempotency_key: &'a str,
    pub input: &'a I,
}

fn check_text(text: &str) -> Result<u32, DomainError> {
    let chars = text.chars().count();
    if text.trim().is_empty() || chars > MAX_TEXT_CHARS {
        return Err(DomainError::invalid(
            "text",
            format!("must be 1 to {MAX_TEXT_CHARS} characters, not only spaces"),
        ));
    }
    Ok(u32::try_from(chars).unwrap_or(u32::MAX))
}

impl<S: Store, A: Access> Tools<S, A> {
    /// Appends a message or instruction at most once.
    pub(crate) async fn post<I: Serialize>(
        &self,
        post: Post<'_, I>,
        ctx: &CallContext,
    ) -> Result<Written<MessageSendOutput>, DomainError> {
        let length_chars = check_text(post.text)?;
        check_key(post.idempotency_key)?;
        let target = self
            .store
            .conversation_target(post.conversation_id)
            .await?
            .ok_or(DomainError::Forbidden)?;
        let principal = self
            .access
            .authorize(&ctx.credential, post.spec.scope, &target.owner())
            .await?;
        let id = format!("msg_{}", uuid::Uuid::now_v7().simple());
        let (sender, delivery) = match post.audience {
            Audience::Customer => ("staff", "queued"),
            Audience::Assistant => ("instruction", "recorded"),
        };
        let message = SentMessage {
            id: id.clone(),
            conversation_id: post.conversation_id.to_owned(),
            kind: sender.to_owned(),
            delivery: delivery.to_owned(),
            channel: target.channel.clone(),
            created_at: present::timestamp(ctx.now_ms, &target.timezone),
            length_chars,
        };
        let (conversation, channel, at) = (
            &message.conversation_id,
            &message.channel,
            &message.created_at,
        );
        let text = match (post.audience, ctx.locale) {
            (Audience::Customer, Locale::Fr) => format!(
                "Message {id} en file d'envoi au client ({channel}) · conversation \
                 {conversation} · {at} · {length_chars} caractère(s)."
            ),
            (Audience::Customer, _) => format!(
                "Message {id} queued for the customer ({channel}) · conversation \
                 {conversation} · {at} · {length_chars} character(s)."
            ),
            (Audience::Assistant, Locale::Fr) => format!(
                "Instruction {id} transmise à l'assistant de la conversation {conversation} \
                 ({channel}) · {at} · {length_chars} caractère(s)."
            ),
            (Audience::Assistant, _) => format!(
                "Instruction {id} recorded for the assistant of conversation {conversation} \
                 ({channel}) · {at} · {length_chars} character(s)."
            ),
        };
        let effect = Effect::Message(NewMessage {
            id,
            conversation_id: post.conversation_id.to_owned(),
            sender,
            body: post.text.to_owned(),
            created_at_ms: ctx.now_ms,
            outbox_channel: (post.audience == Audience::Customer).then(|| target.channel.clone()),
        });
        let once = Once {
            tool: post.spec.name,
            principal: &principal,
            key: post.idempotency_key,
            input: post.input,
            effect,
        };
        let output = ToolOutput {
            data: MessageSendOutput { message },
            text,
            next_cursor: None,
        };
        self.write_once(once, output, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_are_bounded_in_characters() {
        assert_eq!(check_text("é").unwrap(), 1);
        assert!(check_text(&"é".repeat(2000)).is_ok());
        assert!(check_text(&"é".repeat(2001)).is_err());
        assert!(check_text("   ").is_err());
        assert!(check_text("").is_err());
    }
}
