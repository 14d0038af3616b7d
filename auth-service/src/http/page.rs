//! The server-rendered pages of the authorization server: sign-in (also
//! after signing out), consent, error and the hand-back page, in the
//! language of [`Lang`]. No scripts, no external resources; every page
//! carries a strict Content-Security-Policy and cannot be framed.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Response};

use chataigne_common::scopes::{Access, Family, Scope};

use super::lang::{Lang, fill};
use crate::oauth::{Account, AuthorizationRequest, ValidatedRequest};

const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'";

/// The product's own stylesheet, inline (no external requests): readable on
/// a phone, touch targets of at least 44 px, a visible focus ring.
const STYLE: &str = "*{box-sizing:border-box}\
html{-webkit-text-size-adjust:100%}\
body{margin:0;background:#f6f3ee;color:#1f1a14;font:1rem/1.5 system-ui,-apple-system,'Segoe UI',\
Roboto,sans-serif}\
main{max-width:30rem;margin:0 auto;padding:1.25rem 1rem 2rem}\
.brand{font-weight:700;color:#6b3410;letter-spacing:.02em;margin:0 0 1rem}\
.card{background:#fff;border:1px solid #e2d9cc;border-radius:.75rem;padding:1.25rem}\
h1{font-size:1.4rem;line-height:1.25;margin:0 0 .75rem}\
h2{font-size:1.05rem;margin:1.25rem 0 .25rem}\
p{margin:.5rem 0}ul{padding-left:1.25rem;margin:.25rem 0}li{margin:.3rem 0}\
label{display:block;font-weight:600;margin:1rem 0 .3rem}\
input[type=email],input[type=password]{width:100%;min-height:44px;padding:.6rem .75rem;\
font:inherit;border:1px solid #8a7f72;border-radius:.5rem;background:#fff;color:inherit}\
button,.button{display:inline-block;min-height:44px;min-width:44px;padding:.6rem 1.25rem;\
font:inherit;font-weight:600;border-radius:.5rem;border:2px solid #6b3410;cursor:pointer;\
text-decoration:none;text-align:center}\
.primary{background:#6b3410;color:#fff}.secondary{background:#fff;color:#6b3410}\
.actions{display:flex;flex-wrap:wrap;gap:.75rem;margin-top:1.25rem}.actions button{flex:1 1 8rem}\
a{color:#6b3410}\
:focus-visible{outline:3px solid #1a5fb4;outline-offset:2px}\
.error{color:#8f1d14;background:#fdecea;border-left:4px solid #8f1d14;padding:.6rem .75rem;\
border-radius:.25rem}\
.notice{background:#eef4ec;border-left:4px solid #1d5e20;padding:.6rem .75rem;border-radius:.25rem}\
.scope{color:#5c544b;font-size:.85rem}\
.warning{color:#5c2f00;background:#fff4e5;border-left:4px solid #b35c00;padding:.6rem .75rem;\
border-radius:.25rem}\
.verified{color:#1d5e20}\
.group{border-top:1px solid #e2d9cc;margin-top:1rem}\
.note{color:#5c544b;font-size:.95rem}\
.account{display:flex;flex-wrap:wrap;align-items:center;justify-content:space-between;gap:.5rem;\
background:#f6f3ee;border-radius:.5rem;padding:.5rem .75rem;margin-bottom:1rem}\
.account form{margin:0}\
.link{background:none;border:none;color:#6b3410;text-decoration:underline;padding:.6rem .25rem;\
font-weight:600}\
.detail{color:#5c544b;font-size:.85rem;overflow-wrap:anywhere}";

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
    fn who(&self, lang: Lang) -> String {
        match (&self.publisher_host, self.verified) {
            (Some(host), false) if !self.name.contains(host.as_str()) => format!(
                "<strong id=\"client\">{}</strong> {}",
                escape(host),
                fill(&escape(lang.messages().calling_itself), &escape(&self.name))
            ),
            (Some(host), false) => format!("<strong id=\"client\">{}</strong>", escape(host)),
            _ => format!("<strong id=\"client\">{}</strong>", escape(&self.name)),
        }
    }

    /// The paragraphs about the client's identity and the redirect host.
    fn facts(&self, lang: Lang) -> String {
        let m = lang.messages();
        let published = self
            .publisher_host
            .as_ref()
            .map_or_else(String::new, |host| {
                format!(
                    " {}",
                    fill(
                        &escape(m.published_at),
                        &format!("<strong id=\"client-origin\">{}</strong>", escape(host))
                    )
                )
            });
        let identity = if self.registered {
            format!(
                "<p id=\"client-identity\" class=\"verified\">{}</p>",
                escape(m.registered)
            )
        } else if self.verified {
            format!(
                "<p id=\"client-identity\" class=\"verified\">{}{published}</p>",
                escape(m.trusted)
            )
        } else {
            format!(
                "<p id=\"client-identity\" class=\"warning\"><strong>{}</strong> {}{published} {}</p>",
                escape(m.unverified),
                escape(m.unverified_detail),
                escape(m.continue_if_trusted)
            )
        };
        format!(
            "{identity}<p id=\"redirect-host\">{}</p>",
            fill(
                &escape(m.goes_back_to),
                &format!("<strong>{}</strong>", escape(&self.redirect_host))
            )
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
pub fn render(lang: Lang, status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"{}\"><head><meta charset=\"utf-8\">\
<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{}</title>\
<style>{STYLE}</style></head><body><main><p class=\"brand\" aria-hidden=\"true\">Chataigne</p>\
<div class=\"card\">{body}</div></main></body></html>",
        lang.code(),
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
    headers.insert(
        header::CONTENT_LANGUAGE,
        HeaderValue::from_static(lang.code()),
    );
    headers.insert(header::VARY, HeaderValue::from_static("Accept-Language"));
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
        ("ui_locales", &request.ui_locales),
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

/// What the sign-in page says above its form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignInNotice {
    None,
    /// The e-mail or the password did not match.
    WrongPassword,
    /// The browser just signed out to switch account.
    SignedOut,
}

/// The sign-in page; `email` is kept in its field after a failure.
pub fn sign_in(
    lang: Lang,
    request: &AuthorizationRequest,
    csrf: &str,
    client: &ClientView,
    notice: SignInNotice,
    email: &str,
) -> Response {
    let m = lang.messages();
    let (status, message) = match notice {
        SignInNotice::WrongPassword => (
            StatusCode::UNAUTHORIZED,
            format!("<p class=\"error\">{}</p>", escape(m.wrong_password)),
        ),
        SignInNotice::SignedOut => (
            StatusCode::OK,
            format!("<p class=\"notice\">{}</p>", escape(m.signed_out)),
        ),
        SignInNotice::None => (StatusCode::OK, String::new()),
    };
    sign_in_page(lang, request, csrf, client, status, &message, email)
}

/// The sign-in page refused by a brute-force limit: 429 with `Retry-After`.
pub fn sign_in_limited(
    lang: Lang,
    request: &AuthorizationRequest,
    csrf: &str,
    client: &ClientView,
    retry_after_secs: u64,
    email: &str,
) -> Response {
    let m = lang.messages();
    let minutes = retry_after_secs.div_ceil(60);
    let when = if minutes <= 1 {
        escape(m.a_minute)
    } else {
        fill(&escape(m.minutes), &minutes.to_string())
    };
    let error = format!(
        "<p class=\"error\">{}</p>",
        fill(&escape(m.too_many_attempts), &when)
    );
    let mut response = sign_in_page(
        lang,
        request,
        csrf,
        client,
        StatusCode::TOO_MANY_REQUESTS,
        &error,
        email,
    );
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(retry_after_secs));
    response
}

fn sign_in_page(
    lang: Lang,
    request: &AuthorizationRequest,
    csrf: &str,
    client: &ClientView,
    status: StatusCode,
    message: &str,
    email: &str,
) -> Response {
    let m = lang.messages();
    let failed = status != StatusCode::OK;
    let invalid = if failed {
        " aria-invalid=\"true\" aria-describedby=\"error\""
    } else {
        ""
    };
    // The e-mail is kept after a failure; the password never is.
    let (email_focus, password_focus) = match (failed, email.is_empty()) {
        (true, false) => ("", " autofocus"),
        _ => (" autofocus", ""),
    };
    let body = format!(
        "<h1>{}</h1><p>{}</p>{}\
<div id=\"error\" role=\"alert\" aria-live=\"assertive\">{message}</div>\
<form method=\"post\" action=\"/authorize/login\" id=\"sign-in\">\
<input type=\"hidden\" name=\"csrf\" value=\"{}\">{}\
<label for=\"email\">{}</label><input type=\"email\" id=\"email\" name=\"email\" \
value=\"{}\" autocomplete=\"username\" inputmode=\"email\" required{invalid}{email_focus}>\
<label for=\"password\">{}</label><input type=\"password\" id=\"password\" \
name=\"password\" autocomplete=\"current-password\" required{invalid}{password_focus}>\
<div class=\"actions\"><button type=\"submit\" id=\"sign-in-button\" class=\"primary\">{}</button>\
</div></form>",
        escape(m.sign_in_heading),
        fill(&escape(m.asks_access), &client.who(lang)),
        client.facts(lang),
        escape(csrf),
        hidden_request(request),
        escape(m.email),
        escape(email.get(..email.len().min(512)).unwrap_or_default()),
        escape(m.password),
        escape(m.sign_in_button),
    );
    render(lang, status, m.sign_in_title, &body)
}

/// The label of a scope in `lang`, or "Other access" for one the product does not know.
fn scope_label(lang: Lang, scope: &str) -> &'static str {
    lang.scope_label(scope)
        .unwrap_or(lang.messages().other_access)
}

/// One group of scopes on the consent page, if any.
fn scope_group(
    lang: Lang,
    id: &str,
    heading: &str,
    note: Option<&str>,
    scopes: &[&String],
) -> String {
    if scopes.is_empty() {
        return String::new();
    }
    let items: String = scopes
        .iter()
        .map(|scope| {
            format!(
                "<li>{} <span class=\"scope\">({})</span></li>",
                escape(scope_label(lang, scope)),
                escape(scope)
            )
        })
        .collect();
    let note = note.map_or_else(String::new, |note| {
        format!("<p class=\"note\">{}</p>", escape(note))
    });
    format!(
        "<section class=\"group\" id=\"{id}\" aria-labelledby=\"{id}-heading\">\
<h2 id=\"{id}-heading\">{}</h2>{note}<ul>{items}</ul></section>",
        escape(heading)
    )
}

/// The consent page: who is signed in (with a way to switch account), who
/// asks, and what for: reads, writes (which reach customers or change what
/// the restaurant serves) and platform administration in their own groups,
/// and the scopes the account's roles cannot use, left out of the grant.
pub fn consent(
    lang: Lang,
    request: &AuthorizationRequest,
    csrf: &str,
    client: &ClientView,
    account: &Account,
    scopes: &[String],
) -> Response {
    let m = lang.messages();
    let family = |scope: &str| Scope::find(scope).map(|scope| (scope.family, scope.access));
    let usable: Vec<&String> = scopes.iter().filter(|s| account.can_use(s)).collect();
    let reads: Vec<&String> = usable
        .iter()
        .copied()
        .filter(|s| {
            matches!(
                family(s),
                Some((Family::Identity, _)) | Some((Family::Business, Access::Read))
            )
        })
        .collect();
    let writes: Vec<&String> = usable
        .iter()
        .copied()
        .filter(|s| family(s) == Some((Family::Business, Access::Write)))
        .collect();
    let admin: Vec<&String> = usable
        .iter()
        .copied()
        .filter(|s| matches!(family(s), Some((Family::Admin, _))))
        .collect();
    let refused: Vec<&String> = scopes.iter().filter(|s| !account.can_use(s)).collect();
    let body = format!(
        "<div class=\"account\" id=\"account\"><p>{} <strong id=\"account-name\">{}</strong> \
<span id=\"account-email\">{}</span></p>\
<form method=\"post\" action=\"/authorize/switch\" id=\"switch\">\
<input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">{hidden}\
<button type=\"submit\" class=\"link\" id=\"switch-account\">{}</button></form></div>\
<h1>{}</h1>{}<p>{}</p>{}{}{}{}<p class=\"note\">{}</p>\
<form method=\"post\" action=\"/authorize/consent\" id=\"consent\">\
<input type=\"hidden\" name=\"csrf\" value=\"{csrf}\">{hidden}\
<div class=\"actions\">\
<button type=\"submit\" name=\"decision\" value=\"approve\" id=\"approve\" class=\"primary\">{}</button>\
<button type=\"submit\" name=\"decision\" value=\"deny\" id=\"deny\" class=\"secondary\">{}</button>\
</div></form>",
        escape(m.signed_in_as),
        escape(&account.name),
        escape(&account.email),
        escape(m.switch_account),
        escape(m.consent_heading),
        client.facts(lang),
        fill(&escape(m.asks_permission), &client.who(lang)),
        scope_group(lang, "scopes-read", m.reads_heading, None, &reads),
        scope_group(
            lang,
            "scopes-write",
            m.writes_heading,
            Some(m.writes_note),
            &writes
        ),
        scope_group(
            lang,
            "scopes-admin",
            m.admin_heading,
            Some(m.admin_note),
            &admin
        ),
        scope_group(
            lang,
            "scopes-not-granted",
            m.not_usable_heading,
            Some(m.not_usable_note),
            &refused
        ),
        escape(m.acts_within_role),
        escape(m.allow),
        escape(m.deny),
        csrf = escape(csrf),
        hidden = hidden_request(request),
    );
    render(lang, StatusCode::OK, m.consent_title, &body)
}

/// Why a request cannot go on, in the words of the error page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The client is unknown, disabled or may not use this flow.
    Client,
    /// The request itself is refused (redirect URI, parameters).
    Request,
    /// The form's token no longer verifies.
    Expired,
    /// The server cannot answer now.
    Unavailable,
}

/// The error page: what happened in plain words, what to do next, and the
/// technical reason (for the client's developer) when there is one.
pub fn error(lang: Lang, status: StatusCode, kind: ErrorKind, detail: Option<&str>) -> Response {
    let m = lang.messages();
    let what = match kind {
        ErrorKind::Client => m.error_client,
        ErrorKind::Request => m.error_request,
        ErrorKind::Expired => m.error_expired,
        ErrorKind::Unavailable => m.error_unavailable,
    };
    let detail = detail.map_or_else(String::new, |detail| {
        format!(
            "<p class=\"detail\">{} <span id=\"error-detail\">{}</span></p>",
            escape(m.error_detail),
            escape(detail)
        )
    });
    let body = format!(
        "<h1>{}</h1><div role=\"alert\" aria-live=\"assertive\"><p id=\"error\">{}</p></div>\
<p>{}</p>{detail}",
        escape(m.error_heading),
        escape(what),
        escape(m.error_next_step),
    );
    render(lang, status, m.error_title, &body)
}

/// Sends the browser back to the client. A page rather than a redirect: the
/// consent form's `form-action 'self'` policy would block a redirect to
/// another origin in some browsers.
pub fn hand_back(lang: Lang, url: &str) -> Response {
    let m = lang.messages();
    let body = format!(
        "<meta http-equiv=\"refresh\" content=\"0;url={0}\"><h1>{1}</h1><p>\
<a id=\"continue\" class=\"button primary\" href=\"{0}\">{2}</a></p>",
        escape(url),
        escape(m.hand_back_heading),
        escape(m.hand_back_continue)
    );
    render(lang, StatusCode::OK, m.hand_back_title, &body)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unverified() -> ClientView {
        ClientView {
            name: "Google Gemini".into(),
            registered: false,
            verified: false,
            publisher_host: Some("evil.example".into()),
            redirect_host: "evil.example:8443".into(),
        }
    }

    fn account() -> Account {
        Account {
            user_id: "u1".into(),
            name: "Camille Martin".into(),
            email: "camille@bistrot.example".into(),
            platform_admin: false,
            permissions: ["orders.read", "orders.write"]
                .map(str::to_owned)
                .into_iter()
                .collect(),
        }
    }

    fn request() -> AuthorizationRequest {
        AuthorizationRequest {
            client_id: Some("demo".into()),
            scope: Some("openid orders.read".into()),
            ..AuthorizationRequest::default()
        }
    }

    async fn text(response: Response) -> String {
        let bytes = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .unwrap();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    /// Every page in `lang`, each with everything it can say.
    async fn every_page(lang: Lang) -> Vec<String> {
        let scopes: Vec<String> = [
            "openid",
            "orders.read",
            "orders.write",
            "catalog.updateAvailability",
            "admin.locations.create",
            "retired.scope",
        ]
        .map(str::to_owned)
        .to_vec();
        let admin = Account {
            platform_admin: true,
            ..account()
        };
        let trusted = ClientView {
            verified: true,
            ..unverified()
        };
        let registered = ClientView {
            registered: true,
            verified: true,
            publisher_host: None,
            ..unverified()
        };
        let responses = vec![
            sign_in(lang, &request(), "t", &unverified(), SignInNotice::None, ""),
            sign_in(
                lang,
                &request(),
                "t",
                &trusted,
                SignInNotice::WrongPassword,
                "a@b.example",
            ),
            sign_in(
                lang,
                &request(),
                "t",
                &registered,
                SignInNotice::SignedOut,
                "",
            ),
            sign_in_limited(lang, &request(), "t", &registered, 30, ""),
            sign_in_limited(lang, &request(), "t", &registered, 600, ""),
            consent(lang, &request(), "t", &unverified(), &account(), &scopes),
            consent(lang, &request(), "t", &registered, &admin, &scopes),
            error(lang, StatusCode::BAD_REQUEST, ErrorKind::Client, Some("x")),
            error(lang, StatusCode::BAD_REQUEST, ErrorKind::Request, None),
            error(lang, StatusCode::FORBIDDEN, ErrorKind::Expired, None),
            error(
                lang,
                StatusCode::SERVICE_UNAVAILABLE,
                ErrorKind::Unavailable,
                None,
            ),
            hand_back(lang, "http://127.0.0.1:1/cb?code=c"),
        ];
        let mut pages = Vec::new();
        for response in responses {
            assert_eq!(response.headers()[header::CONTENT_LANGUAGE], lang.code());
            pages.push(text(response).await);
        }
        pages
    }

    /// The pieces of a text as they appear in a page (around its `{}`).
    fn pieces(text: &str) -> Vec<String> {
        text.split("{}")
            .map(|piece| escape(piece.trim_matches(|c: char| c.is_whitespace() || c == '.')))
            .filter(|piece| piece.chars().filter(|c| c.is_alphabetic()).count() >= 4)
            .collect()
    }

    /// Whether `piece` occurs in `page` as whole words.
    fn contains_words(page: &str, piece: &str) -> bool {
        page.match_indices(piece).any(|(at, _)| {
            let before = page[..at].chars().next_back();
            let after = page[at + piece.len()..].chars().next();
            !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
        })
    }

    /// The one word both languages write alike.
    const SHARED: &[&str] = &["minutes"];

    #[tokio::test]
    async fn every_page_speaks_one_language_with_no_untranslated_text() {
        for (lang, other) in [(Lang::Fr, Lang::En), (Lang::En, Lang::Fr)] {
            let pages = every_page(lang).await;
            let all = pages.concat();
            for page in &pages {
                assert!(
                    page.starts_with(&format!("<!doctype html><html lang=\"{}\">", lang.code())),
                    "{page}"
                );
            }
            // Everything the table says in the other language, scope labels included.
            let foreign = other.messages().all().into_iter().chain(
                chataigne_common::scopes::SCOPES
                    .iter()
                    .map(|scope| match other {
                        Lang::En => scope.label,
                        Lang::Fr => scope.label_fr,
                    }),
            );
            for text in foreign {
                for piece in pieces(text) {
                    if SHARED.contains(&piece.as_str()) {
                        continue;
                    }
                    assert!(
                        !contains_words(&all, &piece),
                        "{lang:?} pages contain the {other:?} text {piece:?}"
                    );
                }
            }
            // And every text of its own table is shown on some page.
            for text in lang.messages().all() {
                for piece in pieces(text) {
                    assert!(all.contains(&piece), "{lang:?}: {piece:?} never shown");
                }
            }
        }
        let french = every_page(Lang::Fr).await.concat();
        assert!(
            french.contains("Changer le statut des commandes"),
            "{french}"
        );
        assert!(french.contains("Se connecter à Chataigne"), "{french}");
    }

    #[tokio::test]
    async fn consent_shows_the_account_and_groups_reads_writes_admin_and_what_the_role_cannot_use()
    {
        let scopes: Vec<String> = [
            "openid",
            "orders.read",
            "catalog.read",
            "orders.write",
            "admin.locations.create",
        ]
        .map(str::to_owned)
        .to_vec();
        let page = text(consent(
            Lang::En,
            &request(),
            "t",
            &unverified(),
            &account(),
            &scopes,
        ))
        .await;
        assert!(page.contains("<strong id=\"account-name\">Camille Martin</strong>"));
        assert!(page.contains("camille@bistrot.example"));
        assert!(
            page.contains("action=\"/authorize/switch\"")
                && page.contains("Not you? Switch account")
        );
        let section = |id: &str| {
            let start = page
                .find(&format!("<section class=\"group\" id=\"{id}\""))
                .unwrap();
            let end = start + page[start..].find("</section>").unwrap();
            page[start..end].to_owned()
        };
        let reads = section("scopes-read");
        assert!(reads.contains("(orders.read)") && reads.contains("(openid)"));
        assert!(!reads.contains("orders.write"));
        let writes = section("scopes-write");
        assert!(writes.contains("(orders.write)"), "{writes}");
        assert!(writes.contains("reach your customers or change what your restaurant serves"));
        let refused = section("scopes-not-granted");
        assert!(refused.contains("(catalog.read)") && refused.contains("(admin.locations.create)"));
        assert!(!page.contains("id=\"scopes-admin\""));
        let admin = Account {
            platform_admin: true,
            ..account()
        };
        let page = text(consent(
            Lang::En,
            &request(),
            "t",
            &unverified(),
            &admin,
            &scopes,
        ))
        .await;
        assert!(page.contains("id=\"scopes-admin\""));
        assert!(page.contains("Chataigne platform administrator"));
    }

    #[tokio::test]
    async fn a_failed_sign_in_keeps_the_email_and_announces_the_error() {
        let page = text(sign_in(
            Lang::En,
            &request(),
            "t",
            &unverified(),
            SignInNotice::WrongPassword,
            "chef\"@bistrot.example",
        ))
        .await;
        assert!(
            page.contains("value=\"chef&quot;@bistrot.example\""),
            "{page}"
        );
        assert!(page.contains("aria-live=\"assertive\""));
        assert!(
            page.contains("<label for=\"email\">") && page.contains("<label for=\"password\">")
        );
        assert!(!page.contains("name=\"password\" value"));
    }

    #[test]
    fn every_known_scope_has_a_label_in_each_language_and_text_is_escaped() {
        for scope in chataigne_common::scopes::all() {
            for lang in Lang::ALL {
                assert_ne!(
                    scope_label(lang, scope),
                    lang.messages().other_access,
                    "{scope}"
                );
            }
        }
        assert_eq!(
            escape("<a href=\"x\">'&"),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;"
        );
    }

    #[test]
    fn an_unverified_client_is_named_by_its_host_and_marked() {
        let view = unverified();
        let who = view.who(Lang::En);
        assert!(
            who.starts_with("<strong id=\"client\">evil.example</strong>"),
            "{who}"
        );
        assert!(
            who.contains("calling itself \u{201c}Google Gemini\u{201d}"),
            "{who}"
        );
        let facts = view.facts(Lang::En);
        assert!(facts.contains("Unverified application"), "{facts}");
        assert!(facts.contains("evil.example:8443"), "{facts}");
        assert!(view.facts(Lang::Fr).contains("Application non vérifiée"));
        let trusted = ClientView {
            verified: true,
            ..view.clone()
        };
        assert!(
            trusted.facts(Lang::En).contains("Trusted by Chataigne")
                && trusted.facts(Lang::En).contains("evil.example")
        );
        let registered = ClientView {
            registered: true,
            verified: true,
            publisher_host: None,
            ..view
        };
        assert_eq!(
            registered.who(Lang::En),
            "<strong id=\"client\">Google Gemini</strong>"
        );
        assert!(
            registered
                .facts(Lang::En)
                .contains("Registered with Chataigne")
        );
    }

    #[test]
    fn pages_carry_the_security_headers() {
        let response = error(
            Lang::Fr,
            StatusCode::BAD_REQUEST,
            ErrorKind::Request,
            Some("<script>"),
        );
        let csp = response.headers()[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap();
        assert_eq!(csp, CSP);
        assert_eq!(response.headers()[header::X_FRAME_OPTIONS], "DENY");
    }
}
