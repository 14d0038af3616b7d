//! Hardened answers on the public listener: every answer of every route —
//! MCP answers, the protected-resource metadata, 401 challenges, 404, 405,
//! 406, 413, 415, JSON-RPC errors and backend failures — carries
//! `X-Content-Type-Options: nosniff`, and HSTS for a year when a public URL
//! is https (the listener serving TLS itself: `tls.rs`), never otherwise.

use crate::support::{GOOGLE_HOST, Harness, PING, TOKEN_ALL, TOKEN_BROKEN};

/// Every kind of answer the public listener gives, with what it is.
async fn every_answer(h: &Harness) -> Vec<(String, reqwest::Response)> {
    let mut answers = Vec::new();
    let mut keep = |what: &str, response: reqwest::Response| {
        answers.push((format!("{what} ({})", response.status()), response));
    };
    keep("ping", h.post(TOKEN_ALL).body(PING).send().await.unwrap());
    keep(
        "ping on /mcp/v2",
        h.client
            .post(format!("{}/mcp/v2", h.base))
            .bearer_auth(TOKEN_ALL)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-protocol-version", "2026-07-28")
            .body(PING)
            .send()
            .await
            .unwrap(),
    );
    keep(
        "no token",
        h.client.post(&h.mcp).body(PING).send().await.unwrap(),
    );
    keep("bad token", h.post("nope").body(PING).send().await.unwrap());
    keep(
        "auth-service failing",
        h.post(TOKEN_BROKEN).body(PING).send().await.unwrap(),
    );
    keep(
        "unknown method",
        h.post(TOKEN_ALL)
            .body(r#"{"jsonrpc":"2.0","id":2,"method":"nope/nothing"}"#)
            .send()
            .await
            .unwrap(),
    );
    keep(
        "not JSON",
        h.post(TOKEN_ALL).body("{").send().await.unwrap(),
    );
    keep(
        "too large",
        h.post(TOKEN_ALL)
            .body("x".repeat(128 * 1024))
            .send()
            .await
            .unwrap(),
    );
    keep(
        "wrong content type",
        h.post(TOKEN_ALL)
            .header("content-type", "text/plain")
            .body(PING)
            .send()
            .await
            .unwrap(),
    );
    keep(
        "wrong accept",
        h.post(TOKEN_ALL)
            .header("accept", "text/html")
            .body(PING)
            .send()
            .await
            .unwrap(),
    );
    keep("GET on MCP", h.client.get(&h.mcp).send().await.unwrap());
    keep(
        "DELETE on MCP",
        h.client.delete(&h.mcp).send().await.unwrap(),
    );
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp/v1",
        "/nowhere",
    ] {
        keep(path, h.get_public(path).await);
    }
    keep(
        "google profile",
        h.get_public_with(
            "/.well-known/oauth-protected-resource/mcp/v1",
            &[("host", GOOGLE_HOST)],
        )
        .await,
    );
    answers
}

fn assert_every_answer_hardened(answers: &[(String, reqwest::Response)], hsts: Option<&str>) {
    let statuses: Vec<u16> = answers.iter().map(|(_, r)| r.status().as_u16()).collect();
    for status in [200, 401, 404, 405, 413] {
        assert!(
            statuses.contains(&status),
            "a {status} is walked: {statuses:?}"
        );
    }
    for (what, response) in answers {
        chataigne_common::testing::assert_hardened_headers(what, response.headers(), hsts);
    }
}

#[tokio::test]
async fn every_answer_is_hardened_and_https_public_urls_send_hsts() {
    let h = Harness::start_with(|c| c.hsts_include_subdomains = true).await;
    let answers = every_answer(&h).await;
    assert_every_answer_hardened(&answers, Some("max-age=31536000; includeSubDomains"));
}

#[tokio::test]
async fn a_plain_http_gateway_sends_no_hsts() {
    let h = Harness::start_with(|c| {
        c.public_url = None;
        for endpoint in &mut c.endpoints {
            endpoint.public_url = None;
        }
    })
    .await;
    let answers = every_answer(&h).await;
    assert_every_answer_hardened(&answers, None);
}

/// Collects what a thread-local subscriber writes.
#[derive(Clone, Default)]
struct Capture(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn plain_http_outside_loopback_starts_only_when_allowed_and_then_warns_at_every_start() {
    let insecure = |config: &mut chataigne_gateway::Config| {
        config.public_url = Some("http://mcp.example.test".to_owned());
    };
    // Refused without the switch.
    let mut config = crate::support::test_config();
    insecure(&mut config);
    let public = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let internal = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let refused = chataigne_gateway::run(
        config,
        chataigne_gateway::Listeners { public, internal },
        std::future::pending(),
    )
    .await;
    let error = format!("{:#}", refused.expect_err("refused"));
    assert!(error.contains("CHATAIGNE_PUBLIC_URL"), "{error}");
    // With it, each start serves and logs the warning (this test's runtime
    // runs the gateway on this thread, under this subscriber).
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    for start in 1..=2 {
        let h = Harness::start_with(|config| {
            insecure(config);
            config.allow_insecure_development = true;
        })
        .await;
        let served = h
            .get_public("/.well-known/oauth-protected-resource/mcp/v1")
            .await;
        assert_eq!(served.status(), 200);
        let logs = String::from_utf8_lossy(&capture.0.lock().unwrap()).into_owned();
        assert_eq!(
            logs.matches("allow_insecure_development is set").count(),
            start,
            "{logs}"
        );
    }
}
