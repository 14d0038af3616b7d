//! The authorization server's two browser cookies: the sign-in session and
//! the CSRF secret. Both HttpOnly, SameSite=Lax, Secure on an https issuer.

use axum::http::{HeaderMap, HeaderValue, header};

pub const SESSION: &str = "chataigne_as_session";
pub const CSRF: &str = "chataigne_as_csrf";

/// The value of cookie `name` in the request, if present.
pub fn get<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
        .filter(|value| !value.is_empty())
}

/// A `Set-Cookie` value.
pub fn set(name: &str, value: &str, max_age_secs: u64, secure: bool) -> Option<HeaderValue> {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age_secs}{secure}"
    ))
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_read_by_name_and_set_with_their_attributes() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; chataigne_as_csrf=xyz; b="),
        );
        assert_eq!(get(&headers, CSRF), Some("xyz"));
        assert_eq!(get(&headers, "b"), None);
        assert_eq!(get(&headers, SESSION), None);
        let cookie = set(SESSION, "v", 60, true).unwrap();
        let cookie = cookie.to_str().unwrap();
        for attribute in ["HttpOnly", "SameSite=Lax", "Secure", "Path=/", "Max-Age=60"] {
            assert!(cookie.contains(attribute), "{cookie}");
        }
        assert!(
            !set(SESSION, "v", 60, false)
                .unwrap()
                .to_str()
                .unwrap()
                .contains("Secure")
        );
    }
}
