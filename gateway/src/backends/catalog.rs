//! The tool catalogue of the tool-service, cached for a TTL in one shared
//! snapshot: each tool's MCP listing is serialized once per fill, and the
//! policy the gateway enforces (scope, write class, deadline) sits beside it,
//! with the tool-service's run-time write switch as last read; so are the
//! catalogue's resources (the views some tools link), listing and contents
//! serialized once. A failed
//! refresh keeps the last snapshot and is retried within a second.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::time::Instant;

use chataigne_common::ErrorCode;
use chataigne_common::balance::Balanced;
use chataigne_proto::tools::v1::{
    self as pb, ListToolsRequest, tool_catalog_client::ToolCatalogClient,
};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use crate::config::Profile;
use crate::ops::breaker::Breaker;

/// Which deadline applies to a call, and which timeout code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineClass {
    Read,
    Analytics,
    Write,
}

/// JSON type of an argument mirrored in a header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    String,
    Integer,
    Boolean,
}

/// A top-level argument the tool's input schema marks with `x-mcp-header`:
/// clients of revisions that mirror arguments send it as
/// `Mcp-Param-{header}`, and the gateway checks the two agree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    pub property: String,
    pub header: String,
    pub kind: ParamKind,
}

/// The schema keyword naming an argument's mirrored header.
pub const HEADER_ANNOTATION: &str = "x-mcp-header";

/// One tool as the gateway needs it.
#[derive(Debug)]
pub struct Tool {
    pub name: String,
    pub required_scope: String,
    /// Whether it changes state (hidden when writes are disabled).
    pub write: bool,
    pub deadline: DeadlineClass,
    /// Takes an `idempotency_key` (the tool-service answers retries from its record).
    pub idempotent: bool,
    /// For a write, the read tool the tool-service names as showing the
    /// state it changes (cited when its outcome is unknown).
    pub state_read_tool: Option<String>,
    /// The resource that shows its results (listed as
    /// `_meta.ui.resourceUri`), if any.
    pub view_uri: Option<String>,
    /// The MCP `Tool` object of `tools/list`, pre-serialized.
    pub listing: Box<RawValue>,
    /// The entry of the Connected Apps profile: no `outputSchema` (its
    /// results carry the payload as text, not as `structuredContent`, and a
    /// listed output schema would oblige clients to expect structured
    /// content), and an input schema within the function-declaration subset
    /// of its models, which has no `additionalProperties` (unknown arguments
    /// are still refused by the tool-service's validation).
    pub listing_for_platform: Box<RawValue>,
    /// Both listings with the `x-mcp-header` annotations, for revisions that
    /// mirror arguments in headers (`None`: the tool has none, the plain
    /// listings serve).
    pub annotated: Option<[Box<RawValue>; 2]>,
    /// The arguments mirrored in headers.
    pub header_params: Vec<HeaderParam>,
}

impl Tool {
    /// The `tools/list` entry for `profile`, with the header annotations or
    /// without.
    pub fn listing(&self, profile: Profile, annotated: bool) -> &RawValue {
        match (profile, self.annotated.as_ref().filter(|_| annotated)) {
            (Profile::Default, None) => &self.listing,
            (Profile::Google, None) => &self.listing_for_platform,
            (Profile::Default, Some([full, _])) => full,
            (Profile::Google, Some([_, platform])) => platform,
        }
    }
}

/// Whether `name` is a valid header-name token (RFC 9110 `tchar`s).
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// Takes the `x-mcp-header` annotations out of the top-level properties of
/// `schema` and returns them; an annotation that breaks the revision's rules
/// (not a token, on a type other than string, integer or boolean, repeated
/// case-insensitively) is dropped with a warning, as a client would.
fn take_header_params(tool: &str, schema: &mut Map<String, Value>) -> Vec<HeaderParam> {
    let mut params: Vec<HeaderParam> = Vec::new();
    let Some(Value::Object(properties)) = schema.get_mut("properties") else {
        return params;
    };
    for (property, definition) in properties.iter_mut() {
        let Some(definition) = definition.as_object_mut() else {
            continue;
        };
        let Some(annotation) = definition.remove(HEADER_ANNOTATION) else {
            continue;
        };
        let kind = match definition.get("type").and_then(Value::as_str) {
            Some("string") => Some(ParamKind::String),
            Some("integer") => Some(ParamKind::Integer),
            Some("boolean") => Some(ParamKind::Boolean),
            _ => None,
        };
        let header = annotation.as_str().filter(|name| is_token(name));
        match (header, kind) {
            (Some(header), Some(kind)) => params.push(HeaderParam {
                property: property.clone(),
                header: header.to_owned(),
                kind,
            }),
            _ => {
                tracing::warn!(tool, property = %property, "invalid x-mcp-header annotation dropped")
            }
        }
    }
    // A header named twice (case-insensitively) mirrors neither property.
    let names: Vec<String> = params
        .iter()
        .map(|p| p.header.to_ascii_lowercase())
        .collect();
    params.retain(|param| {
        let name = param.header.to_ascii_lowercase();
        let unique = names.iter().filter(|n| **n == name).count() == 1;
        if !unique {
            tracing::warn!(tool, property = %param.property, "repeated x-mcp-header annotation dropped");
        }
        unique
    });
    params
}

/// `schema` with the annotations of `params` put back.
fn annotate(schema: &mut Value, params: &[HeaderParam]) {
    for param in params {
        if let Some(Value::Object(definition)) = schema
            .get_mut("properties")
            .and_then(|properties| properties.get_mut(&param.property))
        {
            definition.insert(HEADER_ANNOTATION.into(), json!(param.header));
        }
    }
}

/// One resource of the catalogue (a view some tools link): shown to
/// whoever may see one of those tools.
#[derive(Debug)]
pub struct Resource {
    pub uri: String,
    /// The `resources/list` entry, pre-serialized.
    pub listing: Box<RawValue>,
    /// The one entry of a `resources/read` result's `contents`,
    /// pre-serialized.
    pub contents: Box<RawValue>,
}

/// The catalogue as fetched at one moment.
#[derive(Debug)]
pub struct Snapshot {
    tools: Vec<Tool>,
    by_name: HashMap<String, usize>,
    resources: Vec<Resource>,
    /// The operator's write switch at the fetch (a listing hint only: the
    /// tool-service reads it again on every write call).
    writes_enabled: bool,
    /// The server instructions the catalogue gives (empty: none).
    instructions: String,
    /// The domain's own error codes, each with the shared code it behaves as.
    error_codes: HashMap<String, (Arc<str>, ErrorCode)>,
}

impl Snapshot {
    pub fn get(&self, name: &str) -> Option<&Tool> {
        self.by_name.get(name).and_then(|&i| self.tools.get(i))
    }

    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.tools.iter()
    }

    pub fn resources(&self) -> impl Iterator<Item = &Resource> {
        self.resources.iter()
    }

    /// Whether the tool-service's run-time write switch was on at the fetch.
    pub fn writes_enabled(&self) -> bool {
        self.writes_enabled
    }

    /// The server instructions, if the catalogue gives any.
    pub fn instructions(&self) -> Option<&str> {
        Some(self.instructions.as_str()).filter(|text| !text.is_empty())
    }

    /// The name and the shared code of `reason`, when it is one of the
    /// catalogue's domain codes (for `decode_status_with`).
    pub fn error_code(&self, reason: &str) -> Option<(Arc<str>, ErrorCode)> {
        self.error_codes.get(reason).cloned()
    }

    /// Builds a snapshot from a `ListTools` answer. A domain code that
    /// behaves as no shared code is left out (and logged): its failures are
    /// then internal errors.
    pub fn from_response(response: pb::ListToolsResponse) -> Snapshot {
        let mut snapshot = Snapshot::from_descriptors(response.tools);
        snapshot.writes_enabled = response.writes_enabled;
        snapshot.instructions = response.instructions;
        for descriptor in response.error_codes {
            match ErrorCode::parse(&descriptor.behaves_as) {
                Some(code) if ErrorCode::parse(&descriptor.code).is_none() => {
                    let name: Arc<str> = Arc::from(descriptor.code.as_str());
                    snapshot.error_codes.insert(descriptor.code, (name, code));
                }
                _ => tracing::warn!(
                    code = %descriptor.code,
                    behaves_as = %descriptor.behaves_as,
                    "domain error code left out of the catalogue"
                ),
            }
        }
        for descriptor in response.resources {
            match resource(descriptor) {
                Ok(resource) if snapshot.resources.iter().any(|r| r.uri == resource.uri) => {
                    tracing::warn!(uri = %resource.uri, "duplicate resource left out of the catalogue");
                }
                Ok(resource) => snapshot.resources.push(resource),
                Err((uri, why)) => {
                    tracing::warn!(uri = %uri, why, "resource left out of the catalogue");
                }
            }
        }
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
            resources: Vec::new(),
            writes_enabled: true,
            instructions: String::new(),
            error_codes: HashMap::new(),
        }
    }
}

fn resource(descriptor: pb::ResourceDescriptor) -> Result<Resource, (String, &'static str)> {
    let uri = descriptor.uri;
    if uri.is_empty() || descriptor.mime_type.is_empty() {
        return Err((uri, "empty URI or MIME type"));
    }
    let meta = if descriptor.meta_json.trim().is_empty() {
        None
    } else {
        Some(
            parse_schema(&descriptor.meta_json)
                .ok_or_else(|| (uri.clone(), "_meta is not a JSON object"))?,
        )
    };
    let mut listing = Map::new();
    listing.insert("uri".into(), json!(uri));
    listing.insert("name".into(), json!(descriptor.name));
    if !descriptor.title.is_empty() {
        listing.insert("title".into(), json!(descriptor.title));
    }
    if !descriptor.description.is_empty() {
        listing.insert("description".into(), json!(descriptor.description));
    }
    listing.insert("mimeType".into(), json!(descriptor.mime_type));
    let mut contents = Map::new();
    contents.insert("uri".into(), json!(uri));
    contents.insert("mimeType".into(), json!(descriptor.mime_type));
    contents.insert("text".into(), json!(descriptor.text));
    if let Some(meta) = meta {
        listing.insert("_meta".into(), Value::Object(meta.clone()));
        contents.insert("_meta".into(), Value::Object(meta));
    }
    let serialize = |value: &Map<String, Value>| {
        serde_json::value::to_raw_value(value).map_err(|_| (uri.clone(), "does not serialize"))
    };
    Ok(Resource {
        listing: serialize(&listing)?,
        contents: serialize(&contents)?,
        uri: uri.clone(),
    })
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
    let mut input_schema = parse_schema(&descriptor.input_schema_json)
        .ok_or_else(|| (name.clone(), "input schema is not a JSON object"))?;
    let header_params = take_header_params(&name, &mut input_schema);
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
    let view_uri = Some(descriptor.view_uri).filter(|uri| !uri.is_empty());
    if let Some(uri) = &view_uri {
        listing.insert("_meta".into(), json!({ "ui": { "resourceUri": uri } }));
    }
    let serialize = |listing: &Map<String, Value>| {
        serde_json::value::to_raw_value(listing)
            .map_err(|_| (name.clone(), "listing does not serialize"))
    };
    let full = serialize(&listing)?;
    let mut platform = listing.clone();
    platform.remove("outputSchema");
    if let Some(Value::Object(input)) = platform.get_mut("inputSchema") {
        input.remove("additionalProperties");
    }
    let listing_for_platform = serialize(&platform)?;
    let annotated = if header_params.is_empty() {
        None
    } else {
        let mut annotated = [listing, platform].map(|mut listing| {
            if let Some(schema) = listing.get_mut("inputSchema") {
                annotate(schema, &header_params);
            }
            listing
        });
        let [full, platform] = &mut annotated;
        Some([serialize(full)?, serialize(platform)?])
    };
    Ok(Tool {
        name,
        required_scope: descriptor.required_scope,
        write,
        deadline,
        idempotent: descriptor.idempotency_key_required,
        state_read_tool: Some(descriptor.state_read_tool).filter(|name| !name.is_empty()),
        view_uri,
        listing: full,
        listing_for_platform,
        annotated,
        header_params,
    })
}

/// How soon a snapshot kept after a failed refresh (or fetched while the
/// write switch could not be read) is fetched again.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_millis(500);

/// The snapshot in use and when it is due for a refresh.
struct Cached {
    snapshot: Arc<Snapshot>,
    refresh_at: Instant,
}

/// The shared, TTL-bounded cache of the catalogue. A failed refresh keeps
/// the last snapshot (its tools and its write switch) and tries again after
/// [`RETRY_AFTER_FAILURE`]; so does a fetch answered while the tool-service
/// could not read its write switch. While the tool-service's breaker is open
/// nothing is fetched: the last snapshot is served as it is, and the first
/// request after the breaker closes refreshes it.
pub struct Catalog {
    client: ToolCatalogClient<Balanced>,
    breaker: Arc<Breaker>,
    ttl: Duration,
    fetch_timeout: Duration,
    current: RwLock<Option<Cached>>,
    /// Held by the one request refreshing an expired snapshot.
    refreshing: tokio::sync::Mutex<()>,
}

impl Catalog {
    pub fn new(
        client: ToolCatalogClient<Balanced>,
        breaker: Arc<Breaker>,
        ttl: Duration,
        fetch_timeout: Duration,
    ) -> Self {
        Catalog {
            client,
            breaker,
            ttl,
            fetch_timeout,
            current: RwLock::new(None),
            refreshing: tokio::sync::Mutex::new(()),
        }
    }

    /// The snapshot in use, and whether it is due for a refresh.
    fn current(&self) -> (Option<Arc<Snapshot>>, bool) {
        let current = self.current.read().unwrap_or_else(|p| p.into_inner());
        match current.as_ref() {
            Some(cached) => (
                Some(cached.snapshot.clone()),
                Instant::now() >= cached.refresh_at,
            ),
            None => (None, true),
        }
    }

    fn keep(&self, snapshot: Arc<Snapshot>, refresh_in: Duration) {
        *self.current.write().unwrap_or_else(|p| p.into_inner()) = Some(Cached {
            snapshot,
            refresh_at: Instant::now() + refresh_in,
        });
    }

    /// The snapshot already fetched, if any, as it is: nothing is fetched.
    pub fn cached(&self) -> Option<Arc<Snapshot>> {
        self.current().0
    }

    /// The current snapshot, fetched again when due; concurrent callers
    /// wait for a single fetch. Fails only when no snapshot was ever fetched.
    pub async fn snapshot(&self) -> Result<Arc<Snapshot>, tonic::Status> {
        if let (Some(snapshot), false) = self.current() {
            return Ok(snapshot);
        }
        if self.breaker.is_open() {
            return self
                .current()
                .0
                .ok_or_else(|| tonic::Status::unavailable("tool-service known down"));
        }
        let _guard = self.refreshing.lock().await;
        let (last, due) = self.current();
        if let (Some(snapshot), false) = (&last, due) {
            return Ok(snapshot.clone());
        }
        match self.fetch().await {
            Ok(response) => {
                let unknown = response.writes_switch_unknown;
                let mut snapshot = Snapshot::from_response(response);
                let refresh_in = if unknown {
                    // The last known state of the switch stands (off when
                    // none is known) until it can be read again.
                    snapshot.writes_enabled = last.as_ref().is_some_and(|s| s.writes_enabled);
                    RETRY_AFTER_FAILURE
                } else {
                    self.ttl
                };
                let snapshot = Arc::new(snapshot);
                self.keep(snapshot.clone(), refresh_in);
                Ok(snapshot)
            }
            Err(status) => match last {
                Some(snapshot) => {
                    tracing::warn!(
                        grpc_code = ?status.code(),
                        "tool catalogue refresh failed; keeping the last one"
                    );
                    self.keep(snapshot.clone(), RETRY_AFTER_FAILURE);
                    Ok(snapshot)
                }
                None => Err(status),
            },
        }
    }

    async fn fetch(&self) -> Result<pb::ListToolsResponse, tonic::Status> {
        let mut request = tonic::Request::new(ListToolsRequest {});
        request.set_timeout(self.fetch_timeout);
        chataigne_common::trace_context::inject(request.metadata_mut());
        let mut client = self.client.clone();
        let response = tokio::time::timeout(self.fetch_timeout, client.list_tools(request))
            .await
            .map_err(|_| tonic::Status::deadline_exceeded("tool catalogue fetch timed out"))??;
        Ok(response.into_inner())
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
        let full: Value =
            serde_json::from_str(tool.listing(Profile::Default, false).get()).unwrap();
        assert_eq!(full["inputSchema"]["additionalProperties"], false);
        assert_eq!(full["outputSchema"]["type"], "object");
        let platform: Value =
            serde_json::from_str(tool.listing(Profile::Google, false).get()).unwrap();
        assert!(platform.get("outputSchema").is_none());
        assert!(
            platform["inputSchema"]
                .get("additionalProperties")
                .is_none()
        );
        assert_eq!(platform["inputSchema"]["type"], "object");
    }

    #[test]
    fn header_annotations_are_listed_only_where_the_revision_mirrors_them() {
        let snapshot = Snapshot::from_descriptors(vec![descriptor(
            "scoped",
            r#"{"type":"object","properties":{
                "location_id":{"type":"string","x-mcp-header":"LocationId"},
                "limit":{"type":"integer","x-mcp-header":"Limit"},
                "score":{"type":"number","x-mcp-header":"Score"},
                "again":{"type":"string","x-mcp-header":"locationid"},
                "organization_id":{"type":"string","x-mcp-header":"OrganizationId"},
                "bad":{"type":"string","x-mcp-header":"Two Words"}
            }}"#,
        )]);
        let tool = snapshot.get("scoped").unwrap();
        assert_eq!(
            tool.header_params,
            vec![
                HeaderParam {
                    property: "limit".into(),
                    header: "Limit".into(),
                    kind: ParamKind::Integer,
                },
                HeaderParam {
                    property: "organization_id".into(),
                    header: "OrganizationId".into(),
                    kind: ParamKind::String,
                },
            ],
            "number types, case-insensitive repeats and non-tokens are dropped"
        );
        for profile in [Profile::Default, Profile::Google] {
            let plain: Value = serde_json::from_str(tool.listing(profile, false).get()).unwrap();
            assert!(
                !plain.to_string().contains(HEADER_ANNOTATION),
                "{profile:?}"
            );
            let annotated: Value = serde_json::from_str(tool.listing(profile, true).get()).unwrap();
            let properties = &annotated["inputSchema"]["properties"];
            assert_eq!(
                properties["organization_id"][HEADER_ANNOTATION],
                "OrganizationId"
            );
            assert!(properties["location_id"].get(HEADER_ANNOTATION).is_none());
            assert_eq!(properties["limit"][HEADER_ANNOTATION], "Limit");
            assert!(properties["score"].get(HEADER_ANNOTATION).is_none());
        }
    }

    #[test]
    fn views_are_linked_from_their_tools_and_resources_built_once() {
        let view = |uri: &str, meta: &str| pb::ResourceDescriptor {
            uri: uri.into(),
            name: "board".into(),
            title: "Board".into(),
            mime_type: "text/html;profile=mcp-app".into(),
            text: "<!DOCTYPE html><p>board</p>".into(),
            meta_json: meta.into(),
            ..Default::default()
        };
        let snapshot = Snapshot::from_response(pb::ListToolsResponse {
            tools: vec![
                pb::ToolDescriptor {
                    view_uri: "ui://x/board".into(),
                    ..descriptor("linked", r#"{"type":"object"}"#)
                },
                descriptor("plain", r#"{"type":"object"}"#),
            ],
            resources: vec![
                view("ui://x/board", r#"{"ui":{"csp":{"connectDomains":[]}}}"#),
                view("ui://x/board", "{}"),
                view("ui://x/bad", "not json"),
            ],
            ..Default::default()
        });
        let linked = snapshot.get("linked").unwrap();
        assert_eq!(linked.view_uri.as_deref(), Some("ui://x/board"));
        for profile in [Profile::Default, Profile::Google] {
            let listing: Value =
                serde_json::from_str(linked.listing(profile, false).get()).unwrap();
            assert_eq!(
                listing["_meta"],
                json!({"ui": {"resourceUri": "ui://x/board"}})
            );
        }
        let plain: Value =
            serde_json::from_str(snapshot.get("plain").unwrap().listing.get()).unwrap();
        assert!(plain.get("_meta").is_none());
        let resources: Vec<&Resource> = snapshot.resources().collect();
        assert_eq!(
            resources.len(),
            1,
            "the duplicate and the bad one are left out"
        );
        let listing: Value = serde_json::from_str(resources[0].listing.get()).unwrap();
        assert_eq!(
            listing,
            json!({"uri": "ui://x/board", "name": "board", "title": "Board",
                   "mimeType": "text/html;profile=mcp-app",
                   "_meta": {"ui": {"csp": {"connectDomains": []}}}})
        );
        let contents: Value = serde_json::from_str(resources[0].contents.get()).unwrap();
        assert_eq!(contents["text"], "<!DOCTYPE html><p>board</p>");
        assert_eq!(contents["mimeType"], "text/html;profile=mcp-app");
        assert_eq!(contents["_meta"], listing["_meta"]);
    }

    #[test]
    fn the_write_switch_travels_with_the_listing() {
        let descriptors = vec![descriptor("good", r#"{"type":"object"}"#)];
        let off = Snapshot::from_response(pb::ListToolsResponse {
            tools: descriptors.clone(),
            writes_enabled: false,
            ..Default::default()
        });
        assert!(!off.writes_enabled());
        assert!(off.get("good").is_some());
        let on = Snapshot::from_response(pb::ListToolsResponse {
            tools: descriptors,
            writes_enabled: true,
            ..Default::default()
        });
        assert!(on.writes_enabled());
    }

    #[test]
    fn the_catalogue_gives_the_instructions_and_its_own_error_codes() {
        let code = |code: &str, behaves_as: &str| pb::ErrorCodeDescriptor {
            code: code.to_owned(),
            behaves_as: behaves_as.to_owned(),
        };
        let snapshot = Snapshot::from_response(pb::ListToolsResponse {
            instructions: "What the tools give access to.".to_owned(),
            error_codes: vec![
                code("KITCHEN_CLOSED", "MCP_EXPECTED_STATE_MISMATCH"),
                code("NO_SUCH_BEHAVIOUR", "MCP_NOT_A_CODE"),
                code("MCP_RATE_LIMITED", "MCP_INTERNAL_ERROR"),
            ],
            ..Default::default()
        });
        assert_eq!(
            snapshot.instructions(),
            Some("What the tools give access to.")
        );
        let (name, behaves_as) = snapshot.error_code("KITCHEN_CLOSED").unwrap();
        assert_eq!(
            (&*name, behaves_as),
            ("KITCHEN_CLOSED", ErrorCode::ExpectedStateMismatch)
        );
        // Unknown behaviours and shared codes redefined are left out.
        assert!(snapshot.error_code("NO_SUCH_BEHAVIOUR").is_none());
        assert!(snapshot.error_code("MCP_RATE_LIMITED").is_none());
        assert_eq!(Snapshot::from_descriptors(Vec::new()).instructions(), None);
    }

    /// A tool-service whose `ListTools` answers from a script (then
    /// UNAVAILABLE), counting the fetches.
    #[derive(Default)]
    struct Scripted {
        answers: std::sync::Mutex<
            std::collections::VecDeque<Result<pb::ListToolsResponse, tonic::Status>>,
        >,
        fetches: std::sync::atomic::AtomicUsize,
    }

    struct Fake(Arc<Scripted>);

    #[tonic::async_trait]
    impl pb::tool_catalog_server::ToolCatalog for Fake {
        async fn list_tools(
            &self,
            _request: tonic::Request<ListToolsRequest>,
        ) -> Result<tonic::Response<pb::ListToolsResponse>, tonic::Status> {
            self.0
                .fetches
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let next = self.0.answers.lock().unwrap().pop_front();
            next.unwrap_or_else(|| Err(tonic::Status::unavailable("script over")))
                .map(tonic::Response::new)
        }

        async fn call_tool(
            &self,
            _request: tonic::Request<pb::CallToolRequest>,
        ) -> Result<tonic::Response<pb::CallToolResponse>, tonic::Status> {
            Err(tonic::Status::unimplemented("not in this test"))
        }
    }

    /// A listing whose write switch is `Some(enabled)`, or could not be read.
    fn listing(writes_enabled: Option<bool>) -> Result<pb::ListToolsResponse, tonic::Status> {
        Ok(pb::ListToolsResponse {
            tools: vec![descriptor("good", r#"{"type":"object"}"#)],
            writes_enabled: writes_enabled.unwrap_or(false),
            writes_switch_unknown: writes_enabled.is_none(),
            ..Default::default()
        })
    }

    /// The write switch survives a refresh that could not read it and one
    /// that failed; nothing is fetched while the breaker is open; the first
    /// refresh after it closes reads the switch again.
    #[tokio::test]
    async fn failed_refreshes_keep_the_last_known_write_switch() {
        let script = Arc::new(Scripted::default());
        script.answers.lock().unwrap().extend([
            listing(Some(true)),
            listing(None),
            Err(tonic::Status::unavailable("down")),
            listing(Some(false)),
        ]);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(pb::tool_catalog_server::ToolCatalogServer::new(Fake(
                    script.clone(),
                )))
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
        );
        let channel = Balanced::fixed(
            &format!("http://{addr}"),
            vec![addr],
            chataigne_common::balance::Options::default(),
        )
        .unwrap();
        let breaker = Breaker::new(crate::ops::counters::Dependency::ToolService.label());
        let catalog = Catalog::new(
            ToolCatalogClient::new(channel),
            breaker.clone(),
            Duration::ZERO,
            Duration::from_secs(5),
        );
        let fetches = || script.fetches.load(std::sync::atomic::Ordering::SeqCst);
        assert!(catalog.snapshot().await.unwrap().writes_enabled());
        // The switch could not be read: the last known state stands, and it
        // is asked again soon (not before RETRY_AFTER_FAILURE).
        assert!(catalog.snapshot().await.unwrap().writes_enabled());
        assert_eq!(fetches(), 2);
        assert!(catalog.snapshot().await.unwrap().writes_enabled());
        assert_eq!(fetches(), 2, "kept until the retry is due");
        tokio::time::sleep(RETRY_AFTER_FAILURE + Duration::from_millis(50)).await;
        // The refresh fails: the last snapshot is served.
        let kept = catalog.snapshot().await.unwrap();
        assert!(kept.writes_enabled() && kept.get("good").is_some());
        assert_eq!(fetches(), 3);
        // Known down: nothing is fetched, the last snapshot is served.
        for _ in 0..chataigne_common::breaker::OPEN_AFTER {
            breaker.record(false);
        }
        tokio::time::sleep(RETRY_AFTER_FAILURE + Duration::from_millis(50)).await;
        assert!(catalog.snapshot().await.unwrap().writes_enabled());
        assert_eq!(fetches(), 3);
        // Back: the first request refreshes, and reads the switch now off.
        breaker.record(true);
        assert!(!catalog.snapshot().await.unwrap().writes_enabled());
        assert_eq!(fetches(), 4);
    }
}
