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

/// A principal assertion of `token`, as the gateway would get it: good for
/// one call of the tool-service.
pub async fn assertion(sandbox: &Sandbox, token: &str) -> String {
    Minter::new(sandbox).assertion(token).await
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

/// Like [`unary`] with a deadline, over a bare HTTP/2 client that keeps no
/// timer of its own: the deadline travels as `grpc-timeout` only, so the
/// status is always the one the server answered (tonic's channel ends its
/// own calls at their `grpc-timeout` with CANCELLED, racing the server).
pub async fn unary_timed_by_the_server<M: Message + Send + Sync + 'static>(
    url: &str,
    rpc: &str,
    message: M,
    credential: &str,
    timeout: Duration,
) -> Result<(), tonic::Status> {
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .http2_only(true)
        .build_http::<tonic::body::Body>();
    let origin: tonic::codegen::http::Uri = url.parse().expect("a URL");
    let mut grpc = tonic::client::Grpc::with_origin(client, origin);
    grpc.ready().await.expect("client ready");
    let mut request = tonic::Request::new(message);
    if !credential.is_empty() {
        request.metadata_mut().insert(
            "authorization",
            format!("Bearer {credential}").parse().expect("ascii"),
        );
    }
    let micros = timeout.as_micros().max(1);
    request
        .metadata_mut()
        .insert("grpc-timeout", format!("{micros}u").parse().expect("ascii"));
    let path =
        tonic::codegen::http::uri::PathAndQuery::try_from(format!("/{rpc}")).expect("an RPC path");
    let codec = tonic_prost::ProstCodec::<M, ()>::default();
    grpc.unary(request, path, codec).await.map(|_| ())
}

/// Mints principal assertions as the gateway does, one per call, for tests
/// that hold a token and call the tool-service directly many times.
#[derive(Clone)]
pub struct Minter {
    auth_grpc_url: String,
    resource: String,
    credential: secrecy::SecretString,
}

impl Minter {
    pub fn new(sandbox: &Sandbox) -> Minter {
        Minter {
            auth_grpc_url: sandbox.auth_grpc_url.clone(),
            resource: sandbox.mcp_url.clone(),
            credential: sandbox.gateway_credential.clone(),
        }
    }

    /// A new assertion of `token`, good for one call.
    pub async fn assertion(&self, token: &str) -> String {
        self.assertion_for(token, None).await
    }

    /// A new assertion of `token` for one call lasting at most `valid_for`
    /// (`None`: the auth-service's bound alone).
    pub async fn assertion_for(&self, token: &str, valid_for: Option<Duration>) -> String {
        let valid_for_ms = valid_for.map_or(0, |d| i64::try_from(d.as_millis()).expect("short"));
        let mut request = tonic::Request::new(AuthenticateRequest {
            access_token: token.to_owned(),
            resource: self.resource.clone(),
            valid_for_ms,
        });
        request.metadata_mut().insert(
            chataigne_common::assertion::AssertionContract::CALLER_METADATA,
            secrecy::ExposeSecret::expose_secret(&self.credential)
                .parse()
                .expect("ascii"),
        );
        AuthServiceClient::connect(self.auth_grpc_url.clone())
            .await
            .expect("auth-service reachable")
            .authenticate(request)
            .await
            .expect("the token authenticates")
            .into_inner()
            .assertion
    }
}
