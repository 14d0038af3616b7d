//! What the load generator calls: an MCP `tools/call` POST over a pooled
//! keep-alive HTTP client (full stack, bare HTTP ceiling, Python peer), or
//! `ToolCatalog.CallTool` over one gRPC channel with a new principal
//! assertion for each call (the tool-service called directly, as the gateway
//! does: `Authenticate`, then the call).

use serde::{Deserialize, Serialize};

use crate::drive::Driven;
use std::time::Duration;

use anyhow::Context;
use axum::body::Bytes;
use chataigne_proto::auth::v1::AuthenticateRequest;
use chataigne_proto::auth::v1::auth_service_client::AuthServiceClient;
use chataigne_proto::tools::v1::CallToolRequest;
use chataigne_proto::tools::v1::tool_catalog_client::ToolCatalogClient;
use serde_json::{Value, json};
use tonic::metadata::{AsciiMetadataValue, MetadataValue};
use tonic::transport::{Channel, Endpoint};

/// The MCP protocol revision the benchmark speaks.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// A tool and how to build the arguments of call `n`: `template`, with the
/// `rotate` argument taking its values in turn (e.g. writes spread over many
/// conversations) and, for writes, an `idempotency_key` that no other call
/// of any measurement or run has used (`keys` prefix + `n`). Plain data, so
/// the load generator can run in a process of its own.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ToolCall {
    pub name: String,
    pub template: Value,
    pub rotate: Option<(String, Vec<String>)>,
    /// Prefix of the idempotency keys; `None`: the tool takes none.
    pub keys: Option<String>,
}

impl ToolCall {
    /// A call whose arguments are always `arguments`.
    pub fn fixed(name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            name: name.to_owned(),
            template: arguments,
            rotate: None,
            keys: None,
        }
    }

    /// Whether every call's arguments are the same (bodies are then built once).
    pub fn is_fixed(&self) -> bool {
        self.keys.is_none()
            && self
                .rotate
                .as_ref()
                .is_none_or(|(_, values)| values.len() < 2)
    }

    /// The same call with keys of their own: `measurement` distinguishes
    /// this measurement's keys from every other's.
    pub fn for_measurement(&self, measurement: u64) -> ToolCall {
        let mut call = self.clone();
        if let Some(prefix) = &mut call.keys {
            *prefix = format!("{prefix}-m{measurement}");
        }
        call
    }

    /// The arguments of call `n`.
    pub fn arguments(&self, n: u64) -> Value {
        let mut arguments = self.template.clone();
        if let (Some((field, values)), Some(object)) = (&self.rotate, arguments.as_object_mut())
            && !values.is_empty()
        {
            let value = &values[usize::try_from(n).unwrap_or(0) % values.len()];
            object.insert(field.clone(), json!(value));
        }
        if let (Some(prefix), Some(object)) = (&self.keys, arguments.as_object_mut()) {
            object.insert("idempotency_key".into(), json!(format!("{prefix}-{n:012}")));
        }
        arguments
    }

    fn message(&self, n: u64) -> Value {
        json!({
            "jsonrpc": "2.0",
            "id": n,
            "method": "tools/call",
            "params": {"name": self.name, "arguments": self.arguments(n)},
        })
    }

    /// The JSON-RPC request body of call `n`.
    pub fn body(&self, n: u64) -> Bytes {
        Bytes::from(self.message(n).to_string())
    }
}

/// An MCP endpoint reached over HTTP/1.1 keep-alive connections.
#[derive(Clone)]
pub struct McpHttp {
    client: reqwest::Client,
    url: String,
    token: Option<String>,
    bearer: Option<String>,
    call: ToolCall,
    fixed_body: Option<Bytes>,
}

/// A client pooling up to `connections` keep-alive connections per host.
pub fn http_client(connections: usize) -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .pool_max_idle_per_host(connections)
        .pool_idle_timeout(Duration::from_secs(90))
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(30))
        .no_proxy()
        .build()
        .context("building the HTTP client")
}

impl McpHttp {
    pub fn new(
        client: reqwest::Client,
        url: &str,
        bearer: Option<&str>,
        call: ToolCall,
    ) -> McpHttp {
        let fixed_body = call.is_fixed().then(|| call.body(1));
        McpHttp {
            client,
            url: url.to_owned(),
            token: bearer.map(str::to_owned),
            bearer: bearer.map(|token| format!("Bearer {token}")),
            call,
            fixed_body,
        }
    }

    async fn send(&self, n: u64) -> reqwest::Result<reqwest::Response> {
        let body = match &self.fixed_body {
            Some(body) => body.clone(),
            None => self.call.body(n),
        };
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", PROTOCOL_VERSION)
            .body(body);
        if let Some(bearer) = &self.bearer {
            request = request.header("authorization", bearer);
        }
        request.send().await
    }

    /// This target as a load driver calls it.
    pub fn driven(&self) -> Driven {
        Driven::Http {
            url: self.url.clone(),
            bearer: self.token.clone(),
            call: self.call.clone(),
        }
    }

    /// One call; true when it is a successful tool result.
    pub async fn call(&self, n: u64) -> bool {
        match self.send(n).await {
            Ok(response) if response.status().is_success() => match response.bytes().await {
                Ok(body) => successful_result(&body),
                Err(_) => false,
            },
            _ => false,
        }
    }

    /// One call, returning the whole response body (for checks and sizes).
    pub async fn probe(&self) -> anyhow::Result<Bytes> {
        let response = self.send(0).await.context("sending a probe request")?;
        let status = response.status();
        let body = response.bytes().await.context("reading the probe answer")?;
        anyhow::ensure!(
            status.is_success() && successful_result(&body),
            "{} answered {status}: {}",
            self.url,
            String::from_utf8_lossy(&body[..body.len().min(400)])
        );
        Ok(body)
    }
}

/// Whether an MCP response body is a successful `tools/call` result (not a
/// JSON-RPC error, not an `isError` result), without parsing it.
pub fn successful_result(body: &[u8]) -> bool {
    let has = |needle: &[u8]| body.windows(needle.len()).any(|w| w == needle);
    has(b"\"result\"") && !has(b"\"isError\":true") && !has(b"\"isError\": true")
}

/// The tool-service's `ToolCatalog` called directly as the gateway does
/// (without HTTP and MCP): a principal assertion for each call (an assertion
/// is good for one call), then `CallTool`, over one channel to each service.
#[derive(Clone)]
pub struct DirectGrpc {
    /// What it was connected with, for a load driver to connect the same way.
    driven: Driven,
    client: ToolCatalogClient<Channel>,
    auth: AuthServiceClient<Channel>,
    token: String,
    resource: String,
    credential: AsciiMetadataValue,
    call: ToolCall,
    fixed_arguments: Option<String>,
}

/// Exchanges `token` for a principal assertion, as the gateway does,
/// presenting the gateway's `credential`.
pub async fn assertion_for(
    auth: &mut AuthServiceClient<Channel>,
    token: &str,
    resource: &str,
    credential: &AsciiMetadataValue,
) -> Result<AsciiMetadataValue, tonic::Status> {
    let mut request = tonic::Request::new(AuthenticateRequest {
        access_token: token.to_owned(),
        resource: resource.to_owned(),
        valid_for_ms: 15_000,
    });
    request.metadata_mut().insert(
        chataigne_common::assertion::AssertionContract::CALLER_METADATA,
        credential.clone(),
    );
    let response = auth.authenticate(request).await?.into_inner();
    MetadataValue::try_from(format!("Bearer {}", response.assertion))
        .map_err(|_| tonic::Status::internal("assertion is not a metadata value"))
}

fn channel(url: &str) -> anyhow::Result<Channel> {
    Ok(Endpoint::from_shared(url.to_owned())?
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(3))
        .connect_lazy())
}

impl DirectGrpc {
    /// Connects to both services; the first assertion is checked here.
    pub async fn connect(
        tools_url: &str,
        auth_url: &str,
        token: &str,
        resource: &str,
        credential: &str,
        call: ToolCall,
    ) -> anyhow::Result<DirectGrpc> {
        let mut auth = AuthServiceClient::new(channel(auth_url)?);
        let credential_value = AsciiMetadataValue::try_from(credential)
            .context("the gateway credential is not a metadata value")?;
        assertion_for(&mut auth, token, resource, &credential_value)
            .await
            .context("AuthService.Authenticate")?;
        let driven = Driven::Grpc {
            tools_url: tools_url.to_owned(),
            auth_url: auth_url.to_owned(),
            token: token.to_owned(),
            resource: resource.to_owned(),
            credential: credential.to_owned(),
            call: call.clone(),
        };
        let fixed_arguments = call.is_fixed().then(|| call.arguments(0).to_string());
        Ok(DirectGrpc {
            driven,
            client: ToolCatalogClient::new(channel(tools_url)?),
            auth,
            token: token.to_owned(),
            resource: resource.to_owned(),
            credential: credential_value,
            call,
            fixed_arguments,
        })
    }

    async fn send(&self, n: u64) -> Result<String, tonic::Status> {
        let arguments_json = match &self.fixed_arguments {
            Some(arguments) => arguments.clone(),
            None => self.call.arguments(n).to_string(),
        };
        let mut request = tonic::Request::new(CallToolRequest {
            name: self.call.name.clone(),
            arguments_json,
            request_id: format!("bench-{n}"),
            locale: String::new(),
        });
        let assertion = assertion_for(
            &mut self.auth.clone(),
            &self.token,
            &self.resource,
            &self.credential,
        )
        .await?;
        request.metadata_mut().insert("authorization", assertion);
        request.set_timeout(Duration::from_secs(15));
        let response = self.client.clone().call_tool(request).await?;
        Ok(response.into_inner().data_json)
    }

    pub async fn call(&self, n: u64) -> bool {
        self.send(n).await.is_ok()
    }

    /// This target as a load driver calls it.
    pub fn driven(&self) -> Driven {
        self.driven.clone()
    }

    /// One call; the `data` JSON on success.
    pub async fn probe(&self) -> anyhow::Result<String> {
        self.send(0)
            .await
            .map_err(|status| anyhow::anyhow!("CallTool failed: {status:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_rotate_their_target_and_never_reuse_a_key() {
        let call = ToolCall {
            name: "send".into(),
            template: json!({"text": "hi"}),
            rotate: Some(("conversation_id".into(), vec!["c1".into(), "c2".into()])),
            keys: Some("bench-run".into()),
        };
        assert!(!call.is_fixed());
        let first = call.for_measurement(1);
        let second = call.for_measurement(2);
        assert_eq!(first.arguments(0)["conversation_id"], "c1");
        assert_eq!(first.arguments(1)["conversation_id"], "c2");
        assert_ne!(
            first.arguments(5)["idempotency_key"],
            second.arguments(5)["idempotency_key"]
        );
        assert_ne!(
            first.arguments(5)["idempotency_key"],
            first.arguments(6)["idempotency_key"]
        );
        assert!(ToolCall::fixed("read", json!({"limit": 20})).is_fixed());
    }

    #[test]
    fn results_errors_and_error_results_are_told_apart() {
        assert!(successful_result(
            br#"{"jsonrpc":"2.0","id":1,"result":{"isError":false}}"#
        ));
        assert!(!successful_result(
            br#"{"jsonrpc":"2.0","id":1,"result":{"isError":true}}"#
        ));
        assert!(!successful_result(
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602}}"#
        ));
    }
}
