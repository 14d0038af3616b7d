//! The sign-in and consent pages as a browser sees them: the language
//! (`ui_locales`, then `Accept-Language`, then English), the signed-in
//! account and "not you? switch account", the grant leaving out what the
//! account's roles cannot use, the e-mail kept after a wrong password.

use chataigne_common::demo::{DEMO_CLIENT_ID, DEMO_PASSWORD};

use crate::oauth_support::{
    Browser, REDIRECT, authorize_query, field, form_of, param, pkce, post_form, token,
};
use crate::support::{Harness, RESOURCE};

const STAFF_EMAIL: &str = "louis.bernard@bistro.example";

/// GETs `path` from `b` with an `Accept-Language` header.
async fn get_in(b: &mut Browser, path: &str, accept_language: &str) -> (u16, String) {
    let cookies = b
        .cookies
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("; ");
    let response = b
        .http
        .get(format!("{}{path}", b.base))
        .header("cookie", cookies)
        .header("accept-language", accept_language)
        .send()
        .await
        .unwrap();
    b.keep(&response);
    let status = response.status().as_u16();
    (status, response.text().await.unwrap())
}

/// Signs `b` in as `email` on the sign-in page `html`; returns the consent page.
async fn consent_page(b: &mut Browser, html: &str, email: &str) -> String {
    let (status, headers, _) = post_form(
        b,
        "/authorize/login",
        &form_of(html, &[("email", email), ("password", DEMO_PASSWORD)]),
    )
    .await;
    assert_eq!(status, 303);
    let location = headers["location"].to_str().unwrap().to_owned();
    let (status, _, consent) = b.get(&location).await;
    assert_eq!(status, 200, "{consent}");
    consent
}

async fn pages_speak_ui_locales_then_accept_language_then_english(h: &Harness) {
    let (_, challenge) = pkce();
    let path = authorize_query(&challenge, "orders.read", "s");
    let mut b = Browser::new(h);
    let (status, french) = get_in(&mut b, &path, "fr-FR,fr;q=0.9,en;q=0.5").await;
    assert_eq!(status, 200);
    assert!(
        french.starts_with("<!doctype html><html lang=\"fr\">"),
        "{french}"
    );
    assert!(french.contains("Se connecter à Chataigne") && !french.contains("Sign in"));
    let (_, english) = get_in(&mut b, &format!("{path}&ui_locales=en-GB"), "fr-FR").await;
    assert!(english.contains("<html lang=\"en\">") && english.contains("Sign in to Chataigne"));
    assert_eq!(
        field(&english, "ui_locales"),
        "en-GB",
        "carried by the form"
    );
    let (_, default) = get_in(&mut b, &path, "de-DE").await;
    assert!(default.contains("<html lang=\"en\">"), "{default}");
    let metadata: serde_json::Value = reqwest::get(format!(
        "{}/.well-known/oauth-authorization-server",
        h.http_url
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    assert_eq!(
        metadata["ui_locales_supported"],
        serde_json::json!(["fr", "en"])
    );
    // The error page too.
    let (status, error) = get_in(&mut b, "/authorize?client_id=nobody", "fr").await;
    assert_eq!(status, 400);
    assert!(
        error.contains("Cette demande ne peut pas aboutir"),
        "{error}"
    );
    assert!(error.contains("Revenez à l&#39;application"), "{error}");
}

async fn a_wrong_password_keeps_the_email_and_says_what_to_do_in_french(h: &Harness) {
    let (_, challenge) = pkce();
    let mut b = Browser::new(h);
    let path = format!(
        "{}&ui_locales=fr",
        authorize_query(&challenge, "orders.read", "s")
    );
    let (_, html) = get_in(&mut b, &path, "en").await;
    let mut form = form_of(&html, &[("email", STAFF_EMAIL), ("password", "wrong")]);
    form.push(("ui_locales".into(), "fr".into()));
    let (status, _, page) = post_form(&mut b, "/authorize/login", &form).await;
    assert_eq!(status, 401);
    assert!(page.contains("<html lang=\"fr\">"), "{page}");
    assert!(page.contains(&format!("value=\"{STAFF_EMAIL}\"")), "{page}");
    assert!(page.contains("aria-live=\"assertive\""));
    assert!(
        page.contains("est incorrect. Vérifiez-les et réessayez."),
        "{page}"
    );
}

async fn consent_names_the_account_and_the_grant_leaves_out_what_its_role_cannot_use(h: &Harness) {
    // Staff hold orders.* but not customers.read.
    let (verifier, challenge) = pkce();
    let mut b = Browser::new(h);
    let scope = "orders.read customers.read";
    let (_, _, html) = b.get(&authorize_query(&challenge, scope, "s")).await;
    let consent = consent_page(&mut b, &html, STAFF_EMAIL).await;
    assert!(
        consent.contains("<strong id=\"account-name\">Louis Bernard</strong>"),
        "{consent}"
    );
    assert!(consent.contains(STAFF_EMAIL) && consent.contains("Not you? Switch account"));
    let refused = &consent[consent.find("id=\"scopes-not-granted\"").unwrap()..];
    assert!(refused.contains("(customers.read)"), "{consent}");
    let (status, _, back) = post_form(
        &mut b,
        "/authorize/consent",
        &form_of(&consent, &[("decision", "approve")]),
    )
    .await;
    assert_eq!(status, 200);
    let back = field(&back.replace("href=", "name=\"href\" value="), "href");
    let code = param(&back, "code").unwrap();
    let (status, body) = token(
        h,
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("code_verifier", &verifier),
            ("client_id", DEMO_CLIENT_ID),
            ("resource", RESOURCE),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["scope"], "orders.read", "{body}");
}

async fn switching_account_ends_the_session_and_shows_the_sign_in_page(h: &Harness) {
    let (_, challenge) = pkce();
    let mut b = Browser::new(h);
    let path = authorize_query(&challenge, "orders.read", "s");
    let (_, _, html) = b.get(&path).await;
    let consent = consent_page(&mut b, &html, STAFF_EMAIL).await;
    let old_session = b.cookies.clone();
    // A token that is not this form's is refused.
    let mut forged = form_of(&consent, &[]);
    forged.retain(|(k, _)| k != "csrf");
    forged.push(("csrf".into(), "forged".into()));
    let (status, _, _) = post_form(&mut b, "/authorize/switch", &forged).await;
    assert_eq!(status, 403);
    let (status, _, signed_out) =
        post_form(&mut b, "/authorize/switch", &form_of(&consent, &[])).await;
    assert_eq!(status, 200, "{signed_out}");
    assert!(signed_out.contains("You are signed out"), "{signed_out}");
    assert!(signed_out.contains("id=\"sign-in\""));
    // The session is over on the server, not only forgotten by the browser.
    b.cookies = old_session;
    let (status, _, again) = b.get(&path).await;
    assert_eq!(status, 200);
    assert!(
        again.contains("id=\"sign-in\"") && !again.contains("id=\"approve\""),
        "{again}"
    );
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Harness::start(crate::support::Backend::Sqlite)
        .await
        .expect("SQLite is always available"),
    postgres: Harness::start(crate::support::Backend::Postgres).await,
    run: |harness| (&harness),
    finish: harness.finish().await,
    tests: [
        pages_speak_ui_locales_then_accept_language_then_english,
        a_wrong_password_keeps_the_email_and_says_what_to_do_in_french,
        consent_names_the_account_and_the_grant_leaves_out_what_its_role_cannot_use,
        switching_account_ends_the_session_and_shows_the_sign_in_page,
    ],
}

/// The technical reason an error page gives.
fn error_detail(html: &str) -> String {
    let marker = "id=\"error-detail\">";
    let start = html.find(marker).expect("an error page") + marker.len();
    let end = html[start..].find("</span>").unwrap() + start;
    html[start..end].replace("&#39;", "'")
}

fn with_redirect(path: &str, redirect_uri: &str) -> String {
    path.replace(
        &url::form_urlencoded::Serializer::new(String::new())
            .append_pair("redirect_uri", REDIRECT)
            .finish(),
        &url::form_urlencoded::Serializer::new(String::new())
            .append_pair("redirect_uri", redirect_uri)
            .finish(),
    )
}

/// Refusals say the real reason: an http:// metadata document, a redirect
/// URI the demo client does not take (any loopback port, but the path
/// `/callback` unless the embedded-mode switch is on).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refusals_say_the_real_reason_and_the_demo_client_takes_any_loopback_port() {
    // Production defaults: no http:// metadata documents.
    let h = Harness::start_with(crate::support::Backend::Sqlite, |c| {
        c.oauth.client_metadata_allow_http_loopback = false;
    })
    .await
    .unwrap();
    let (_, challenge) = pkce();
    let path = authorize_query(&challenge, "orders.read", "s");
    let mut b = Browser::new(&h);
    let document = path.replace(
        &format!("client_id={DEMO_CLIENT_ID}"),
        "client_id=http%3A%2F%2F127.0.0.1%3A6274%2Fclient.json",
    );
    let (status, _, html) = b.get(&document).await;
    assert_eq!(status, 400);
    assert!(
        error_detail(&html).contains("http:// URL on loopback"),
        "{html}"
    );
    let unknown = path.replace(&format!("client_id={DEMO_CLIENT_ID}"), "client_id=nobody");
    let (_, _, html) = b.get(&unknown).await;
    assert!(
        error_detail(&html).contains("not registered here"),
        "{html}"
    );
    // Any loopback port, localhost included, on the registered path.
    let (status, _, html) = b
        .get(&with_redirect(&path, "http://localhost:6274/callback"))
        .await;
    assert_eq!(status, 200, "{html}");
    let inspector = with_redirect(&path, "http://localhost:6274/oauth/callback");
    let (status, _, html) = b.get(&inspector).await;
    assert_eq!(status, 400);
    assert!(
        error_detail(&html).contains("any path in embedded mode"),
        "{html}"
    );
    let (status, _, html) = b
        .get(&with_redirect(&path, "http://evil.example:6274/callback"))
        .await;
    assert_eq!(status, 400, "{html}");
    h.finish().await;
    let embedded = Harness::start_with(crate::support::Backend::Sqlite, |c| {
        c.oauth.demo_client_any_loopback_redirect = true;
    })
    .await
    .unwrap();
    let mut b = Browser::new(&embedded);
    let (status, _, html) = b.get(&inspector).await;
    assert_eq!(status, 200, "{html}");
    let (status, _, _) = b
        .get(&with_redirect(&path, "https://evil.example/oauth/callback"))
        .await;
    assert_eq!(status, 400);
    embedded.finish().await;
}
