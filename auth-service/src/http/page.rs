//! The server-rendered pages of the authorization server: sign-in, consent,
//! error and the hand-back page. No scripts, no external resources; every
//! page carries a strict Content-Security-Policy and cannot be framed.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

use crate::oauth::{AuthorizationRequest, ValidatedRequest};

const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'";

const STYLE: &str = "body{font-family:system-ui,sans-serif;max-width:32rem;margin:3rem auto;\
padding:0 1rem;color:#222}h1{font-size:1.4rem}ul{padding-left:1.2rem}li{margin:.3rem 0}\
label{display:block;margin:.8rem 0 .2rem}input[type=email],input[type=password]{width:100%;\
padding:.5rem;box-sizing:border-box}button{padding:.5rem 1.2rem;margin:1rem .5rem 0 0}\
.error{color:#a00}.scope{color:#555;font-size:.85rem}\
.warning{color:#6b3a00;background:#fff4e5;padding:.6rem;border-radius:.3rem}\
.verified{color:#1d5e20}";

/// What the pages say about the client asking: its name, whether an
/// operator vouched for it, the host its metadata document comes from, and
/// where the browser goes back to.
#[derive(Debug, Clone)]
pub struct ClientView {
    pub name: String,
    /// Registered by an operator (`clients add`, the demo seed).
    pub registered: bool,
    /// Registered, or trusted by the configured policy.
    pub verified: bool,
    pub publisher_host: Option<String>,
    pub redirect_host: String,
}

impl ClientView {
    pub fn of(request: &ValidatedRequest) -> ClientView {
        ClientView {
            name: request.client.name.clone(),
            registered: request.client.origin == "registered",
            verified: request.verified,
            publisher_host: request.publisher_host(),
            redirect_host: request.redirect_host(),
        }
    }

    /// Who asks, as the pages name it: the verified name, or for an
    /// unverified client the host it comes from first and its self-chosen
    /// name second.
    fn who(&self) -> String {
        match (&self.publisher_host, self.verified) {
            (Some(host), false) if !self.name.contains(host.as_str()) => format!(
                "<strong id=\"client\">{}</strong> (calling itself \u{201c}{}\u{201d})",
                escape(host),
                escape(&self.name)
            ),
            (Some(host), false) => format!("<strong id=\"client\">{}</strong>", escape(host)),
            _ => format!("<strong id=\"client\">{}</strong>", escape(&self.name)),
        }
    }

    /// The paragraphs about the client's identity and the redirect host.
    fn facts(&self) -> String {
        let published = self
            .publisher_host
            .as_ref()
            .map_or_else(String::new, |host| {
                format!(
                    " Its description is published at <strong id=\"client-origin\">{}</strong>.",
                    escape(host)
                )
            });
        let identity = if self.registered {
            "<p id=\"client-identity\" class=\"verified\">Registered with Chataigne.</p>".to_owned()
        } else if self.verified {
            format!(
                "<p id=\"client-identity\" class=\"verified\">Trusted by Chataigne's \
administrators.{published}</p>"
            )
        } else {
            format!(
                "<p id=\"client-identity\" class=\"warning\"><strong>Unverified application.</strong> \
Chataigne has not checked who publishes it, and its name is the one it gives itself.{published} \
Continue only if you trust this site.</p>"
            )
        };
        format!(
            "{identity}<p id=\"redirect-host\">Afterwards you go back to <strong>{}</strong>.</p>",
            escape(&self.redirect_host)
        )
    }
}

/// Escapes text for HTML content and attribute values.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// A page with the security headers.
pub fn render(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width\"><title>{}</title>\
<style>{STYLE}</style></head><body>{body}</body></html>",
        escape(title)
    );
    let mut response = (status, Html(html)).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// The authorization request as hidden form fields.
fn hidden_request(request: &AuthorizationRequest) -> String {
    let fields = [
        ("response_type", &request.response_type),
        ("client_id", &request.client_id),
        ("redirect_uri", &request.redirect_uri),
        ("scope", &request.scope),
        ("state", &request.state),
        ("code_challenge", &request.code_challenge),
        ("code_challenge_method", &request.code_challenge_method),
        ("resource", &request.resource),
    ];
    fields
        .iter()
        .filter_map(|(name, value)| {
            value.as_ref().map(|value| {
                format!(
                    "<input type=\"hidden\" name=\"{name}\" value=\"{}\">",
                    escape(value)
                )
            })
        })
        .collect()
}

pub fn sign_in(
    request: &AuthorizationRequest,
    csrf: &str,
    client: &ClientView,
    failed: bool,
) -> Response {
    let (status, error) = if failed {
        (
            StatusCode::UNAUTHORIZED,
            "<p class=\"error\" id=\"error\">The email or password is not correct.</p>".to_owned(),
        )
    } else {
        (StatusCode::OK, String::new())
    };
    sign_in_page(request, csrf, client, status, &error)
}

/// The sign-in page refused by a brute-force limit: 429 with `Retry-After`.
pub fn sign_in_limited(
    request: &AuthorizationRequest,
    csrf: &str,
    client: &ClientView,
    retry_after_secs: u64,
) -> Response {
    let minutes = retry_after_secs.div_ceil(60);
    let when = if minutes <= 1 {
        "a minute".to_owned()
    } else {
        format!("{minutes} minutes")
    };
    let error = format!(
        "<p class=\"error\" id=\"error\">Too many sign-in attempts. Wait {when} and try again.</p>"
    );
    let mut response = sign_in_page(request, csrf, client, StatusCode::TOO_MANY_REQUESTS, &error);
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    response
}

fn sign_in_page(
    request: &AuthorizationRequest,
    csrf: &str,
    client: &ClientView,
    status: StatusCode,
    error: &str,
) -> Response {
    let body = format!(
        "<h1>Sign in to Chataigne</h1><p>{} asks to access your Chataigne \
account.</p>{}{error}<form method=\"post\" action=\"/authorize/login\" id=\"sign-in\">\
<input type=\"hidden\" name=\"csrf\" value=\"{}\">{}\
<label for=\"email\">Email</label><input type=\"email\" id=\"email\" name=\"email\" \
autocomplete=\"username\" required>\
<label for=\"password\">Password</label><input type=\"password\" id=\"password\" \
name=\"password\" autocomplete=\"current-password\" required>\
<button type=\"submit\" id=\"sign-in-button\">Sign in</button></form>",
        client.who(),
        client.facts(),
        escape(csrf),
        hidden_request(request)
    );
    render(status, "Sign in", &body)
}

pub fn consent(
    request: &AuthorizationRequest,
    csrf: &str,
    client: &ClientView,
    scopes: &[String],
) -> Response {
    let items: String = scopes
        .iter()
        .map(|scope| {
            format!(
                "<li>{} <span class=\"scope\">({})</span></li>",
                escape(label(scope)),
                escape(scope)
            )
        })
        .collect();
    let body = format!(
        "<h1>Allow access?</h1>{}<p>{} asks for permission to:</p>\
<ul id=\"scopes\">{items}</ul><p>It acts only where your own role allows, and you can \
withdraw this access at any time.</p>\
<form method=\"post\" action=\"/authorize/consent\" id=\"consent\">\
<input type=\"hidden\" name=\"csrf\" value=\"{}\">{}\
<button type=\"submit\" name=\"decision\" value=\"approve\" id=\"approve\">Allow</button>\
<button type=\"submit\" name=\"decision\" value=\"deny\" id=\"deny\">Deny</button></form>",
        client.facts(),
        client.who(),
        escape(csrf),
        hidden_request(request)
    );
    render(StatusCode::OK, "Allow access", &body)
}

pub fn error(status: StatusCode, description: &str) -> Response {
    let body = format!(
        "<h1>This request cannot be completed</h1><p id=\"error\">{}</p>\
<p>Return to the application and start again.</p>",
        escape(description)
    );
    render(status, "Authorization error", &body)
}

/// Sends the browser back to the client. A page rather than a redirect: the
/// consent form's `form-action 'self'` policy would block a redirect to
/// another origin in some browsers.
pub fn hand_back(url: &str) -> Response {
    let body = format!(
        "<meta http-equiv=\"refresh\" content=\"0;url={0}\"><h1>Returning to the \
application…</h1><p><a id=\"continue\" href=\"{0}\">Continue</a></p>",
        escape(url)
    );
    render(StatusCode::OK, "Returning to the application", &body)
}

/// A short description of a scope for people: its label in the scope table,
/// or "Other access" for a scope the product does not know.
pub fn label(scope: &str) -> &'static str {
    chataigne_common::scopes::label(scope).unwrap_or("Other access")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_scope_has_a_label_and_text_is_escaped() {
        for scope in chataigne_common::scopes::all() {
            assert_ne!(label(scope), "Other access", "{scope}");
        }
        assert_eq!(
            escape("<a href=\"x\">'&"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;"
        );
    }

    #[test]
    fn an_unverified_client_is_named_by_its_host_and_marked() {
        let view = ClientView {
            name: "Google Gemini".into(),
            registered: false,
            verified: false,
            publisher_host: Some("evil.example".into()),
            redirect_host: "evil.example:8443".into(),
        };
        let who = view.who();
        assert!(
            who.starts_with("<strong id=\"client\">evil.example</strong>"),
            "{who}"
        );
        assert!(
            who.contains("calling itself \u{201c}Google Gemini\u{201d}"),
            "{who}"
        );
        let facts = view.facts();
        assert!(facts.contains("Unverified application"), "{facts}");
        assert!(facts.contains("evil.example:8443"), "{facts}");
        let trusted = ClientView {
            verified: true,
            ..view.clone()
        };
        assert!(
            trusted.facts().contains("Trusted by Chataigne")
                && trusted.facts().contains("evil.example")
        );
        let registered = ClientView {
            registered: true,
            verified: true,
            publisher_host: None,
            ..view
        };
        assert_eq!(
            registered.who(),
            "<strong id=\"client\">Google Gemini</strong>"
        );
        assert!(registered.facts().contains("Registered with Chataigne"));
    }

    #[test]
    fn pages_carry_the_security_headers() {
        let response = error(StatusCode::BAD_REQUEST, "<script>");
        let csp = response.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap();
        assert_eq!(csp, CSP);
        assert_eq!(response.headers()[header::X_FRAME_OPTIONS], "DENY");
    }
}
