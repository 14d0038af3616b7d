//! The security headers of every answer of a public HTTP listener (the
//! gateway's and the authorization server's): their values, when HSTS
//! applies, and the policies of HTML pages. Each server's stack declares
//! them as layers, one comment per layer.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use http::{HeaderValue, header};

/// `X-Content-Type-Options` of every answer: no content sniffing.
pub fn nosniff() -> HeaderValue {
    HeaderValue::from_static("nosniff")
}

/// `max-age` of HSTS: one year.
pub const HSTS_MAX_AGE_SECS: u64 = 365 * 24 * 3600;

/// The Content-Security-Policy of an HTML page that sets none: nothing
/// loads, nothing frames it, its forms post nowhere.
pub const HTML_CSP: &str =
    "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

/// The `Referrer-Policy` of HTML pages: no referrer leaves them.
pub const REFERRER_POLICY: &str = "no-referrer";

/// The HSTS policy a listener is configured with.
#[derive(Debug, Clone, Copy)]
pub struct Hsts {
    /// Whether the policy covers the host's subdomains too.
    pub include_subdomains: bool,
}

impl Hsts {
    /// The `Strict-Transport-Security` of a listener, when it applies: the
    /// listener serves TLS itself (`serves_tls`) or its public URL is https.
    pub fn header(self, serves_tls: bool, public_url: &str) -> Option<HeaderValue> {
        if !(serves_tls || is_https(public_url)) {
            return None;
        }
        let value = if self.include_subdomains {
            format!("max-age={HSTS_MAX_AGE_SECS}; includeSubDomains")
        } else {
            format!("max-age={HSTS_MAX_AGE_SECS}")
        };
        HeaderValue::from_str(&value).ok()
    }
}

/// Whether `url` is an https URL.
pub fn is_https(url: &str) -> bool {
    url.get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
}

/// Middleware: an HTML answer gets `Referrer-Policy`, `X-Frame-Options:
/// DENY` and a CSP with `frame-ancestors 'none'` (added to the page's own
/// CSP when it lacks the directive, [`HTML_CSP`] when it has none).
pub async fn html_page_policies(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let html = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
        .is_some_and(|value| {
            value
                .trim_start()
                .get(..9)
                .is_some_and(|media| media.eq_ignore_ascii_case("text/html"))
        });
    if !html {
        return response;
    }
    let headers = response.headers_mut();
    let csp = match headers
        .get(header::CONTENT_SECURITY_POLICY)
        .and_then(|value| value.to_str().ok())
    {
        None => Some(HeaderValue::from_static(HTML_CSP)),
        Some(own) if !own.contains("frame-ancestors 'none'") => {
            HeaderValue::from_str(&format!("{own}; frame-ancestors 'none'")).ok()
        }
        Some(_) => None,
    };
    if let Some(csp) = csp {
        headers.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    if !headers.contains_key(header::REFERRER_POLICY) {
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static(REFERRER_POLICY),
        );
    }
    if !headers.contains_key(header::X_FRAME_OPTIONS) {
        headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::routing::get;
    use tower::ServiceExt;

    #[test]
    fn hsts_applies_to_tls_listeners_and_https_public_urls_for_a_year() {
        let host_only = Hsts {
            include_subdomains: false,
        };
        assert_eq!(host_only.header(false, "http://127.0.0.1:8080"), None);
        let https = host_only.header(false, "HTTPS://mcp.example").unwrap();
        assert_eq!(https, "max-age=31536000");
        let with_subdomains = Hsts {
            include_subdomains: true,
        };
        let tls = with_subdomains
            .header(true, "http://127.0.0.1:8443")
            .unwrap();
        assert_eq!(tls, "max-age=31536000; includeSubDomains");
    }

    async fn served(content_type: &'static str, csp: Option<&'static str>) -> Response {
        let app = Router::new()
            .route(
                "/",
                get(move || async move {
                    let mut response = Response::new(Body::from("x"));
                    let headers = response.headers_mut();
                    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
                    if let Some(csp) = csp {
                        headers.insert(
                            header::CONTENT_SECURITY_POLICY,
                            HeaderValue::from_static(csp),
                        );
                    }
                    response
                }),
            )
            .layer(axum::middleware::from_fn(html_page_policies));
        app.oneshot(Request::get("/").body(Body::empty()).unwrap())
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn html_pages_cannot_be_framed_and_send_no_referrer() {
        let bare = served("text/html; charset=utf-8", None).await;
        assert_eq!(bare.headers()[header::CONTENT_SECURITY_POLICY], HTML_CSP);
        assert_eq!(bare.headers()[header::REFERRER_POLICY], "no-referrer");
        assert_eq!(bare.headers()[header::X_FRAME_OPTIONS], "DENY");
        let own = served("text/html", Some("default-src 'self'")).await;
        assert_eq!(
            own.headers()[header::CONTENT_SECURITY_POLICY],
            "default-src 'self'; frame-ancestors 'none'"
        );
        let kept = served("text/html", Some("frame-ancestors 'none'; img-src data:")).await;
        assert_eq!(
            kept.headers()[header::CONTENT_SECURITY_POLICY],
            "frame-ancestors 'none'; img-src data:"
        );
        let json = served("application/json", None).await;
        assert!(
            json.headers()
                .get(header::CONTENT_SECURITY_POLICY)
                .is_none()
        );
    }
}
