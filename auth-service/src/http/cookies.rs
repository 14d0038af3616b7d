//! The authorization server's browser cookies: the sign-in session, the CSRF
//! secret and the device cookie (`device.rs`). All HttpOnly, `Path=/`, no
//! `Domain`; the first two SameSite=Lax, the device cookie SameSite=Strict
//! (only the server's own sign-in form sends it); on an https issuer they are
//! `Secure` and carry the `__Host-` prefix, so that no other host (a sibling
//! subdomain) can set or overwrite them.

use axum::http::{HeaderMap, HeaderValue, header};

/// The cookie names of one issuer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Names {
    pub session: &'static str,
    pub csrf: &'static str,
    pub device: &'static str,
}

/// The names on an https issuer (`secure`) or a plain http one (tests,
/// local development: browsers refuse `__Host-` cookies without `Secure`).
pub fn names(secure: bool) -> Names {
    if secure {
        Names {
            session: "__Host-chataigne_as_session",
            csrf: "__Host-chataigne_as_csrf",
            device: "__Host-chataigne_as_device",
        }
    } else {
        Names {
            session: "chataigne_as_session",
            csrf: "chataigne_as_csrf",
            device: "chataigne_as_device",
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

/// A `Set-Cookie` value (SameSite=Lax).
pub fn set(name: &str, value: &str, max_age_secs: u64, secure: bool) -> Option<HeaderValue> {
    with_attributes(name, value, "Lax", max_age_secs, secure)
}

/// A `Set-Cookie` value sent back only from this server's own pages
/// (SameSite=Strict): the device cookie.
pub fn set_strict(name: &str, value: &str, max_age_secs: u64, secure: bool) -> Option<HeaderValue> {
    with_attributes(name, value, "Strict", max_age_secs, secure)
}

fn with_attributes(
    name: &str,
    value: &str,
    same_site: &str,
    max_age_secs: u64,
    secure: bool,
) -> Option<HeaderValue> {
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{name}={value}; Path=/; HttpOnly; SameSite={same_site}; Max-Age={max_age_secs}{secure}"
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
        let device = set_strict(secure.device, "d", 60, true).unwrap();
        let device = device.to_str().unwrap();
        assert!(
            device.starts_with("__Host-chataigne_as_device=d;"),
            "{device}"
        );
        for attribute in ["HttpOnly", "SameSite=Strict", "Secure", "Path=/"] {
            assert!(device.contains(attribute), "{device}");
        }
        assert!(
            !set(plain.session, "v", 60, false)
                .unwrap()
                .to_str()
                .unwrap()
                .contains("Secure")
        );
    }
}
