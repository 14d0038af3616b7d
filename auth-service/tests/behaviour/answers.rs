//! Hardened answers on the authorization server's public listener: every
//! answer of every route — pages, JSON documents, token answers, 4xx
//! refusals of the handlers and of the stack (404, 405, 413), 401 — carries
//! `X-Content-Type-Options: nosniff` and, on an https issuer, HSTS for a
//! year; every HTML page a CSP with `frame-ancestors 'none'` and a
//! `Referrer-Policy`; token and consent answers `Cache-Control: no-store`.

use chataigne_auth::{JWKS_PATH, METADATA_PATH};
use chataigne_common::demo::{DEMO_CLIENT_ID, DEMO_PASSWORD};
use reqwest::header::HeaderMap;

use crate::oauth_support::*;
use crate::support::{Backend, Harness, RESOURCE};

/// What an answer must carry.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    /// Any answer.
    Any,
    /// A token, sign-in or consent answer: never cached.
    NoStore,
}

fn assert_hardened(what: &str, status: u16, headers: &HeaderMap, hsts: Option<&str>, kind: Kind) {
    let what = format!("{what} ({status})");
    chataigne_common::testing::assert_hardened_headers(&what, headers, hsts);
    if kind == Kind::NoStore {
        assert_eq!(
            headers.get("cache-control").map(|v| v.to_str().unwrap()),
            Some("no-store"),
            "{what}"
        );
    }
}

/// Walks every route of the listener, answers of every kind.
async fn walk_every_route(h: &Harness, hsts: Option<&str>) {
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let base = &h.http_url;
    let check = |what: &str, response: &reqwest::Response, kind: Kind| {
        assert_hardened(
            what,
            response.status().as_u16(),
            response.headers(),
            hsts,
            kind,
        );
    };
    // Documents, a 404, a 405.
    for path in [
        JWKS_PATH,
        METADATA_PATH,
        "/.well-known/openid-configuration",
        "/nowhere",
    ] {
        let response = http.get(format!("{base}{path}")).send().await.unwrap();
        check(path, &response, Kind::Any);
    }
    let wrong_method = http.get(format!("{base}/token")).send().await.unwrap();
    assert_eq!(wrong_method.status(), 405);
    check("GET /token", &wrong_method, Kind::Any);
    // An invalid authorization request: an HTML error page.
    let invalid = http
        .get(format!("{base}/authorize?client_id=nobody"))
        .send()
        .await
        .unwrap();
    assert_eq!(invalid.status(), 400);
    check("invalid /authorize", &invalid, Kind::NoStore);
    // The whole flow in a browser: sign-in page, a wrong password, an
    // expired form, the sign-in, the consent page and its answer.
    let mut b = Browser::new(h);
    let (verifier, challenge) = pkce();
    let (status, headers, page) = b
        .get(&authorize_query(&challenge, "orders.read", "s"))
        .await;
    assert_hardened("sign-in page", status, &headers, hsts, Kind::NoStore);
    for (what, extra) in [
        (
            "wrong password",
            vec![
                ("email", "camille.martin@bistro.example"),
                ("password", "wrong"),
            ],
        ),
        ("expired form", vec![("csrf", "forged")]),
    ] {
        let mut form = form_of(&page, &[]);
        for (name, value) in extra {
            form.retain(|(k, _)| k != name);
            form.push((name.to_owned(), value.to_owned()));
        }
        let (status, headers, _) = post_form(&mut b, "/authorize/login", &form).await;
        assert!([401, 403].contains(&status), "{what}: {status}");
        assert_hardened(what, status, &headers, hsts, Kind::NoStore);
    }
    let (status, headers, _) = post_form(
        &mut b,
        "/authorize/login",
        &form_of(
            &page,
            &[
                ("email", "camille.martin@bistro.example"),
                ("password", DEMO_PASSWORD),
            ],
        ),
    )
    .await;
    assert_eq!(status, 303);
    assert_hardened("sign-in", status, &headers, hsts, Kind::NoStore);
    let location = headers["location"].to_str().unwrap().to_owned();
    let (status, headers, consent) = b.get(&location).await;
    assert!(consent.contains("id=\"approve\""), "{consent}");
    assert_hardened("consent page", status, &headers, hsts, Kind::NoStore);
    let mut forged = form_of(&consent, &[("decision", "approve")]);
    forged.retain(|(k, _)| k != "csrf");
    let (status, headers, _) = post_form(&mut b, "/authorize/consent", &forged).await;
    assert_eq!(status, 403);
    assert_hardened("forged consent", status, &headers, hsts, Kind::NoStore);
    let (status, headers, back) = post_form(
        &mut b,
        "/authorize/consent",
        &form_of(&consent, &[("decision", "approve")]),
    )
    .await;
    assert_eq!(status, 200);
    assert_hardened("consent answer", status, &headers, hsts, Kind::NoStore);
    let back = field(&back.replace("href=", "name=\"href\" value="), "href");
    let code = param(&back, "code").unwrap();
    // Token answers: success, a refused grant, a refused client (401), an
    // oversized body (413, refused by the stack).
    let token =
        |form: Vec<(&'static str, String)>| http.post(format!("{base}/token")).form(&form).send();
    let issued = token(vec![
        ("grant_type", "authorization_code".into()),
        ("code", code),
        ("redirect_uri", REDIRECT.into()),
        ("code_verifier", verifier),
        ("client_id", DEMO_CLIENT_ID.into()),
        ("resource", RESOURCE.into()),
    ])
    .await
    .unwrap();
    assert_eq!(issued.status(), 200);
    check("token", &issued, Kind::NoStore);
    let body: serde_json::Value = issued.json().await.unwrap();
    let refused = token(vec![("grant_type", "authorization_code".into())])
        .await
        .unwrap();
    assert_eq!(refused.status(), 400);
    check("refused token", &refused, Kind::NoStore);
    let unauthorised = http
        .post(format!("{base}/token"))
        .basic_auth("no-such-client", Some("wrong"))
        .form(&[("grant_type", "client_credentials")])
        .send()
        .await
        .unwrap();
    assert_eq!(unauthorised.status(), 401);
    check("unknown client", &unauthorised, Kind::NoStore);
    let oversized = http
        .post(format!("{base}/token"))
        .body("x".repeat(200 * 1024))
        .send()
        .await
        .unwrap();
    assert_eq!(oversized.status(), 413);
    check("oversized", &oversized, Kind::NoStore);
    // Revocation and registration.
    let revoked = http
        .post(format!("{base}/revoke"))
        .form(&[
            ("token", body["refresh_token"].as_str().unwrap()),
            ("client_id", DEMO_CLIENT_ID),
        ])
        .send()
        .await
        .unwrap();
    check("revoke", &revoked, Kind::NoStore);
    let registered = http
        .post(format!("{base}/register"))
        .json(&serde_json::json!({"redirect_uris": ["not a uri"]}))
        .send()
        .await
        .unwrap();
    check("register", &registered, Kind::NoStore);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_of_an_https_issuer_is_hardened() {
    let h = Harness::start_with(Backend::Sqlite, |c| c.http.hsts_include_subdomains = true)
        .await
        .expect("SQLite is always available");
    walk_every_route(&h, Some("max-age=31536000; includeSubDomains")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_http_loopback_issuer_sends_no_hsts_and_the_rest_still() {
    let h = Harness::start_with(Backend::Sqlite, |c| {
        c.issuer = "http://127.0.0.1:8081".into();
    })
    .await
    .expect("SQLite is always available");
    walk_every_route(&h, None).await;
}
