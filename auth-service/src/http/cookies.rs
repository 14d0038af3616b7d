//! The authorization server's two browser cookies: the sign-in session and
//! the CSRF secret. Both HttpOnly, SameSite=Lax, `Path=/`, no `Domain`; on an
//! https issuer they are `Secure` and carry the `__Host-` prefix, so that no
//! other host (a sibling subdomain) can set or overwrite them.

use axum::http::{HeaderMap, HeaderValue, header};

/// The cookie names of one issuer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Names {
    pub session: &'static str,
    pub csrf: &'static str,
}

/// The names on an https issuer (`secure`) or a plain http one (tests,
/// local development: browsers refuse `__Host-` cookies without `Secure`).
pub fn names(secure: bool) -> Names {
    if secure {
        Names {
            session: "__Host-chataigne_as_session",
            csrf: "__Host-chataigne_as_csrf",
        }
    } else {
        Names {
            session: "chataigne_as_session",
            csrf: "chataigne_as_csrf",
        }
    }
}

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
        let plain = names(false);
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            HeaderValue::from_static("a=1; chataigne_as_csrf=xyz; b="),
        );
        assert_eq!(get(&headers, plain.csrf), Some("xyz"));
        assert_eq!(get(&headers, "b"), None);
        assert_eq!(get(&headers, plain.session), None);
        let secure = names(true);
        assert_eq!(get(&headers, secure.csrf), None, "not the __Host- cookie");
        let cookie = set(secure.session, "v", 60, true).unwrap();
        let cookie = cookie.to_str().unwrap();
        assert!(
            cookie.starts_with("__Host-chataigne_as_session=v;"),
            "{cookie}"
        );
        for attribute in ["HttpOnly", "SameSite=Lax", "Secure", "Path=/", "Max-Age=60"] {
            assert!(cookie.contains(attribute), "{cookie}");
        }
        assert!(!cookie.contains("Domain"), "{cookie}");
        assert!(
            !set(plain.session, "v", 60, false)
                .unwrap()
                .to_str()
                .unwrap()
                .contains("Secure")
        );
    }
}
