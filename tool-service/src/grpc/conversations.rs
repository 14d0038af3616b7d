//! `Conversations`: typed conversation reads for internal callers, running
//! the same tools as `chataigne_conversations_list` and
//! `chataigne_conversation_get`.

use chataigne_proto::tools::v1 as pb;
use tonic::{Request, Response, Status};

use super::convert::{non_empty, page};
use super::runner::run;
use crate::access::Access;
use crate::domain::{
    ConversationChannel, ConversationStatus, ConversationSummary, DomainError, SenderKind,
    TranscriptMessage,
};
use crate::store::Store;
use crate::tools::Tools;
use crate::tools::conversation_get::ConversationGetInput;
use crate::tools::conversations_list::ConversationsListInput;

pub struct ConversationsService<S, A> {
    tools: Tools<S, A>,
}

impl<S, A> ConversationsService<S, A> {
    pub fn new(tools: Tools<S, A>) -> Self {
        ConversationsService { tools }
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

#[tonic::async_trait]
impl<S: Store, A: Access> pb::conversations_server::Conversations for ConversationsService<S, A> {
    async fn list_conversations(
        &self,
        request: Request<pb::ListConversationsRequest>,
    ) -> Result<Response<pb::ListConversationsResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let (limit, cursor) = page(request.page);
            let input = ConversationsListInput {
                location_id: request.location_id,
                status: status_from_pb(request.status)?,
                channel: channel_from_pb(request.channel)?,
                query: non_empty(request.query),
                sort: None,
                limit,
                cursor,
            };
            let output = self.tools.conversations_list(input, &ctx).await?;
            Ok(pb::ListConversationsResponse {
                conversations: output.data.conversations.into_iter().map(summary).collect(),
                next_cursor: output.next_cursor.unwrap_or_default(),
            })
        })
        .await
    }

    async fn get_conversation(
        &self,
        request: Request<pb::GetConversationRequest>,
    ) -> Result<Response<pb::GetConversationResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let input = ConversationGetInput {
                conversation_id: request.conversation_id,
                limit: (request.limit != 0).then_some(request.limit),
                sort: None,
                cursor: non_empty(request.cursor),
            };
            let output = self.tools.conversation_get(input, &ctx).await?;
            Ok(pb::GetConversationResponse {
                conversation: Some(summary(output.data.conversation)),
                messages: output.data.messages.into_iter().map(message).collect(),
                next_cursor: output.next_cursor.unwrap_or_default(),
            })
        })
        .await
    }
}
