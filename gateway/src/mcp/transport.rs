//! Streamable HTTP transport rules checked on every POST before anything else:
//! Origin, Accept and Content-Type, then the header rules of the endpoint's
//! revision (`MCP-Protocol-Version`).

use http::{HeaderMap, header};

use crate::endpoints::Endpoint;
use crate::error::GatewayError;

/// Checks the headers of a POST to `endpoint`.
pub fn check(
    headers: &HeaderMap,
    endpoint: &Endpoint,
    allowed_origins: &[String],
) -> Result<(), GatewayError> {
    check_origin(headers, endpoint, allowed_origins)?;
    check_accept(headers)?;
    check_content_type(headers)?;
    crate::mcp::revision::protocol(endpoint.revision).check_headers(headers)
}

/// A browser `Origin`, when present, must be the endpoint's own or an allowed one
/// (DNS-rebinding protection).
fn check_origin(
    headers: &HeaderMap,
    endpoint: &Endpoint,
    allowed_origins: &[String],
) -> Result<(), GatewayError> {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return Ok(());
    };
    let origin = origin
        .to_str()
        .map_err(|_| GatewayError::OriginForbidden)?
        .trim_end_matches('/');
    let same = |candidate: &str| candidate.trim_end_matches('/').eq_ignore_ascii_case(origin);
    if same(&endpoint.origin) || allowed_origins.iter().any(|o| same(o)) {
        Ok(())
    } else {
        Err(GatewayError::OriginForbidden)
    }
}

fn media_types(headers: &HeaderMap, name: header::HeaderName) -> Vec<String> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(','))
        .map(|item| {
            item.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        })
        .filter(|media| !media.is_empty())
        .collect()
}

/// The client must accept both a JSON response and an event stream.
fn check_accept(headers: &HeaderMap) -> Result<(), GatewayError> {
    let accepted = media_types(headers, header::ACCEPT);
    let any = |options: &[&str]| accepted.iter().any(|m| options.contains(&m.as_str()));
    if any(&["application/json", "application/*", "*/*"])
        && any(&["text/event-stream", "text/*", "*/*"])
    {
        Ok(())
    } else {
        Err(GatewayError::NotAcceptable)
    }
}

fn check_content_type(headers: &HeaderMap) -> Result<(), GatewayError> {
    match media_types(headers, header::CONTENT_TYPE).as_slice() {
        [only] if only == "application/json" => Ok(()),
        _ => Err(GatewayError::UnsupportedMediaType),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, HeaderValue::from_static(value));
        }
        map
    }

    #[test]
    fn accept_needs_json_and_event_stream() {
        assert!(
            check_accept(&headers(&[(
                "accept",
                "application/json, text/event-stream"
            )]))
            .is_ok()
        );
        assert!(check_accept(&headers(&[("accept", "*/*")])).is_ok());
        assert!(check_accept(&headers(&[("accept", "application/json")])).is_err());
        assert!(check_accept(&headers(&[])).is_err());
    }

    #[test]
    fn content_type_allows_parameters() {
        assert!(
            check_content_type(&headers(&[(
                "content-type",
                "application/json; charset=utf-8"
            )]))
            .is_ok()
        );
        assert!(check_content_type(&headers(&[("content-type", "text/plain")])).is_err());
    }
}
