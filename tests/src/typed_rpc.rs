//! Typed gRPC calls of the tool-service by RPC name, for the tests that go
//! over every typed RPC of the contracts: the list of those RPCs from the
//! file descriptor set, the kind each runs as, a principal assertion, and one
//! unary call of any RPC with any request message.

use std::time::Duration;

use chataigne_proto::auth::v1::AuthenticateRequest;
use chataigne_proto::auth::v1::auth_service_client::AuthServiceClient;
use chataigne_tools::tools::{ToolId, ToolKind};
use prost::Message;
use prost_types::FileDescriptorSet;
use tonic::transport::Channel;

use crate::Sandbox;

const PACKAGE: &str = "chataigne.tools.v1";

/// Every typed RPC of the tool-service (`package.Service/Method`), the MCP
/// bridge `ToolCatalog` left out, read from the compiled contracts.
pub fn typed_rpcs() -> Vec<String> {
    let set = FileDescriptorSet::decode(chataigne_proto::FILE_DESCRIPTOR_SET)
        .expect("the descriptor set decodes");
    let mut rpcs = Vec::new();
    for file in set.file.iter().filter(|f| f.package() == PACKAGE) {
        for service in file.service.iter().filter(|s| s.name() != "ToolCatalog") {
            for method in &service.method {
                rpcs.push(format!("{PACKAGE}.{}/{}", service.name(), method.name()));
            }
        }
    }
    rpcs.sort();
    rpcs
}

/// Whether `rpc` reads or writes: the kind of the tool declaring it.
pub fn kind(rpc: &str) -> ToolKind {
    ToolId::ALL
        .iter()
        .map(|id| id.spec())
        .find(|spec| spec.rpc == rpc)
        .unwrap_or_else(|| panic!("{rpc} is declared by no tool"))
        .kind
}

/// The principal assertion of `token`, as the gateway would present it.
pub async fn assertion(sandbox: &Sandbox, token: &str) -> String {
    AuthServiceClient::connect(sandbox.auth_grpc_url.clone())
        .await
        .expect("auth-service reachable")
        .authenticate(AuthenticateRequest {
            access_token: token.to_owned(),
            resource: sandbox.mcp_url.clone(),
        })
        .await
        .expect("the token authenticates")
        .into_inner()
        .assertion
}

/// One call of `rpc` with `message` at the tool-service `url`, presenting
/// `credential` (none when empty) with an optional gRPC deadline; the
/// response's content is not decoded.
pub async fn unary<M: Message + Send + Sync + 'static>(
    url: &str,
    rpc: &str,
    message: M,
    credential: &str,
    timeout: Option<Duration>,
) -> Result<(), tonic::Status> {
    let channel = Channel::from_shared(url.to_owned())
        .expect("a URL")
        .connect()
        .await
        .expect("tool-service reachable");
    let mut grpc = tonic::client::Grpc::new(channel);
    grpc.ready().await.expect("channel ready");
    let mut request = tonic::Request::new(message);
    if !credential.is_empty() {
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {credential}").parse().expect("ascii"),
        );
    }
    if let Some(timeout) = timeout {
        request.set_timeout(timeout);
    }
    let path =
        tonic::codegen::http::uri::PathAndQuery::try_from(format!("/{rpc}")).expect("an RPC path");
    let codec = tonic_prost::ProstCodec::<M, ()>::default();
    grpc.unary(request, path, codec).await.map(|_| ())
}
