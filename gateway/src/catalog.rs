//! The tool catalogue of the tool-service, cached for a TTL in one shared
//! snapshot: each tool's MCP listing is serialized once per fill, and the
//! policy the gateway enforces (scope, write class, deadline) sits beside it,
//! with the tool-service's run-time write switch as it was at the fetch.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use chataigne_common::balance::Balanced;
use chataigne_proto::tools::v1::{
    self as pb, ListToolsRequest, tool_catalog_client::ToolCatalogClient,
};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::config::Profile;

/// Which deadline applies to a call, and which timeout code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineClass {
    Read,
    Analytics,
    Write,
}

/// One tool as the gateway needs it.
#[derive(Debug)]
pub struct Tool {
    pub name: String,
    pub required_scope: String,
    /// Whether it changes state (hidden when writes are disabled).
    pub write: bool,
    pub deadline: DeadlineClass,
    /// Takes an `idempotency_key` (replay cache and in-progress lock apply).
    pub idempotent: bool,
    /// The MCP `Tool` object of `tools/list`, pre-serialized.
    pub listing: Box<RawValue>,
    /// The entry of the Connected Apps profile: no `outputSchema` (its
    /// results carry the payload as text, not as `structuredContent`, and a
    /// listed output schema would oblige clients to expect structured
    /// content), and an input schema within the function-declaration subset
    /// of its models, which has no `additionalProperties` (unknown arguments
    /// are still refused by the tool-service's validation).
    pub listing_for_platform: Box<RawValue>,
}

impl Tool {
    /// The `tools/list` entry for `profile`.
    pub fn listing(&self, profile: Profile) -> &RawValue {
        match profile {
            Profile::Default => &self.listing,
            Profile::Google => &self.listing_for_platform,
        }
    }
}

/// The catalogue as fetched at one moment.
#[derive(Debug)]
pub struct Snapshot {
    tools: Vec<Tool>,
    by_name: HashMap<String, usize>,
    /// The operator's write switch at the fetch (a listing hint only: the
    /// tool-service reads it again on every write call).
    writes_enabled: bool,
    fetched_at: Instant,
}

impl Snapshot {
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).and_then(|&i| self.tools.get(i))
    }

    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.tools.iter()
    }

    /// Whether the tool-service's run-time write switch was on at the fetch.
    pub fn writes_enabled(&self) -> bool {
        self.writes_enabled
    }

    /// Builds a snapshot from a `ListTools` answer.
    pub fn from_response(response: pb::ListToolsResponse) -> Snapshot {
        let mut snapshot = Snapshot::from_descriptors(response.tools);
        snapshot.writes_enabled = response.writes_enabled;
        snapshot
    }

    /// Builds a snapshot (writes enabled), leaving out (and logging) tools
    /// with unusable schemas.
    pub fn from_descriptors(descriptors: Vec<pb::ToolDescriptor>) -> Snapshot {
        let mut tools = Vec::with_capacity(descriptors.len());
        let mut by_name = HashMap::new();
        for descriptor in descriptors {
            match tool(descriptor) {
                Ok(tool) => {
                    if by_name.contains_key(&tool.name) {
                        tracing::warn!(tool = %tool.name, "duplicate tool left out of the catalogue");
                        continue;
                    }
                    by_name.insert(tool.name.clone(), tools.len());
                    tools.push(tool);
                }
                Err((name, why)) => {
                    tracing::warn!(tool = %name, why, "tool left out of the catalogue");
                }
            }
        }
        Snapshot {
            tools,
            by_name,
            writes_enabled: true,
            fetched_at: Instant::now(),
        }
    }
}

fn parse_schema(json: &str) -> Option<Map<String, Value>> {
    match serde_json::from_str(json) {
        Ok(Value::Object(schema)) => Some(schema),
        _ => None,
    }
}

fn tool(descriptor: pb::ToolDescriptor) -> Result<Tool, (String, &'static str)> {
    let name = descriptor.name.clone();
    if name.is_empty() {
        return Err((name, "empty name"));
    }
    let input_schema = parse_schema(&descriptor.input_schema_json)
        .ok_or_else(|| (name.clone(), "input schema is not a JSON object"))?;
    let output_schema = if descriptor.output_schema_json.trim().is_empty() {
        None
    } else {
        Some(
            parse_schema(&descriptor.output_schema_json)
                .ok_or_else(|| (name.clone(), "output schema is not a JSON object"))?,
        )
    };
    // An unspecified kind is treated as a write: the cautious reading.
    let write = descriptor.kind != pb::ToolKind::Read as i32;
    let deadline = match pb::DeadlineClass::try_from(descriptor.deadline) {
        Ok(pb::DeadlineClass::Read) => DeadlineClass::Read,
        Ok(pb::DeadlineClass::Analytics) => DeadlineClass::Analytics,
        Ok(pb::DeadlineClass::Write) => DeadlineClass::Write,
        Ok(pb::DeadlineClass::Unspecified) | Err(_) if write => DeadlineClass::Write,
        Ok(pb::DeadlineClass::Unspecified) | Err(_) => DeadlineClass::Read,
    };
    let hints = descriptor.annotations.unwrap_or(pb::ToolAnnotations {
        read_only_hint: !write,
        destructive_hint: write,
        idempotent_hint: !write,
        open_world_hint: false,
    });
    let mut annotations = Map::new();
    if !descriptor.title.is_empty() {
        annotations.insert("title".into(), json!(descriptor.title));
    }
    annotations.insert("readOnlyHint".into(), json!(hints.read_only_hint));
    annotations.insert("destructiveHint".into(), json!(hints.destructive_hint));
    annotations.insert("idempotentHint".into(), json!(hints.idempotent_hint));
    annotations.insert("openWorldHint".into(), json!(hints.open_world_hint));
    let mut listing = Map::new();
    listing.insert("name".into(), json!(name));
    if !descriptor.title.is_empty() {
        listing.insert("title".into(), json!(descriptor.title));
    }
    listing.insert("description".into(), json!(descriptor.description));
    listing.insert("inputSchema".into(), Value::Object(input_schema));
    if let Some(schema) = output_schema {
        listing.insert("outputSchema".into(), Value::Object(schema));
    }
    listing.insert("annotations".into(), Value::Object(annotations));
    let serialize = |listing: &Map<String, Value>| {
        serde_json::value::to_raw_value(listing)
            .map_err(|_| (name.clone(), "listing does not serialize"))
    };
    let full = serialize(&listing)?;
    listing.remove("outputSchema");
    if let Some(Value::Object(input)) = listing.get_mut("inputSchema") {
        input.remove("additionalProperties");
    }
    let listing_for_platform = serialize(&listing)?;
    Ok(Tool {
        name,
        required_scope: descriptor.required_scope,
        write,
        deadline,
        idempotent: descriptor.idempotency_key_required,
        listing: full,
        listing_for_platform,
    })
}

/// The shared, TTL-bounded cache of the catalogue.
pub struct Catalog {
    client: ToolCatalogClient<Balanced>,
    ttl: Duration,
    fetch_timeout: Duration,
    current: RwLock<Option<Arc<Snapshot>>>,
    /// Held by the one request refreshing an expired snapshot.
    refreshing: tokio::sync::Mutex<()>,
}

impl Catalog {
    pub fn new(
        client: ToolCatalogClient<Balanced>,
        ttl: Duration,
        fetch_timeout: Duration,
    ) -> Self {
        Catalog {
            client,
            ttl,
            fetch_timeout,
            current: RwLock::new(None),
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    fn fresh(&self) -> Option<Arc<Snapshot>> {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        current
            .as_ref()
            .filter(|s| s.fetched_at.elapsed() < self.ttl)
            .cloned()
    }

    /// The current snapshot, fetched again when expired; concurrent callers
    /// wait for a single fetch.
    pub async fn snapshot(&self) -> Result<Arc<Snapshot>, tonic::Status> {
        if let Some(snapshot) = self.fresh() {
            return Ok(snapshot);
        }
        let _guard = self.refreshing.lock().await;
        if let Some(snapshot) = self.fresh() {
            return Ok(snapshot);
        }
        let mut request = tonic::Request::new(ListToolsRequest {});
        request.set_timeout(self.fetch_timeout);
        chataigne_common::trace_context::inject(request.metadata_mut());
        let mut client = self.client.clone();
        let response = tokio::time::timeout(self.fetch_timeout, client.list_tools(request))
            .await
            .map_err(|_| tonic::Status::deadline_exceeded("tool catalogue fetch timed out"))??;
        let snapshot = Arc::new(Snapshot::from_response(response.into_inner()));
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Some(snapshot.clone());
        Ok(snapshot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn descriptor(name: &str, input: &str) -> pb::ToolDescriptor {
        pb::ToolDescriptor {
            name: name.into(),
            title: "A title".into(),
            input_schema_json: input.into(),
            kind: pb::ToolKind::Read as i32,
            deadline: pb::DeadlineClass::Analytics as i32,
            ..Default::default()
        }
    }

    #[test]
    fn listings_are_built_once_and_bad_schemas_left_out() {
        let snapshot = Snapshot::from_descriptors(vec![
            descriptor("good", r#"{"type":"object"}"#),
            descriptor("bad", "not json"),
        ]);
        assert!(snapshot.get("bad").is_none());
        let good = snapshot.get("good").unwrap();
        assert_eq!(good.deadline, DeadlineClass::Analytics);
        assert!(!good.write);
        let listing: Value = serde_json::from_str(good.listing.get()).unwrap();
        assert_eq!(listing["inputSchema"]["type"], "object");
        assert_eq!(listing["annotations"]["readOnlyHint"], true);
        assert_eq!(listing["annotations"]["destructiveHint"], false);
        assert!(listing.get("outputSchema").is_none());
    }

    #[test]
    fn the_platform_listing_has_no_output_schema_and_no_additional_properties() {
        let mut described = descriptor(
            "good",
            r#"{"type":"object","additionalProperties":false,"properties":{}}"#,
        );
        described.output_schema_json = r#"{"type":"object"}"#.into();
        let snapshot = Snapshot::from_descriptors(vec![described]);
        let tool = snapshot.get("good").unwrap();
        let full: Value = serde_json::from_str(tool.listing(Profile::Default).get()).unwrap();
        assert_eq!(full["inputSchema"]["additionalProperties"], false);
        assert_eq!(full["outputSchema"]["type"], "object");
        let platform: Value = serde_json::from_str(tool.listing(Profile::Google).get()).unwrap();
        assert!(platform.get("outputSchema").is_none());
        assert!(
            platform["inputSchema"]
                .get("additionalProperties")
                .is_none()
        );
        assert_eq!(platform["inputSchema"]["type"], "object");
    }

    #[test]
    fn the_write_switch_travels_with_the_listing() {
        let descriptors = vec![descriptor("good", r#"{"type":"object"}"#)];
        let off = Snapshot::from_response(pb::ListToolsResponse {
            tools: descriptors.clone(),
            writes_enabled: false,
        });
        assert!(!off.writes_enabled());
        assert!(off.get("good").is_some());
        let on = Snapshot::from_response(pb::ListToolsResponse {
            tools: descriptors,
            writes_enabled: true,
        });
        assert!(on.writes_enabled());
    }
}
