//! `Conversations`: typed conversation reads for internal callers, running
//! the same tools as `chataigne_conversations_list` and
//! `chataigne_conversation_get` through the runner; this file holds the
//! declaration and the conversions.
//!
//! | RPC (`chataigne.tools.v1.`)       | kind | scope              | required fields |
//! |-----------------------------------|------|--------------------|-----------------|
//! | `Conversations/ListConversations` | read | conversations.read | location_id     |
//! | `Conversations/GetConversation`   | read | conversations.read | conversation_id |

use chataigne_proto::tools::v1 as pb;

use super::convert::{non_empty, page};
use super::fields::typed_service;
use crate::domain::{
    ConversationChannel, ConversationStatus, ConversationSummary, DomainError, SenderKind,
    TranscriptMessage,
};
use crate::tools::Answered;
use crate::tools::conversation_get::{ConversationGetInput, ConversationGetOutput};
use crate::tools::conversations_list::{ConversationsListInput, ConversationsListOutput};

typed_service! {
    /// The `Conversations` service.
    ConversationsService serves conversations_server::Conversations {
        list_conversations: ListConversationsRequest => ConversationsList
            -> ListConversationsResponse { location_id };
        get_conversation: GetConversationRequest => ConversationGet
            -> GetConversationResponse { conversation_id };
    }
}

impl TryFrom<pb::ListConversationsRequest> for ConversationsListInput {
    type Error = DomainError;
    fn try_from(request: pb::ListConversationsRequest) -> Result<Self, DomainError> {
        let (limit, cursor) = page(request.page);
        Ok(ConversationsListInput {
            location_id: request.location_id,
            status: status_from_pb(request.status)?,
            channel: channel_from_pb(request.channel)?,
            query: non_empty(request.query),
            sort: None,
            limit,
            cursor,
        })
    }
}

impl From<Answered<ConversationsListOutput>> for pb::ListConversationsResponse {
    fn from(answer: Answered<ConversationsListOutput>) -> Self {
        pb::ListConversationsResponse {
            conversations: answer
                .data
                .conversations
                .into_iter()
                .map(|listed| summary(listed.conversation))
                .collect(),
            next_cursor: answer.next_cursor.unwrap_or_default(),
        }
    }
}

impl TryFrom<pb::GetConversationRequest> for ConversationGetInput {
    type Error = DomainError;
    fn try_from(request: pb::GetConversationRequest) -> Result<Self, DomainError> {
        Ok(ConversationGetInput {
            conversation_id: request.conversation_id,
            limit: (request.limit != 0).then_some(request.limit),
            sort: None,
            cursor: non_empty(request.cursor),
        })
    }
}

impl From<Answered<ConversationGetOutput>> for pb::GetConversationResponse {
    fn from(answer: Answered<ConversationGetOutput>) -> Self {
        pb::GetConversationResponse {
            conversation: Some(summary(answer.data.conversation)),
            messages: answer.data.messages.into_iter().map(message).collect(),
            next_cursor: answer.next_cursor.unwrap_or_default(),
        }
    }
}

fn status_from_pb(value: i32) -> Result<Option<ConversationStatus>, DomainError> {
    use pb::ConversationThreadStatus as P;
    match P::try_from(value) {
        Ok(P::Unspecified) => Ok(None),
        Ok(P::Open) => Ok(Some(ConversationStatus::Open)),
        Ok(P::Waiting) => Ok(Some(ConversationStatus::Waiting)),
        Ok(P::Closed) => Ok(Some(ConversationStatus::Closed)),
        Err(_) => Err(DomainError::invalid("status", "unknown status")),
    }
}

fn status_to_pb(status: ConversationStatus) -> pb::ConversationThreadStatus {
    use pb::ConversationThreadStatus as P;
    match status {
        ConversationStatus::Open => P::Open,
        ConversationStatus::Waiting => P::Waiting,
        ConversationStatus::Closed => P::Closed,
    }
}

fn channel_from_pb(value: i32) -> Result<Option<ConversationChannel>, DomainError> {
    use pb::ConversationThreadChannel as P;
    match P::try_from(value) {
        Ok(P::Unspecified) => Ok(None),
        Ok(P::Sms) => Ok(Some(ConversationChannel::Sms)),
        Ok(P::Whatsapp) => Ok(Some(ConversationChannel::Whatsapp)),
        Ok(P::WebChat) => Ok(Some(ConversationChannel::WebChat)),
        Ok(P::Email) => Ok(Some(ConversationChannel::Email)),
        Err(_) => Err(DomainError::invalid("channel", "unknown channel")),
    }
}

fn channel_to_pb(channel: ConversationChannel) -> pb::ConversationThreadChannel {
    use pb::ConversationThreadChannel as P;
    match channel {
        ConversationChannel::Sms => P::Sms,
        ConversationChannel::Whatsapp => P::Whatsapp,
        ConversationChannel::WebChat => P::WebChat,
        ConversationChannel::Email => P::Email,
    }
}

fn sender_to_pb(sender: Option<SenderKind>) -> pb::ConversationSenderKind {
    use pb::ConversationSenderKind as P;
    match sender {
        None => P::Unspecified,
        Some(SenderKind::Customer) => P::Customer,
        Some(SenderKind::Staff) => P::Staff,
        Some(SenderKind::Assistant) => P::Assistant,
        Some(SenderKind::Instruction) => P::Instruction,
    }
}

fn summary(conversation: ConversationSummary) -> pb::ConversationSummary {
    pb::ConversationSummary {
        id: conversation.id,
        location_id: conversation.location_id,
        location_name: conversation.location_name,
        customer_id: conversation.customer_id,
        customer_name: conversation.customer_name,
        channel: channel_to_pb(conversation.channel) as i32,
        status: status_to_pb(conversation.status) as i32,
        message_count: conversation.message_count,
        last_message_preview: conversation.last_message_preview,
        last_message_sender: sender_to_pb(conversation.last_message_sender) as i32,
        created_at: conversation.created_at,
        last_message_at: conversation.last_message_at,
    }
}

fn message(message: TranscriptMessage) -> pb::ConversationTranscriptMessage {
    pb::ConversationTranscriptMessage {
        id: message.id,
        sender: sender_to_pb(Some(message.sender)) as i32,
        body: message.body,
        created_at: message.created_at,
    }
}
