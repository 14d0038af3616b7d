//! `resources/list` and `resources/read`: the resources of the cached
//! catalogue (the tool-service's MCP Apps views, `ui://` documents), each
//! listed and readable for a caller who may see at least one tool that links
//! it (`_meta.ui.resourceUri`), and unknown to anyone else. A resource's
//! bytes are the same for every caller; whether it is shown depends on the
//! caller's scopes, so its answers are cached like `tools/list`.

use serde::Serialize;
use serde_json::value::RawValue;

use crate::backends::catalog::{Resource, Snapshot};
use crate::error::GatewayError;
use crate::mcp::context::Context;
use crate::mcp::params::{Field, ReadResourceParams};
use crate::mcp::protocol::{self, Caching, Protocol};
use crate::mcp::tools;
use crate::wire::jsonrpc::Id;

/// Longest part of an unknown URI repeated in the error.
const MAX_ECHOED_URI: usize = 256;

#[derive(Serialize)]
struct ListResult<'a> {
    resources: Vec<&'a RawValue>,
}

#[derive(Serialize)]
struct ReadResult<'a> {
    contents: [&'a RawValue; 1],
}

/// The resources of `snapshot` the caller may see: those a tool it sees
/// listed links.
fn shown<'s>(ctx: &Context<'_>, snapshot: &'s Snapshot) -> Vec<&'s Resource> {
    let linked: Vec<&str> = tools::listed(ctx, snapshot)
        .into_iter()
        .filter_map(|tool| tool.view_uri.as_deref())
        .collect();
    snapshot
        .resources()
        .filter(|resource| linked.contains(&resource.uri.as_str()))
        .collect()
}

/// `resources/list`. A `cursor` is accepted and ignored: the list is never
/// paginated. `revision` is the endpoint's.
pub async fn list(
    mut ctx: Context<'_>,
    id: &Id,
    revision: &dyn Protocol,
) -> Result<Vec<u8>, GatewayError> {
    let snapshot = tools::catalogue(&mut ctx, id).await?;
    let resources = shown(&ctx, &snapshot)
        .into_iter()
        .map(|resource| &*resource.listing)
        .collect();
    Ok(protocol::success(
        revision,
        id,
        &ListResult { resources },
        Caching::Private(tools::listing_ttl(&ctx)),
    ))
}

/// `resources/read` of one resource the caller may see; any other URI is
/// not found. `revision` is the endpoint's.
pub async fn read(
    mut ctx: Context<'_>,
    id: &Id,
    params: ReadResourceParams,
    revision: &dyn Protocol,
) -> Result<Vec<u8>, GatewayError> {
    let Field::Valid(uri) = params.uri else {
        return Err(GatewayError::InvalidParams(
            id.clone(),
            "params.uri must be a string".to_owned(),
        ));
    };
    let snapshot = tools::catalogue(&mut ctx, id).await?;
    let Some(resource) = shown(&ctx, &snapshot)
        .into_iter()
        .find(|resource| resource.uri == uri)
    else {
        return Err(GatewayError::ResourceNotFound {
            id: id.clone(),
            uri: uri.chars().take(MAX_ECHOED_URI).collect(),
        });
    };
    Ok(protocol::success(
        revision,
        id,
        &ReadResult {
            contents: [&resource.contents],
        },
        Caching::Private(tools::listing_ttl(&ctx)),
    ))
}
