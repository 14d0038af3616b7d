//! A scripted browser and OAuth client for the authorization server: PKCE
//! pairs, cookie handling, the sign-in and consent forms, the token endpoint.

use aws_lc_rs::digest::{SHA256, digest};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chataigne_common::demo::{DEMO_CLIENT_ID, DEMO_PASSWORD};
use serde_json::Value;

use crate::support::{Harness, RESOURCE};

pub const REDIRECT: &str = "http://127.0.0.1:33418/callback";

/// A verifier and its S256 challenge.
pub fn pkce() -> (String, String) {
    let verifier = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let challenge = URL_SAFE_NO_PAD.encode(digest(&SHA256, verifier.as_bytes()));
    (verifier, challenge)
}

/// A browser without redirects, keeping cookies by name.
pub struct Browser {
    pub http: reqwest::Client,
    pub base: String,
    pub cookies: Vec<(String, String)>,
}

impl Browser {
    pub fn new(h: &Harness) -> Browser {
        Browser {
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            base: h.http_url.clone(),
            cookies: Vec::new(),
        }
    }

    fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    pub fn keep(&mut self, response: &reqwest::Response) {
        for value in response.headers().get_all("set-cookie") {
            let value = value.to_str().unwrap();
            let (pair, _) = value.split_once(';').unwrap_or((value, ""));
            let (name, v) = pair.split_once('=').unwrap();
            self.cookies.retain(|(k, _)| k != name);
            self.cookies.push((name.to_owned(), v.to_owned()));
        }
    }

    pub async fn get(&mut self, path_and_query: &str) -> (u16, reqwest::header::HeaderMap, String) {
        let url = if path_and_query.starts_with("http") {
            path_and_query.to_owned()
        } else {
            format!("{}{path_and_query}", self.base)
        };
        let response = self
            .http
            .get(url)
            .header("cookie", self.cookie_header())
            .send()
            .await
            .unwrap();
        self.keep(&response);
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (status, headers, response.text().await.unwrap())
    }

    pub async fn post(
        &mut self,
        path: &str,
        form: &[(&str, &str)],
    ) -> (u16, reqwest::header::HeaderMap, String) {
        let response = self
            .http
            .post(format!("{}{path}", self.base))
            .header("cookie", self.cookie_header())
            .form(form)
            .send()
            .await
            .unwrap();
        self.keep(&response);
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        (status, headers, response.text().await.unwrap())
    }
}

/// The value of the hidden field `name` in an HTML page.
pub fn field(html: &str, name: &str) -> String {
    let marker = format!("name=\"{name}\" value=\"");
    let start = html
        .find(&marker)
        .unwrap_or_else(|| panic!("{name} in {html}"))
        + marker.len();
    let end = html[start..].find('"').unwrap() + start;
    html[start..end].replace("&amp;", "&")
}

/// The query parameters of a URL.
pub fn query(url: &str) -> Vec<(String, String)> {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

pub fn param(url: &str, name: &str) -> Option<String> {
    query(url)
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v)
}

/// An `/authorize` query for the demo client.
pub fn authorize_query(challenge: &str, scope: &str, state: &str) -> String {
    let mut q = url::form_urlencoded::Serializer::new(String::new());
    q.append_pair("response_type", "code")
        .append_pair("client_id", DEMO_CLIENT_ID)
        .append_pair("redirect_uri", REDIRECT)
        .append_pair("scope", scope)
        .append_pair("state", state)
        .append_pair("code_challenge", challenge)
        .append_pair("code_challenge_method", "S256")
        .append_pair("resource", RESOURCE);
    format!("/authorize?{}", q.finish())
}

/// The hidden authorization fields of a form page, plus `extra`.
pub fn form_of(html: &str, extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut form: Vec<(String, String)> = [
        "response_type",
        "client_id",
        "redirect_uri",
        "scope",
        "state",
        "code_challenge",
        "code_challenge_method",
        "resource",
        "csrf",
    ]
    .iter()
    .map(|name| ((*name).to_owned(), field(html, name)))
    .collect();
    form.extend(
        extra
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned())),
    );
    form
}

pub async fn post_form(
    b: &mut Browser,
    path: &str,
    form: &[(String, String)],
) -> (u16, reqwest::header::HeaderMap, String) {
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    b.post(path, &pairs).await
}

/// Signs in as `email` and approves `scope`; returns the redirect back to the client.
pub async fn sign_in_and_approve(
    b: &mut Browser,
    challenge: &str,
    scope: &str,
    email: &str,
) -> String {
    let (status, _, html) = b.get(&authorize_query(challenge, scope, "st-1")).await;
    assert_eq!(status, 200, "{html}");
    // Already signed in (an earlier flow in this browser): consent directly.
    let consent = if html.contains("id=\"approve\"") {
        html
    } else {
        let (status, headers, _) = post_form(
            b,
            "/authorize/login",
            &form_of(&html, &[("email", email), ("password", DEMO_PASSWORD)]),
        )
        .await;
        assert_eq!(status, 303);
        let location = headers["location"].to_str().unwrap().to_owned();
        let (status, _, consent) = b.get(&location).await;
        assert_eq!(status, 200);
        consent
    };
    assert!(consent.contains("id=\"approve\""), "{consent}");
    let (status, _, back) = post_form(
        b,
        "/authorize/consent",
        &form_of(&consent, &[("decision", "approve")]),
    )
    .await;
    assert_eq!(status, 200);
    field(&back.replace("href=", "name=\"href\" value="), "href")
}

/// POSTs a token request; returns status and JSON.
pub async fn token(h: &Harness, form: &[(&str, &str)]) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/token", h.http_url))
        .form(form)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Runs the whole flow for the demo manager; returns the token response.
pub async fn full_flow(h: &Harness, scope: &str) -> Value {
    let (verifier, challenge) = pkce();
    let mut b = Browser::new(h);
    let back =
        sign_in_and_approve(&mut b, &challenge, scope, "camille.martin@bistro.example").await;
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
    body
}
