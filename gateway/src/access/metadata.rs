//! RFC 9728 protected-resource metadata, one document per public endpoint at
//! `/.well-known/oauth-protected-resource<endpoint path>`.

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;

use crate::endpoints::{Endpoint, Endpoints, METADATA_PREFIX, host};
use crate::error::GatewayError;
use crate::reply;

#[derive(Serialize)]
struct Document<'a> {
    resource: &'a str,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    authorization_servers: Vec<&'a str>,
    scopes_supported: Vec<&'static str>,
    bearer_methods_supported: [&'static str; 1],
    resource_name: &'static str,
}

fn document(endpoint: &Endpoint, authorization_server: Option<&str>) -> Response {
    let body = Document {
        resource: &endpoint.resource,
        authorization_servers: authorization_server.into_iter().collect(),
        // Public scopes only: the platform-admin ones are documented in the
        // protected admin area alone (seed 002).
        scopes_supported: chataigne_common::scopes::public().collect(),
        bearer_methods_supported: ["header"],
        resource_name: "Chataigne",
    };
    let Ok(bytes) = serde_json::to_vec(&body) else {
        return GatewayError::Internal.into_response();
    };
    let mut response = reply::json(StatusCode::OK, bytes);
    response.headers_mut().insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    response
}

/// Serves the metadata document at `request`'s path, naming
/// `authorization_server`.
pub fn serve(
    endpoints: &Endpoints,
    authorization_server: Option<&str>,
    request: &Request,
) -> Response {
    let suffix = request
        .uri()
        .path()
        .strip_prefix(METADATA_PREFIX)
        .unwrap_or_default();
    match endpoints.resolve_metadata(suffix, host(request).as_deref()) {
        Some(endpoint) => document(&endpoint, authorization_server),
        None => GatewayError::NotFound.into_response(),
    }
}
