//! `ConversationWrites` and `Provisioning`: the typed RPCs of the idempotent
//! write tools, for internal callers. Each passes the operator's write switch,
//! runs the same tool as the MCP path within the caller's deadline and
//! reports whether it replayed.

use chataigne_proto::tools::v1 as pb;
use chataigne_proto::tools::v1::conversation_writes_server::ConversationWritesServer;
use chataigne_proto::tools::v1::provisioning_server::ProvisioningServer;
use tonic::{Request, Response, Status};

use super::convert::context;
use super::deadline;
use super::status::write_error;
use crate::access::Access;
use crate::store::Store;
use crate::tools::conversation_post::{InstructionSendInput, MessageSendInput, SentMessage};
use crate::tools::location_create::LocationCreateInput;
use crate::tools::organization_create::OrganizationCreateInput;
use crate::tools::{Tools, deadline as tools_deadline};

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
        let ctx = context(&request, &request.get_ref().locale)?;
        let timeout = deadline::of(&request);
        let request = request.into_inner();
        let input = MessageSendInput {
            conversation_id: request.conversation_id,
            text: request.text,
            idempotency_key: request.idempotency_key,
        };
        let written = tools_deadline::within(timeout, async {
            self.tools.ensure_writes_enabled().await?;
            self.tools
                .conversation_message_send(input, &ctx)
                .await?
                .into_data()
        })
        .await
        .map_err(write_error)?;
        let (output, replayed) = written;
        Ok(Response::new(pb::SendMessageResponse {
            message: Some(sent(output.message)),
            replayed,
        }))
    }

    async fn send_instruction(
        &self,
        request: Request<pb::SendInstructionRequest>,
    ) -> Result<Response<pb::SendInstructionResponse>, Status> {
        let ctx = context(&request, &request.get_ref().locale)?;
        let timeout = deadline::of(&request);
        let request = request.into_inner();
        let input = InstructionSendInput {
            conversation_id: request.conversation_id,
            text: request.text,
            idempotency_key: request.idempotency_key,
        };
        let (output, replayed) = tools_deadline::within(timeout, async {
            self.tools.ensure_writes_enabled().await?;
            self.tools
                .conversation_instruction_send(input, &ctx)
                .await?
                .into_data()
        })
        .await
        .map_err(write_error)?;
        Ok(Response::new(pb::SendInstructionResponse {
            message: Some(sent(output.message)),
            replayed,
        }))
    }
}

#[tonic::async_trait]
impl<S: Store, A: Access> pb::provisioning_server::Provisioning for WritesService<S, A> {
    async fn create_organization(
        &self,
        request: Request<pb::CreateOrganizationRequest>,
    ) -> Result<Response<pb::CreateOrganizationResponse>, Status> {
        let ctx = context(&request, &request.get_ref().locale)?;
        let timeout = deadline::of(&request);
        let request = request.into_inner();
        let input = OrganizationCreateInput {
            name: request.name,
            idempotency_key: request.idempotency_key,
        };
        let (output, replayed) = tools_deadline::within(timeout, async {
            self.tools.ensure_writes_enabled().await?;
            self.tools
                .organization_create(input, &ctx)
                .await?
                .into_data()
        })
        .await
        .map_err(write_error)?;
        let org = output.organization;
        Ok(Response::new(pb::CreateOrganizationResponse {
            organization: Some(pb::CreatedOrganization {
                organization_id: org.id,
                name: org.name,
                created_at: org.created_at,
            }),
            replayed,
        }))
    }

    async fn create_location(
        &self,
        request: Request<pb::CreateLocationRequest>,
    ) -> Result<Response<pb::CreateLocationResponse>, Status> {
        let ctx = context(&request, &request.get_ref().locale)?;
        let timeout = deadline::of(&request);
        let request = request.into_inner();
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
        let (output, replayed) = tools_deadline::within(timeout, async {
            self.tools.ensure_writes_enabled().await?;
            self.tools.location_create(input, &ctx).await?.into_data()
        })
        .await
        .map_err(write_error)?;
        let loc = output.location;
        Ok(Response::new(pb::CreateLocationResponse {
            location: Some(pb::CreatedLocation {
                location_id: loc.id,
                organization_id: loc.organization_id,
                name: loc.name,
                timezone: loc.timezone,
                currency: loc.currency,
                created_at: loc.created_at,
            }),
            replayed,
        }))
    }
}
