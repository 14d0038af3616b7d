//! `ToolCatalog`: lists the catalogue with its schemas and policy, the views
//! that show the tools' results (MCP Apps resources) and the operator's write
//! switch, and calls a tool with JSON arguments for the gateway. Both run
//! through the runner: the call with the caller's credential, the listing as
//! its one public RPC (the same catalogue for every caller, no credential
//! read) with the same deadline, admission and error mapping.

use std::time::{Duration, Instant};

use chataigne_proto::tools::v1 as pb;
use tonic::{Request, Response, Status};

use super::credential::credential;
use super::status::to_status_at;
use super::{deadline, runner};
use crate::access::Access;
use crate::domain::{DomainError, Locale};
use crate::store::Store;
use crate::tools::deadline as tools_deadline;
use crate::tools::{
    CallContext, CallSite, CatalogEntry, DeadlineClass, ToolId, ToolKind, Tools, views,
};

/// Longest wait for the write switch while listing the catalogue: a stalled
/// database must not hold up `tools/list`.
const SWITCH_READ_BOUND: Duration = Duration::from_millis(500);

/// How long the listing waits for the write switch: [`SWITCH_READ_BOUND`],
/// and at most half of what remains of the caller's deadline, so that the
/// catalogue is still answered in time when the switch is not.
fn switch_read_bound(remaining: Option<Duration>) -> Duration {
    remaining.map_or(SWITCH_READ_BOUND, |left| SWITCH_READ_BOUND.min(left / 2))
}

pub struct CatalogService<S, A> {
    tools: Tools<S, A>,
    descriptors: Vec<pb::ToolDescriptor>,
    resources: Vec<pb::ResourceDescriptor>,
}

impl<S: Store, A: Access> CatalogService<S, A> {
    pub fn new(tools: Tools<S, A>) -> Self {
        let descriptors = tools.catalog().iter().map(descriptor).collect();
        let resources = views::build(tools.catalog().iter().filter_map(|e| e.spec.facts.view))
            .into_iter()
            .map(resource)
            .collect();
        CatalogService {
            tools,
            descriptors,
            resources,
        }
    }
}

fn resource(view: views::BuiltView) -> pb::ResourceDescriptor {
    pb::ResourceDescriptor {
        uri: view.uri.to_owned(),
        name: view.name.to_owned(),
        title: view.title.to_owned(),
        description: view.description.to_owned(),
        mime_type: view.mime_type.to_owned(),
        text: view.text,
        meta_json: view.meta.to_string(),
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
        view_uri: spec
            .facts
            .view
            .map(|view| view.uri.to_owned())
            .unwrap_or_default(),
    }
}

#[tonic::async_trait]
impl<S: Store, A: Access> pb::tool_catalog_server::ToolCatalog for CatalogService<S, A> {
    async fn list_tools(
        &self,
        request: Request<pb::ListToolsRequest>,
    ) -> Result<Response<pb::ListToolsResponse>, Status> {
        let timeout = deadline::of(&request);
        let tools = &self.tools;
        let listed = runner::public(tools, timeout, DeadlineClass::Read, || async {
            // The catalogue itself needs no database: when the switch cannot
            // be read in time, the listing is still served with the switch
            // reported unknown (the caller keeps the state it last knew; each
            // write call reads the switch again and fails on its own).
            let bound = switch_read_bound(tools_deadline::remaining());
            let (writes_enabled, writes_switch_unknown) =
                match tokio::time::timeout(bound, tools.writes_enabled()).await {
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
            Ok(pb::ListToolsResponse {
                tools: self.descriptors.clone(),
                writes_enabled,
                writes_switch_unknown,
                instructions: crate::tools::INSTRUCTIONS.to_owned(),
                error_codes: super::domain_codes::descriptors(),
                resources: self.resources.clone(),
            })
        })
        .await;
        listed
            .map(Response::new)
            .map_err(|error| to_status_at(error, ToolKind::Read, None))
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
        // The one parse of the arguments on this hop: validated, read into
        // the tool's input and named in error messages from this value.
        let mut arguments: Option<serde_json::Value> =
            serde_json::from_str(&call.arguments_json).ok();
        let tools = &self.tools;
        let (name, given) = (&call.name, &mut arguments);
        let work = |credential| async move {
            let ctx = CallContext {
                credential,
                locale,
                now_ms,
            };
            match given {
                Some(arguments) => tools.call_past_the_switch(name, arguments, &ctx).await,
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
            Err(status) => super::domain_codes::label(status),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_switch_is_waited_for_within_half_of_the_deadline_left() {
        assert_eq!(switch_read_bound(None), SWITCH_READ_BOUND);
        assert_eq!(
            switch_read_bound(Some(Duration::from_secs(5))),
            SWITCH_READ_BOUND
        );
        assert_eq!(
            switch_read_bound(Some(Duration::from_millis(300))),
            Duration::from_millis(150)
        );
    }
}
