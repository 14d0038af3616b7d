//! Building HTTP responses: JSON bodies with the right content type, and the
//! empty 202 that acknowledges notifications and client responses.

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};

/// A response with a JSON body.
pub fn json(status: StatusCode, body: Vec<u8>) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// 202 Accepted with no body.
pub fn accepted() -> Response {
    let mut response = Response::new(Body::empty());
    *response.status_mut() = StatusCode::ACCEPTED;
    response
}
