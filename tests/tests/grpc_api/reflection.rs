//! Server reflection on both backends, as grpcurl uses it: a reflection
//! client (v1 and v1alpha) lists each server's services — its own package,
//! health and reflection, nothing of the other server — and resolves the
//! file that declares a symbol, with the proto comments and without a
//! credential.

use chataigne_tests::{Backend, Sandbox};
use prost::Message;
use prost_types::FileDescriptorProto;

/// What one reflection exchange answered: the listed services, and the files
/// of `FileContainingSymbol` (or the error code when the symbol is unknown).
struct Reflected {
    services: Vec<String>,
    files: Result<Vec<FileDescriptorProto>, i32>,
}

/// A reflection client for one protocol version (the two generated modules
/// have the same shape and different types).
macro_rules! reflection_client {
    ($name:ident, $pb:path) => {
        async fn $name(url: &str, symbol: &str) -> Reflected {
            use pb::server_reflection_client::ServerReflectionClient;
            use pb::server_reflection_request::MessageRequest;
            use pb::server_reflection_response::MessageResponse;
            use $pb as pb;

            let channel = tonic::transport::Endpoint::from_shared(url.to_owned())
                .expect("valid URL")
                .connect()
                .await
                .expect("backend reachable");
            let mut client = ServerReflectionClient::new(channel);
            let requests = [
                MessageRequest::ListServices(String::new()),
                MessageRequest::FileContainingSymbol(symbol.to_owned()),
            ]
            .map(|request| pb::ServerReflectionRequest {
                host: String::new(),
                message_request: Some(request),
            });
            let mut answers = client
                .server_reflection_info(tokio_stream::iter(requests))
                .await
                .expect("reflection answers without a credential")
                .into_inner();
            let mut responses = Vec::new();
            // tonic-reflection ends the stream with a status for an unknown
            // symbol (other servers answer an `ErrorResponse`).
            let mut ended = None;
            loop {
                match answers.message().await {
                    Ok(Some(answer)) => {
                        responses.push(answer.message_response.expect("a response"))
                    }
                    Ok(None) => break,
                    Err(status) => {
                        ended = Some(status.code() as i32);
                        break;
                    }
                }
            }
            let mut services: Vec<String> = match responses.first() {
                Some(MessageResponse::ListServicesResponse(list)) => {
                    list.service.iter().map(|s| s.name.clone()).collect()
                }
                other => panic!("ListServices answered {other:?}"),
            };
            services.sort();
            let files = match (responses.get(1), ended) {
                (Some(MessageResponse::FileDescriptorResponse(files)), None) => Ok(files
                    .file_descriptor_proto
                    .iter()
                    .map(|bytes| FileDescriptorProto::decode(bytes.as_slice()).expect("a file"))
                    .collect()),
                (Some(MessageResponse::ErrorResponse(error)), _) => Err(error.error_code),
                (None, Some(code)) => Err(code),
                other => panic!("FileContainingSymbol answered {other:?}"),
            };
            Reflected { services, files }
        }
    };
}

reflection_client!(reflect_v1, tonic_reflection::pb::v1);
reflection_client!(reflect_v1alpha, tonic_reflection::pb::v1alpha);

const STANDARD: [&str; 3] = [
    "grpc.health.v1.Health",
    "grpc.reflection.v1.ServerReflection",
    "grpc.reflection.v1alpha.ServerReflection",
];

const TOOL_SERVICES: [&str; 10] = [
    "chataigne.tools.v1.Analytics",
    "chataigne.tools.v1.Catalog",
    "chataigne.tools.v1.ConversationWrites",
    "chataigne.tools.v1.Conversations",
    "chataigne.tools.v1.Customers",
    "chataigne.tools.v1.Locations",
    "chataigne.tools.v1.OrderUpdates",
    "chataigne.tools.v1.Provisioning",
    "chataigne.tools.v1.Restaurant",
    "chataigne.tools.v1.ToolCatalog",
];

fn sorted(names: impl IntoIterator<Item = impl Into<String>>) -> Vec<String> {
    let mut names: Vec<String> = names.into_iter().map(Into::into).collect();
    names.sort();
    names
}

/// The file named `name` among `files`, which must be there.
fn file<'a>(files: &'a [FileDescriptorProto], name: &str) -> &'a FileDescriptorProto {
    files.iter().find(|f| f.name() == name).unwrap_or_else(|| {
        panic!(
            "{name} in {:?}",
            files.iter().map(|f| f.name()).collect::<Vec<_>>()
        )
    })
}

/// Whether any comment of `file` contains `text` (reflection serves the
/// source comments, so grpcurl `describe` shows each RPC's scope and rules).
fn commented(file: &FileDescriptorProto, text: &str) -> bool {
    file.source_code_info
        .iter()
        .flat_map(|info| &info.location)
        .any(|location| location.leading_comments().contains(text))
}

#[tokio::test]
async fn tool_service_reflection_lists_its_services_and_resolves_symbols_in_v1_and_v1alpha() {
    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let url = sandbox.tools_grpc_url.clone();
    for (version, reflected) in [
        (
            "v1",
            reflect_v1(&url, "chataigne.tools.v1.Restaurant.ListOrganizations").await,
        ),
        (
            "v1alpha",
            reflect_v1alpha(&url, "chataigne.tools.v1.Restaurant.ListOrganizations").await,
        ),
    ] {
        assert_eq!(
            reflected.services,
            sorted(TOOL_SERVICES.iter().chain(&STANDARD).copied()),
            "{version}: the tool services, health and reflection, nothing else"
        );
        let files = reflected.files.expect("the symbol resolves");
        let restaurant = file(&files, "chataigne/tools/v1/restaurant.proto");
        assert!(
            restaurant.service.iter().any(|s| s.name() == "Restaurant"
                && s.method.iter().any(|m| m.name() == "ListOrganizations")),
            "{version}: restaurant.proto declares Restaurant.ListOrganizations"
        );
        assert!(
            commented(restaurant, "Scope: `businessOrganization.read`."),
            "{version}: the RPC's comment, with its scope, is served"
        );
    }
    // Every listed service resolves to its file, and a message type too.
    for symbol in TOOL_SERVICES
        .iter()
        .chain(&STANDARD)
        .chain(&["chataigne.tools.v1.ListOrdersRequest"])
    {
        let reflected = reflect_v1(&url, symbol).await;
        assert!(reflected.files.is_ok(), "{symbol} resolves");
    }
    sandbox.shutdown().await;
}

#[tokio::test]
async fn auth_service_reflection_lists_only_its_own_services_in_v1_and_v1alpha() {
    let sandbox = Sandbox::start(Backend::Sqlite).await.expect("sandbox");
    let url = sandbox.auth_grpc_url.clone();
    for (version, reflected) in [
        (
            "v1",
            reflect_v1(&url, "chataigne.auth.v1.AuthService").await,
        ),
        (
            "v1alpha",
            reflect_v1alpha(&url, "chataigne.auth.v1.AuthService").await,
        ),
    ] {
        assert_eq!(
            reflected.services,
            sorted(
                ["chataigne.auth.v1.AuthService"]
                    .iter()
                    .chain(&STANDARD)
                    .copied()
            ),
            "{version}: the AuthService, health and reflection"
        );
        let files = reflected.files.expect("the symbol resolves");
        let auth = file(&files, "chataigne/auth/v1/auth.proto");
        assert!(auth.service.iter().any(|s| s.name() == "AuthService"));
    }
    // The tool-service's contracts are not described by the auth-service.
    let foreign = reflect_v1(&url, "chataigne.tools.v1.Restaurant").await;
    assert_eq!(
        foreign.files.err(),
        Some(tonic::Code::NotFound as i32),
        "a symbol of another server is unknown here"
    );
    sandbox.shutdown().await;
}
