//! `ConversationWrites` and `Provisioning`: the typed RPCs of the idempotent
//! write tools, for internal callers. Each runs the same tool as the MCP path
//! through the runner (write switch, deadline, required fields) and reports
//! whether it replayed.

use chataigne_proto::tools::v1 as pb;
use chataigne_proto::tools::v1::conversation_writes_server::ConversationWritesServer;
use chataigne_proto::tools::v1::provisioning_server::ProvisioningServer;
use tonic::{Request, Response, Status};

use super::runner::run;
use crate::access::Access;
use crate::store::Store;
use crate::tools::Tools;
use crate::tools::conversation_post::{InstructionSendInput, MessageSendInput, SentMessage};
use crate::tools::location_create::LocationCreateInput;
use crate::tools::organization_create::OrganizationCreateInput;

pub struct WritesService<S, A> {
    tools: Tools<S, A>,
}

pub fn conversation_writes<S: Store, A: Access>(
    tools: Tools<S, A>,
) -> ConversationWritesServer<WritesService<S, A>> {
    ConversationWritesServer::new(WritesService { tools })
}

pub fn provisioning<S: Store, A: Access>(
    tools: Tools<S, A>,
) -> ProvisioningServer<WritesService<S, A>> {
    ProvisioningServer::new(WritesService { tools })
}

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

#[tonic::async_trait]
impl<S: Store, A: Access> pb::conversation_writes_server::ConversationWrites
    for WritesService<S, A>
{
    async fn send_message(
        &self,
        request: Request<pb::SendMessageRequest>,
    ) -> Result<Response<pb::SendMessageResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let input = MessageSendInput {
                conversation_id: request.conversation_id,
                text: request.text,
                idempotency_key: request.idempotency_key,
            };
            let (output, replayed) = self
                .tools
                .conversation_message_send(input, &ctx)
                .await?
                .into_data()?;
            Ok(pb::SendMessageResponse {
                message: Some(sent(output.message)),
                replayed,
            })
        })
        .await
    }

    async fn send_instruction(
        &self,
        request: Request<pb::SendInstructionRequest>,
    ) -> Result<Response<pb::SendInstructionResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let input = InstructionSendInput {
                conversation_id: request.conversation_id,
                text: request.text,
                idempotency_key: request.idempotency_key,
            };
            let (output, replayed) = self
                .tools
                .conversation_instruction_send(input, &ctx)
                .await?
                .into_data()?;
            Ok(pb::SendInstructionResponse {
                message: Some(sent(output.message)),
                replayed,
            })
        })
        .await
    }
}

#[tonic::async_trait]
impl<S: Store, A: Access> pb::provisioning_server::Provisioning for WritesService<S, A> {
    async fn create_organization(
        &self,
        request: Request<pb::CreateOrganizationRequest>,
    ) -> Result<Response<pb::CreateOrganizationResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let input = OrganizationCreateInput {
                name: request.name,
                idempotency_key: request.idempotency_key,
            };
            let (output, replayed) = self
                .tools
                .organization_create(input, &ctx)
                .await?
                .into_data()?;
            let org = output.organization;
            Ok(pb::CreateOrganizationResponse {
                organization: Some(pb::CreatedOrganization {
                    organization_id: org.id,
                    name: org.name,
                    created_at: org.created_at,
                }),
                replayed,
            })
        })
        .await
    }

    async fn create_location(
        &self,
        request: Request<pb::CreateLocationRequest>,
    ) -> Result<Response<pb::CreateLocationResponse>, Status> {
        run(&self.tools, request, |request, ctx| async move {
            let input = LocationCreateInput {
                organization_id: request.organization_id,
                name: request.name,
                line1: request.line1,
                city: request.city,
                postal_code: request.postal_code,
                country: request.country,
                timezone: request.timezone,
                currency: request.currency,
                idempotency_key: request.idempotency_key,
            };
            let (output, replayed) = self.tools.location_create(input, &ctx).await?.into_data()?;
            let loc = output.location;
            Ok(pb::CreateLocationResponse {
                location: Some(pb::CreatedLocation {
                    location_id: loc.id,
                    organization_id: loc.organization_id,
                    name: loc.name,
                    timezone: loc.timezone,
                    currency: loc.currency,
                    created_at: loc.created_at,
                }),
                replayed,
            })
        })
        .await
    }
}
