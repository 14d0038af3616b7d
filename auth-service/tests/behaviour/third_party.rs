//! Clients the operator did not register: a Client ID Metadata Document
//! cannot pass for a trusted product (the consent page names it by the host
//! it comes from, marks it unverified and shows where the code goes), write
//! scopes go only to clients the trust policy trusts, and the document fetch
//! reaches public addresses only, follows no redirect and fails with one
//! text whatever went wrong — tested against a local fake metadata host.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use chataigne_auth::{ClientKind, NewClientRequest};
use chataigne_common::demo::{DEMO_CLIENT_ID, DEMO_PASSWORD};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::oauth_support::*;
use crate::support::{Backend, Harness};

/// The one text of every refused metadata document.
const REFUSED: &str = "the client_id metadata document could not be used";

/// A fake metadata host on loopback: answers every request with `status`,
/// `headers` and the body made from its own document URL; counts the
/// connections it accepted.
struct FakeHost {
    url: String,
    port: u16,
    connections: Arc<AtomicUsize>,
}

impl FakeHost {
    async fn start(
        status: &'static str,
        headers: String,
        body: impl Fn(&str) -> String + Send + 'static,
    ) -> FakeHost {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}/client.json");
        let body = body(&url);
        let connections = Arc::new(AtomicUsize::new(0));
        let counted = connections.clone();
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                counted.fetch_add(1, Ordering::SeqCst);
                let mut buffer = vec![0u8; 4096];
                let _ = stream.read(&mut buffer).await;
                let response = format!(
                    "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n{headers}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
            }
        });
        FakeHost {
            url,
            port,
            connections,
        }
    }

    /// A host serving a valid document named `name`.
    async fn document(name: &'static str) -> FakeHost {
        FakeHost::start("200 OK", String::new(), move |url| {
            serde_json::json!({"client_id": url, "client_name": name, "redirect_uris": [REDIRECT]})
                .to_string()
        })
        .await
    }

    fn connections(&self) -> usize {
        self.connections.load(Ordering::SeqCst)
    }
}

/// `/authorize` for `client_id` with `scope`.
fn authorize_for(client_id: &str, scope: &str) -> String {
    let (_, challenge) = pkce();
    authorize_query(&challenge, scope, "tp").replace(
        &format!("client_id={DEMO_CLIENT_ID}"),
        &format!(
            "client_id={}",
            url::form_urlencoded::byte_serialize(client_id.as_bytes()).collect::<String>()
        ),
    )
}

/// The technical reason the error page gives.
fn error_text(html: &str) -> String {
    let marker = "id=\"error-detail\">";
    let start = html.find(marker).expect("an error page") + marker.len();
    let end = html[start..].find("</span>").unwrap() + start;
    html[start..end].to_owned()
}

/// Signs `b` in on the sign-in page `html`; returns the consent page.
async fn consent_page(b: &mut Browser, html: &str) -> String {
    let (status, headers, _) = post_form(
        b,
        "/authorize/login",
        &form_of(
            html,
            &[
                ("email", "camille.martin@bistro.example"),
                ("password", DEMO_PASSWORD),
            ],
        ),
    )
    .await;
    assert_eq!(status, 303);
    let location = headers["location"].to_str().unwrap().to_owned();
    let (status, _, consent) = b.get(&location).await;
    assert_eq!(status, 200, "{consent}");
    assert!(consent.contains("id=\"approve\""), "{consent}");
    consent
}

async fn an_unregistered_client_is_shown_by_its_host_and_marked_unverified(h: &Harness) {
    let host = FakeHost::document("Google Gemini").await;
    let mut b = Browser::new(h);
    let (status, _, html) = b.get(&authorize_for(&host.url, "orders.read")).await;
    assert_eq!(status, 200, "{html}");
    let origin = format!("127.0.0.1:{}", host.port);
    for page in [html.clone(), consent_page(&mut b, &html).await] {
        assert!(page.contains("Unverified application"), "{page}");
        assert!(
            page.contains(&format!("<strong id=\"client\">{origin}</strong> (calling itself \u{201c}Google Gemini\u{201d})")),
            "named by its host first: {page}"
        );
        assert!(
            page.contains(&format!("id=\"client-origin\">{origin}</strong>")),
            "{page}"
        );
        assert!(
            page.contains(
                "id=\"redirect-host\">Afterwards you go back to <strong>127.0.0.1:33418</strong>"
            ),
            "{page}"
        );
        assert!(!page.contains("Registered with Chataigne"));
    }
    // The registered demo client is shown as such.
    let (_, _, registered) = b.get(&authorize_for(DEMO_CLIENT_ID, "orders.read")).await;
    assert!(
        registered.contains("Registered with Chataigne"),
        "{registered}"
    );
    assert!(registered.contains("<strong id=\"client\">Chataigne demo assistant</strong>"));
    assert!(!registered.contains("Unverified"));
}

async fn write_scopes_are_refused_to_untrusted_clients_at_authorize(h: &Harness) {
    let host = FakeHost::document("Google Gemini").await;
    let mut b = Browser::new(h);
    let (status, headers, body) = b
        .get(&authorize_for(&host.url, "orders.read conversations.write"))
        .await;
    assert_eq!(status, 303, "refused back to the client: {body}");
    let location = headers["location"].to_str().unwrap();
    assert!(location.starts_with(REDIRECT), "{location}");
    assert_eq!(param(location, "error").as_deref(), Some("invalid_scope"));
    let description = param(location, "error_description").unwrap();
    assert!(
        description.contains("conversations.write") && description.contains("trust"),
        "{description}"
    );
    assert!(param(location, "code").is_none());
    // Any write scope, not only the conversation one.
    let (status, headers, _) = b.get(&authorize_for(&host.url, "orders.write")).await;
    assert_eq!(status, 303);
    assert_eq!(
        param(headers["location"].to_str().unwrap(), "error").as_deref(),
        Some("invalid_scope")
    );
    // A registered client may ask for them (the default policy).
    let (status, _, html) = b
        .get(&authorize_for(
            DEMO_CLIENT_ID,
            "orders.read conversations.write",
        ))
        .await;
    assert_eq!(status, 200, "{html}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_trust_policy_is_configurable() {
    let host = FakeHost::document("Partner app").await;
    let trusted = host.url.clone();
    let h = Harness::start_with(Backend::Sqlite, move |c| {
        c.oauth.client_trust.registered_clients = false;
        c.oauth.client_trust.trusted_client_ids = vec![trusted];
    })
    .await
    .unwrap();
    let mut b = Browser::new(&h);
    // The operator trusts this document's client: write scopes, and the
    // page says who vouched for it and where it comes from.
    let (status, _, html) = b
        .get(&authorize_for(&host.url, "orders.read orders.write"))
        .await;
    assert_eq!(status, 200, "{html}");
    let consent = consent_page(&mut b, &html).await;
    assert!(consent.contains("Trusted by Chataigne"), "{consent}");
    assert!(consent.contains(&format!("127.0.0.1:{}", host.port)));
    assert!(!consent.contains("Unverified"));
    // Registered clients are not trusted under this policy.
    let (status, headers, _) = b
        .get(&authorize_for(DEMO_CLIENT_ID, "orders.read orders.write"))
        .await;
    assert_eq!(status, 303);
    assert_eq!(
        param(headers["location"].to_str().unwrap(), "error").as_deref(),
        Some("invalid_scope")
    );
    // Nor are the write scopes of a registered service account.
    let registered = h
        .app
        .add_client(NewClientRequest {
            client_id: "importer".into(),
            name: "Importer".into(),
            kind: ClientKind::Service,
            redirect_uris: Vec::new(),
            allowed_scopes: vec!["orders.read orders.write".into()],
        })
        .await
        .unwrap();
    let secret = registered.secret.unwrap();
    let (status, body) = token(
        &h,
        &[
            ("grant_type", "client_credentials"),
            ("client_id", "importer"),
            ("client_secret", &secret),
        ],
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["scope"], "orders.read", "no write scope: {body}");
}

async fn metadata_failures_all_read_the_same(h: &Harness) {
    let redirect_target = FakeHost::document("Target").await;
    let location = format!("location: {}\r\n", redirect_target.url);
    let hosts = [
        FakeHost::start("404 Not Found", String::new(), |_| "{}".to_owned()).await,
        FakeHost::start("200 OK", String::new(), |_| "x".repeat(20_000)).await,
        FakeHost::start("302 Found", location, |_| String::new()).await,
        FakeHost::start("200 OK", String::new(), |_| {
            serde_json::json!({"client_id": "https://other.example/c.json", "redirect_uris": [REDIRECT]}).to_string()
        })
        .await,
        FakeHost::start("200 OK", String::new(), |_| "not json".to_owned()).await,
    ];
    let mut urls: Vec<String> = hosts.iter().map(|host| host.url.clone()).collect();
    urls.push("http://127.0.0.1:1/unreachable.json".to_owned());
    let mut b = Browser::new(h);
    for url in &urls {
        let (status, headers, html) = b.get(&authorize_for(url, "orders.read")).await;
        assert_eq!(status, 400, "{url}: {html}");
        assert!(headers.get("location").is_none());
        assert_eq!(error_text(&html), REFUSED, "{url}");
    }
    assert_eq!(
        redirect_target.connections(),
        0,
        "redirects are not followed"
    );
}

/// Private, loopback and metadata addresses are refused before any
/// connection, by name (after DNS) or as literals, with the same text.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documents_are_fetched_from_public_addresses_only() {
    let h = Harness::start_with(Backend::Sqlite, |c| {
        c.oauth.client_metadata_allow_http_loopback = false;
    })
    .await
    .unwrap();
    let host = FakeHost::document("Internal").await;
    let mut b = Browser::new(&h);
    for client_id in [
        // A name that resolves to loopback.
        format!("https://localhost:{}/client.json", host.port),
        format!("https://127.0.0.1:{}/client.json", host.port),
        format!("https://[::1]:{}/client.json", host.port),
        format!("https://[::ffff:127.0.0.1]:{}/client.json", host.port),
        "https://169.254.169.254/latest/meta-data/client.json".to_owned(),
        "https://10.0.0.1/client.json".to_owned(),
    ] {
        let (status, _, html) = b.get(&authorize_for(&client_id, "orders.read")).await;
        assert_eq!(status, 400, "{client_id}: {html}");
        assert_eq!(error_text(&html), REFUSED, "{client_id}");
    }
    assert_eq!(host.connections(), 0, "nothing reached the internal host");
    // The same host allowed explicitly (development) is fetched.
    let allowed = Harness::start_with(Backend::Sqlite, |c| {
        c.oauth.client_metadata_allow_http_loopback = true;
    })
    .await
    .unwrap();
    let mut b = Browser::new(&allowed);
    let (status, _, html) = b.get(&authorize_for(&host.url, "orders.read")).await;
    assert_eq!(status, 200, "{html}");
    assert_eq!(host.connections(), 1);
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
        an_unregistered_client_is_shown_by_its_host_and_marked_unverified,
        write_scopes_are_refused_to_untrusted_clients_at_authorize,
        metadata_failures_all_read_the_same,
    ],
}
