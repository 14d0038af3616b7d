//! The HTTP side of the authorization server: the JWK Set and the RFC 8414
//! metadata document, listing only what exists so far.

use std::sync::Arc;

use axum::Router;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::get;
use serde_json::json;

/// Path of the JWK Set.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";
/// Path of the authorization-server metadata (RFC 8414).
pub const METADATA_PATH: &str = "/.well-known/oauth-authorization-server";

/// The HTTP routes; both documents are rendered once.
pub fn router(issuer: &str, jwks: &serde_json::Value) -> Router {
    let metadata = json!({
        "issuer": issuer,
        "jwks_uri": format!("{issuer}{JWKS_PATH}"),
        "scopes_supported": chataigne_common::scopes::all().collect::<Vec<_>>(),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token"],
        "code_challenge_methods_supported": ["S256"],
    });
    let metadata: Arc<str> = metadata.to_string().into();
    let jwks: Arc<str> = jwks.to_string().into();
    Router::new()
        .route(JWKS_PATH, get(move || json_document(jwks.clone())))
        .route(METADATA_PATH, get(move || json_document(metadata.clone())))
}

async fn json_document(body: Arc<str>) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "public, max-age=300"),
        ],
        body.to_string(),
    )
}
