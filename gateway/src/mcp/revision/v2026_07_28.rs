//! MCP revision 2026-07-28, served on `/mcp/v2`: stateless (no `initialize`,
//! no session), every request carrying its protocol version and client
//! capabilities in `_meta`, the standard headers (`MCP-Protocol-Version`,
//! `Mcp-Method`, `Mcp-Name`) and the tools' `Mcp-Param-*` headers checked
//! against the body, `server/discover`, results tagged `resultType` with the
//! server's identity in `_meta` and caching hints on `tools/list` and the
//! resource methods.

use std::time::Duration;

use base64::Engine;
use http::HeaderMap;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::backends::catalog::{HeaderParam, ParamKind, Tool};
use crate::error::GatewayError;
use crate::mcp::context::Context;
use crate::mcp::params::{self, CallToolParams, ReadResourceParams};
use crate::mcp::protocol::{
    self, BoxFuture, Caching, PROTOCOL_VERSION_HEADER, Protocol, ResultFields, ResultMeta,
    SERVER_INFO,
};
use crate::mcp::{resources, tools};
use crate::ops::http_telemetry::TraceParent;
use crate::wire::jsonrpc::{Id, Incoming};
use crate::wire::method::McpMethod;

/// The one protocol version this endpoint speaks.
pub const SUPPORTED_VERSIONS: &[&str] = &["2026-07-28"];

/// `_meta` key of the request's protocol version (required).
pub const PROTOCOL_VERSION_KEY: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key of the client's capabilities (required).
pub const CLIENT_CAPABILITIES_KEY: &str = "io.modelcontextprotocol/clientCapabilities";

const METHOD_HEADER: &str = "mcp-method";
const NAME_HEADER: &str = "mcp-name";
/// Prefix of the headers mirroring annotated tool arguments.
pub const PARAM_HEADER_PREFIX: &str = "mcp-param-";

/// How long a `server/discover` answer stays fresh: it changes only with a
/// deployment.
const DISCOVER_TTL: Duration = Duration::from_secs(300);

/// Longest requested version echoed back in an `UnsupportedProtocolVersion`.
const MAX_ECHOED_VERSION: usize = 64;

fn mismatch(id: &Id, detail: impl Into<String>) -> GatewayError {
    GatewayError::HeaderMismatch {
        id: id.clone(),
        detail: detail.into(),
    }
}

/// One header's value with optional whitespace trimmed (RFC 9110 §5.5), or
/// `None` when absent; a value that is not visible ASCII is a mismatch.
fn header<'h>(
    headers: &'h HeaderMap,
    name: &str,
    id: &Id,
) -> Result<Option<&'h str>, GatewayError> {
    let mut values = headers.get_all(name).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(mismatch(id, format!("{name} is sent more than once")));
    }
    value
        .to_str()
        .map(|text| Some(text.trim_matches([' ', '\t'])))
        .map_err(|_| mismatch(id, format!("{name} has invalid characters")))
}

/// A mirrored value as sent: plain, or the `=?base64?…?=` sentinel form
/// (standard alphabet, canonical padding) decoded to UTF-8.
fn decoded(raw: &str) -> Option<String> {
    match raw
        .strip_prefix("=?base64?")
        .and_then(|rest| rest.strip_suffix("?="))
    {
        Some(encoded) => base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .ok()
            .and_then(|bytes| String::from_utf8(bytes).ok()),
        None => Some(raw.to_owned()),
    }
}

/// The checks between the headers and the message, in the order the
/// revision's validation gives them: the version header, `Mcp-Method`,
/// `Mcp-Name` (tool calls), the required `_meta` fields, the header against
/// `_meta`, then whether the version is spoken here. Notifications carry
/// no header rule in this revision.
pub fn check_message(headers: &HeaderMap, incoming: &Incoming) -> Result<(), GatewayError> {
    let Incoming::Request {
        id,
        method,
        name,
        params,
    } = incoming
    else {
        return Ok(());
    };
    let Some(version) = header(headers, PROTOCOL_VERSION_HEADER, id)? else {
        return Err(mismatch(id, "the MCP-Protocol-Version header is missing"));
    };
    match header(headers, METHOD_HEADER, id)? {
        None => return Err(mismatch(id, "the Mcp-Method header is missing")),
        Some(mirrored) if mirrored != name => {
            return Err(mismatch(
                id,
                "the Mcp-Method header does not match the body's method",
            ));
        }
        Some(_) => {}
    }
    let params = params.as_ref().and_then(Value::as_object);
    // The field `Mcp-Name` mirrors: a tool call's name, a read resource's URI.
    let named = match method {
        McpMethod::ToolsCall => Some("name"),
        McpMethod::ResourcesRead => Some("uri"),
        _ => None,
    };
    if let Some(field) = named
        && let Some(value) = params.and_then(|p| p.get(field)).and_then(Value::as_str)
    {
        match header(headers, NAME_HEADER, id)?.map(decoded) {
            None => return Err(mismatch(id, "the Mcp-Name header is missing")),
            Some(None) => return Err(mismatch(id, "the Mcp-Name header is not valid base64")),
            Some(Some(mirrored)) if mirrored != value => {
                return Err(mismatch(
                    id,
                    format!("the Mcp-Name header does not match the body's params.{field}"),
                ));
            }
            Some(Some(_)) => {}
        }
    }
    let meta = params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object);
    let requested = meta
        .and_then(|m| m.get(PROTOCOL_VERSION_KEY))
        .and_then(Value::as_str);
    let capabilities = meta
        .and_then(|m| m.get(CLIENT_CAPABILITIES_KEY))
        .filter(|c| c.is_object());
    let missing: Vec<&str> = [
        (PROTOCOL_VERSION_KEY, requested.is_none()),
        (CLIENT_CAPABILITIES_KEY, capabilities.is_none()),
    ]
    .into_iter()
    .filter_map(|(key, absent)| absent.then_some(key))
    .collect();
    let Some(requested) = requested.filter(|_| missing.is_empty()) else {
        return Err(GatewayError::InvalidMeta {
            id: id.clone(),
            detail: format!(
                "params._meta must carry {} (missing or of the wrong type: {})",
                [PROTOCOL_VERSION_KEY, CLIENT_CAPABILITIES_KEY].join(" and "),
                missing.join(", ")
            ),
        });
    };
    if requested != version {
        return Err(mismatch(
            id,
            "the MCP-Protocol-Version header does not match _meta io.modelcontextprotocol/protocolVersion",
        ));
    }
    if !SUPPORTED_VERSIONS.contains(&requested) {
        return Err(GatewayError::VersionNotSpoken {
            id: id.clone(),
            supported: SUPPORTED_VERSIONS,
            requested: requested.chars().take(MAX_ECHOED_VERSION).collect(),
        });
    }
    Ok(())
}

/// The argument `value` as its header would carry it, or `None` for a type
/// the annotation cannot mirror.
fn compares_equal(kind: ParamKind, value: &Value, mirrored: &str) -> bool {
    match (kind, value) {
        (ParamKind::String, Value::String(text)) => text == mirrored,
        (ParamKind::Boolean, Value::Bool(flag)) => mirrored == if *flag { "true" } else { "false" },
        // Compared as numbers: `42.0` mirrors `42`.
        (ParamKind::Integer, Value::Number(number)) => {
            match (number.as_f64(), mirrored.parse::<f64>()) {
                (Some(body), Ok(header)) => body == header,
                _ => false,
            }
        }
        _ => false,
    }
}

/// Every annotated argument of `tool` against its `Mcp-Param-*` header: a
/// value in the body needs its header, equal once decoded; a header without
/// a value in the body disagrees with it as much.
pub fn check_tool_headers(
    id: &Id,
    headers: &HeaderMap,
    tool: &Tool,
    arguments: Option<&Map<String, Value>>,
) -> Result<(), GatewayError> {
    for HeaderParam {
        property,
        header: suffix,
        kind,
    } in &tool.header_params
    {
        let name = format!("{PARAM_HEADER_PREFIX}{}", suffix.to_ascii_lowercase());
        let value = arguments
            .and_then(|arguments| arguments.get(property))
            .filter(|value| !value.is_null());
        let shown = format!("Mcp-Param-{suffix}");
        match (value, header(headers, &name, id)?) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(mismatch(
                    id,
                    format!("the {shown} header is missing for argument {property}"),
                ));
            }
            (None, Some(_)) => {
                return Err(mismatch(
                    id,
                    format!("the {shown} header is sent without argument {property}"),
                ));
            }
            (Some(value), Some(raw)) => match decoded(raw) {
                None => {
                    return Err(mismatch(
                        id,
                        format!("the {shown} header is not valid base64"),
                    ));
                }
                Some(mirrored) if !compares_equal(*kind, value, &mirrored) => {
                    return Err(mismatch(
                        id,
                        format!("the {shown} header does not match argument {property}"),
                    ));
                }
                Some(_) => {}
            },
        }
    }
    Ok(())
}

/// The trace context in `_meta` (`traceparent`, `tracestate`).
pub fn trace_parent(meta: Option<&Map<String, Value>>) -> Option<TraceParent> {
    let meta = meta?;
    let traceparent = meta.get("traceparent")?.as_str()?.to_owned();
    let tracestate = meta
        .get("tracestate")
        .and_then(Value::as_str)
        .map(str::to_owned);
    Some(TraceParent {
        traceparent,
        tracestate,
    })
}

fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX)
}

/// A result of this revision: `resultType`, the caching hints of cacheable
/// results and the server's identity in `_meta`, around the method's own
/// fields.
fn result_fields(caching: Caching) -> ResultFields {
    let (ttl_ms, cache_scope) = match caching {
        Caching::None => (None, None),
        Caching::Private(ttl) => (Some(millis(ttl)), Some("private")),
        Caching::Public(ttl) => (Some(millis(ttl)), Some("public")),
    };
    ResultFields {
        result_type: Some("complete"),
        ttl_ms,
        cache_scope,
        meta: Some(ResultMeta {
            server_info: &SERVER_INFO,
        }),
    }
}

/// The response body of a complete result.
fn success<T: Serialize + ?Sized>(id: &Id, result: &T, caching: Caching) -> Vec<u8> {
    protocol::success(&V2026_07_28, id, result, caching)
}

/// This revision.
pub struct V2026_07_28;

impl Protocol for V2026_07_28 {
    fn supported_versions(&self) -> &'static [&'static str] {
        SUPPORTED_VERSIONS
    }

    fn check_message(&self, headers: &HeaderMap, incoming: &Incoming) -> Result<(), GatewayError> {
        check_message(headers, incoming)
    }

    fn check_tool_headers(
        &self,
        id: &Id,
        headers: &HeaderMap,
        tool: &Tool,
        arguments: Option<&Map<String, Value>>,
    ) -> Result<(), GatewayError> {
        check_tool_headers(id, headers, tool, arguments)
    }

    fn lists_header_annotations(&self) -> bool {
        true
    }

    fn trace_parent(&self, meta: Option<&Map<String, Value>>) -> Option<TraceParent> {
        trace_parent(meta)
    }

    fn result_fields(&self, caching: Caching) -> ResultFields {
        result_fields(caching)
    }

    fn dispatch<'a>(
        &'a self,
        ctx: Context<'a>,
        id: &'a Id,
        method: McpMethod,
        params: Option<Value>,
    ) -> BoxFuture<'a, Result<Vec<u8>, GatewayError>> {
        Box::pin(dispatch(ctx, id, method, params))
    }
}

/// The `server/discover` result's own fields, with the catalogue's
/// `instructions` when known.
fn discover_result(instructions: Option<String>) -> Value {
    let mut result = json!({
        "supportedVersions": SUPPORTED_VERSIONS,
        "capabilities": protocol::capabilities(json!({})),
    });
    if let (Some(text), Some(fields)) = (instructions, result.as_object_mut()) {
        fields.insert("instructions".to_owned(), Value::String(text));
    }
    result
}

/// The revision's method set: `server/discover`, `tools/list`, `tools/call`,
/// `resources/list`, `resources/read`; every other request (the removed `initialize` and `ping` included) is
/// not found (HTTP 404), naming the version spoken here.
async fn dispatch(
    ctx: Context<'_>,
    id: &Id,
    method: McpMethod,
    params: Option<Value>,
) -> Result<Vec<u8>, GatewayError> {
    match method {
        McpMethod::ServerDiscover => {
            // Cached by callers only when complete.
            let instructions = protocol::instructions(&ctx).await;
            let caching = match instructions {
                Some(_) => Caching::Public(DISCOVER_TTL),
                None => Caching::None,
            };
            Ok(success(id, &discover_result(instructions), caching))
        }
        McpMethod::ToolsList => tools::list(ctx, id, &V2026_07_28).await,
        McpMethod::ToolsCall => {
            let params = CallToolParams::take(id, params)?;
            tools::call(ctx, id, params, &V2026_07_28).await
        }
        McpMethod::ResourcesList => resources::list(ctx, id, &V2026_07_28).await,
        McpMethod::ResourcesRead => {
            let params: ReadResourceParams = params::parse(id, params)?;
            resources::read(ctx, id, params, &V2026_07_28).await
        }
        McpMethod::Initialize
        | McpMethod::Initialized
        | McpMethod::Cancelled
        | McpMethod::Ping
        | McpMethod::Other => Err(GatewayError::MethodNotServed {
            id: id.clone(),
            supported: SUPPORTED_VERSIONS,
            handshake: matches!(method, McpMethod::Initialize | McpMethod::Ping),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn request(method: &str, params: Value) -> Incoming {
        crate::wire::jsonrpc::classify(json!({
            "jsonrpc": "2.0", "id": 7, "method": method, "params": params
        }))
        .unwrap()
    }

    fn meta() -> Value {
        json!({
            PROTOCOL_VERSION_KEY: "2026-07-28",
            CLIENT_CAPABILITIES_KEY: {},
        })
    }

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    fn code(result: Result<(), GatewayError>) -> &'static str {
        match result {
            Ok(()) => "ok",
            Err(GatewayError::HeaderMismatch { .. }) => "mismatch",
            Err(GatewayError::InvalidMeta { .. }) => "meta",
            Err(GatewayError::VersionNotSpoken { .. }) => "version",
            Err(_) => "other",
        }
    }

    #[test]
    fn standard_headers_must_mirror_the_body() {
        let list = request("tools/list", json!({"_meta": meta()}));
        let good = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", " tools/list "),
        ];
        assert_eq!(code(check_message(&headers(&good), &list)), "ok");
        assert_eq!(
            code(check_message(&headers(&good[1..]), &list)),
            "mismatch",
            "version header missing"
        );
        assert_eq!(
            code(check_message(&headers(&good[..1]), &list)),
            "mismatch",
            "method header missing"
        );
        for wrong in ["TOOLS/LIST", "prompts/list"] {
            let sent = [good[0], ("mcp-method", wrong)];
            assert_eq!(code(check_message(&headers(&sent), &list)), "mismatch");
        }
    }

    #[test]
    fn tool_calls_mirror_their_name_plainly_or_in_base64() {
        let call = request(
            "tools/call",
            json!({"name": "orders_list", "arguments": {}, "_meta": meta()}),
        );
        let base = [
            ("mcp-protocol-version", "2026-07-28"),
            ("mcp-method", "tools/call"),
        ];
        let with = |name: &'static str| {
            let mut sent = headers(&base);
            sent.insert("mcp-name", HeaderValue::from_static(name));
            code(check_message(&sent, &call))
        };
        assert_eq!(with("orders_list"), "ok");
        assert_eq!(with("=?base64?b3JkZXJzX2xpc3Q=?="), "ok");
        assert_eq!(with("=?base64?b3JkZXJzX2xpc3Q?="), "mismatch", "padding");
        assert_eq!(with("orders_get"), "mismatch");
        assert_eq!(code(check_message(&headers(&base), &call)), "mismatch");
    }

    #[test]
    fn meta_fields_are_required_and_the_version_must_be_spoken() {
        let sent = |version: &str| {
            headers(&[
                ("mcp-protocol-version", version),
                ("mcp-method", "server/discover"),
            ])
        };
        let discover = |params: Value| request("server/discover", params);
        assert_eq!(
            code(check_message(&sent("2026-07-28"), &discover(json!({})))),
            "meta"
        );
        assert_eq!(
            code(check_message(
                &sent("2026-07-28"),
                &discover(json!({"_meta": {PROTOCOL_VERSION_KEY: "2026-07-28"}}))
            )),
            "meta"
        );
        let other =
            json!({"_meta": {PROTOCOL_VERSION_KEY: "2025-11-25", CLIENT_CAPABILITIES_KEY: {}}});
        assert_eq!(
            code(check_message(&sent("2026-07-28"), &discover(other.clone()))),
            "mismatch"
        );
        match check_message(&sent("2025-11-25"), &discover(other)) {
            Err(GatewayError::VersionNotSpoken {
                supported,
                requested,
                ..
            }) => {
                assert_eq!(supported, SUPPORTED_VERSIONS);
                assert_eq!(requested, "2025-11-25");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn mirrored_values_compare_by_type() {
        assert!(compares_equal(ParamKind::String, &json!("loc_1"), "loc_1"));
        assert!(compares_equal(ParamKind::Integer, &json!(42), "42.0"));
        assert!(!compares_equal(ParamKind::Integer, &json!(42), "forty-two"));
        assert!(compares_equal(ParamKind::Boolean, &json!(false), "false"));
        assert!(!compares_equal(ParamKind::String, &json!(3), "3"));
        assert_eq!(decoded("=?base64?SGVsbG8=?=").as_deref(), Some("Hello"));
        assert_eq!(decoded("=?base64?SGVs!!!bG8=?="), None);
        assert_eq!(
            decoded("=?base64?SGVsbG8=").as_deref(),
            Some("=?base64?SGVsbG8=")
        );
    }

    #[test]
    fn results_carry_their_type_identity_and_caching() {
        let body = success(
            &Id::Number(1.into()),
            &json!({"tools": []}),
            Caching::Private(Duration::from_secs(30)),
        );
        let body: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(body["result"]["resultType"], "complete");
        assert_eq!(body["result"]["ttlMs"], 30_000);
        assert_eq!(body["result"]["cacheScope"], "private");
        assert_eq!(
            body["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "chataigne-mcp"
        );
        assert!(body["result"]["tools"].is_array());
    }
}
