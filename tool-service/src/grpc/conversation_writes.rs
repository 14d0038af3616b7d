//! `ConversationWrites`: the typed RPCs of the idempotent conversation
//! writes, for internal callers. Each runs the same tool as the MCP path
//! through the runner (write switch, deadline, required fields) and reports
//! whether it replayed; this file holds the declaration and the conversions.
//!
//! | RPC (`chataigne.tools.v1.`)          | kind  | scope               | required fields                        |
//! |--------------------------------------|-------|---------------------|----------------------------------------|
//! | `ConversationWrites/SendMessage`     | write | conversations.write | conversation_id, text, idempotency_key |
//! | `ConversationWrites/SendInstruction` | write | conversations.write | conversation_id, text, idempotency_key |

use chataigne_proto::tools::v1 as pb;

use super::fields::typed_service;
use crate::domain::DomainError;
use crate::tools::Answered;
use crate::tools::conversation_post::{
    InstructionSendInput, MessageSendInput, MessageSendOutput, SentMessage,
};

typed_service! {
    /// The `ConversationWrites` service.
    ConversationWritesService serves conversation_writes_server::ConversationWrites {
        send_message: SendMessageRequest => ConversationMessageSend
            -> SendMessageResponse { conversation_id, text, idempotency_key };
        send_instruction: SendInstructionRequest => ConversationInstructionSend
            -> SendInstructionResponse { conversation_id, text, idempotency_key };
    }
}

/// The conversions of one message-sending RPC, whose request and response
/// carry the same fields for either tool: the request to the tool's input,
/// the tool's answer to the response.
macro_rules! message_rpc {
    ($request:ident => $input:ident, $response:ident) => {
        impl TryFrom<pb::$request> for $input {
            type Error = DomainError;
            fn try_from(request: pb::$request) -> Result<Self, DomainError> {
                Ok($input {
                    conversation_id: request.conversation_id,
                    text: request.text,
                    idempotency_key: request.idempotency_key,
                })
            }
        }

        impl From<Answered<MessageSendOutput>> for pb::$response {
            fn from(answer: Answered<MessageSendOutput>) -> Self {
                pb::$response {
                    message: Some(sent(answer.data.message)),
                    replayed: answer.replayed,
                }
            }
        }
    };
}

message_rpc!(SendMessageRequest => MessageSendInput, SendMessageResponse);
message_rpc!(SendInstructionRequest => InstructionSendInput, SendInstructionResponse);

fn sent(message: SentMessage) -> pb::SentMessage {
    pb::SentMessage {
        message_id: message.id,
        conversation_id: message.conversation_id,
        kind: message.kind,
        delivery: message.delivery,
        created_at: message.created_at,
        length_chars: message.length_chars,
    }
}
