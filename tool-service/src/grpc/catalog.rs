//! `ToolCatalog`: lists the catalogue with its schemas and policy (and the
//! operator's write switch), and calls a tool with JSON arguments for the
//! gateway.

use std::time::{Duration, Instant};

use chataigne_common::codes::decode_status;
use chataigne_proto::tools::v1 as pb;
use tonic::{Request, Response, Status};

use super::credential::credential;
use super::status::to_status_at;
use super::{deadline, runner};
use crate::access::Access;
use crate::domain::{DomainError, Locale};
use crate::store::Store;
use crate::tools::{CallContext, CallSite, CatalogEntry, DeadlineClass, ToolId, ToolKind, Tools};

/// Longest wait for the write switch while listing the catalogue: a stalled
/// database must not hold up `tools/list`.
const SWITCH_READ_BOUND: Duration = Duration::from_millis(500);

pub struct CatalogService<S, A> {
    tools: Tools<S, A>,
    descriptors: Vec<pb::ToolDescriptor>,
}

impl<S: Store, A: Access> CatalogService<S, A> {
    pub fn new(tools: Tools<S, A>) -> Self {
        let descriptors = tools.catalog().iter().map(descriptor).collect();
        CatalogService { tools, descriptors }
    }
}

fn descriptor(entry: &CatalogEntry) -> pb::ToolDescriptor {
    let spec = entry.spec;
    let write = spec.kind == ToolKind::Write;
    pb::ToolDescriptor {
        name: spec.name.to_owned(),
        title: spec.title.to_owned(),
        description: spec.description.to_owned(),
        input_schema_json: entry.input_schema.to_string(),
        output_schema_json: entry.output_schema.to_string(),
        required_scope: spec.scope.to_owned(),
        kind: if write {
            pb::ToolKind::Write
        } else {
            pb::ToolKind::Read
        } as i32,
        deadline: match spec.deadline {
            DeadlineClass::Read => pb::DeadlineClass::Read,
            DeadlineClass::Analytics => pb::DeadlineClass::Analytics,
            DeadlineClass::Write => pb::DeadlineClass::Write,
        } as i32,
        idempotency_key_required: spec.idempotency_key_required,
        annotations: Some(pb::ToolAnnotations {
            read_only_hint: !write,
            destructive_hint: write,
            idempotent_hint: !write || spec.idempotency_key_required,
            open_world_hint: spec.open_world,
        }),
        rpc: spec.rpc.to_owned(),
        state_read_tool: crate::tools::write_read(spec)
            .unwrap_or_default()
            .to_owned(),
    }
}

#[tonic::async_trait]
impl<S: Store, A: Access> pb::tool_catalog_server::ToolCatalog for CatalogService<S, A> {
    async fn list_tools(
        &self,
        _request: Request<pb::ListToolsRequest>,
    ) -> Result<Response<pb::ListToolsResponse>, Status> {
        // The catalogue itself needs no database: when the switch cannot be
        // read in time, the listing is still served with the switch reported
        // unknown (the caller keeps the state it last knew; each write call
        // reads the switch again and fails on its own).
        let (writes_enabled, writes_switch_unknown) =
            match tokio::time::timeout(SWITCH_READ_BOUND, self.tools.writes_enabled()).await {
                Ok(Ok(enabled)) => (enabled, false),
                Ok(Err(error)) => {
                    tracing::warn!(%error, "write switch unreadable; listed as unknown");
                    (false, true)
                }
                Err(_) => {
                    tracing::warn!("write switch read timed out; listed as unknown");
                    (false, true)
                }
            };
        Ok(Response::new(pb::ListToolsResponse {
            tools: self.descriptors.clone(),
            writes_enabled,
            writes_switch_unknown,
        }))
    }

    async fn call_tool(
        &self,
        request: Request<pb::CallToolRequest>,
    ) -> Result<Response<pb::CallToolResponse>, Status> {
        let started = Instant::now();
        let presented =
            credential(&request).map_err(|error| to_status_at(error, ToolKind::Read, None))?;
        let deadline = deadline::of(&request);
        let spec = ToolId::by_name(&request.get_ref().name).map(ToolId::spec);
        let kind = spec.map_or(ToolKind::Read, |spec| spec.kind);
        deadline::starts(&request, kind);
        let call = request.into_inner();
        let class = spec.map_or(DeadlineClass::Read, |spec| spec.deadline);
        let locale = Locale::parse(&call.locale);
        let now_ms = chrono::Utc::now().timestamp_millis();
        let arguments: Option<serde_json::Value> = serde_json::from_str(&call.arguments_json).ok();
        let tools = &self.tools;
        let (name, given) = (&call.name, &arguments);
        let work = |credential| async move {
            let ctx = CallContext {
                credential,
                locale,
                now_ms,
            };
            match given {
                Some(arguments) => {
                    tools
                        .call_past_the_switch(name, arguments.clone(), &ctx)
                        .await
                }
                None => Err(DomainError::invalid("", "the arguments are not valid JSON")),
            }
        };
        let outcome = runner::bounded(&self.tools, deadline, (kind, class), presented, work).await;
        let null = serde_json::Value::Null;
        let site = spec.map(|tool| CallSite {
            tool,
            arguments: arguments.as_ref().unwrap_or(&null),
        });
        let result = outcome
            .map(|result| {
                Response::new(pb::CallToolResponse {
                    data_json: result.data_json,
                    text: result.text,
                    next_cursor: result.next_cursor.unwrap_or_default(),
                    truncated: result.truncated,
                    replayed: result.replayed,
                })
            })
            .map_err(|error| to_status_at(error, kind, site));
        let outcome_code = match &result {
            Ok(_) => "ok",
            Err(status) => decode_status(status).code.as_str(),
        };
        crate::metrics::mcp_call(spec.map(|spec| spec.name), outcome_code, started.elapsed());
        tracing::info!(
            request_id = %call.request_id,
            tool = spec.map_or("unknown", |spec| spec.name),
            outcome = outcome_code,
            latency_ms = started.elapsed().as_secs_f64() * 1000.0,
            "tool call"
        );
        result
    }
}
