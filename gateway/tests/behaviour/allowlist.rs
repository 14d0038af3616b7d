//! The source-address allowlist of the public listener over real sockets:
//! refused addresses are closed at accept, before any byte is read (behind
//! a trusted PROXY-protocol peer, right after its header); clients named
//! only by `X-Forwarded-For` from a trusted proxy get an empty 403;
//! `X-Forwarded-For` and the PROXY protocol are believed only from trusted
//! proxies, IPv4 and IPv6 networks both apply, and the internal listener is
//! never filtered.

use crate::support;

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chataigne_gateway::Allowlist;
use ppp::v2;
use support::{Harness, PING, TOKEN_ALL};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

fn nets(cidrs: &[&str]) -> Vec<ipnet::IpNet> {
    cidrs.iter().map(|c| c.parse().unwrap()).collect()
}

/// Starts a gateway on 127.0.0.1 with this allowlist.
async fn gateway(allowlist: Allowlist) -> Harness {
    Harness::start_with(move |config| config.allowlist = allowlist).await
}

fn ip(text: &str) -> IpAddr {
    text.parse().unwrap()
}

/// A client whose connections leave from `local` (any 127.0.0.0/8 address
/// is a loopback address on Linux).
fn client_from(local: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(ip(local))
        .build()
        .unwrap()
}

/// POSTs a ping from `local` with optional extra headers; `None` when the
/// connection was closed without an answer.
async fn try_ping_from(
    h: &Harness,
    local: &str,
    headers: &[(&str, &str)],
) -> Option<(u16, String, reqwest::header::HeaderMap)> {
    let mut request = client_from(local)
        .post(&h.mcp)
        .bearer_auth(TOKEN_ALL)
        .header("accept", "application/json, text/event-stream")
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let response = request.body(PING).send().await.ok()?;
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    Some((status, response.text().await.unwrap(), headers))
}

/// [`try_ping_from`] that must be answered.
async fn ping_from(
    h: &Harness,
    local: &str,
    headers: &[(&str, &str)],
) -> (u16, String, reqwest::header::HeaderMap) {
    try_ping_from(h, local, headers)
        .await
        .expect("the connection is answered")
}

/// Whether a ping from `local` is closed without any answer.
async fn closed_unanswered(h: &Harness, local: &str) -> bool {
    try_ping_from(h, local, &[]).await.is_none() && raw_ping(h, local, b"").await.is_empty()
}

/// A raw HTTP/1.1 ping to `h`, with `extra` header lines.
fn raw_request(h: &Harness, extra: &str) -> String {
    let server = h.base.trim_start_matches("http://");
    format!(
        "POST /mcp/v1 HTTP/1.1\r\nHost: {server}\r\nAuthorization: Bearer {TOKEN_ALL}\r\n\
         Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n\
         {extra}Content-Length: {}\r\nConnection: close\r\n\r\n{PING}",
        PING.len()
    )
}

/// Sends `prefix` then a raw HTTP/1.1 ping over a connection from `local`;
/// returns everything the server wrote before closing.
async fn raw_ping(h: &Harness, local: &str, prefix: &[u8]) -> String {
    let mut bytes = prefix.to_vec();
    bytes.extend_from_slice(raw_request(h, "").as_bytes());
    raw_exchange(h, local, &bytes).await
}

/// Writes `bytes` over a connection from `local`; returns the reply.
async fn raw_exchange(h: &Harness, local: &str, bytes: &[u8]) -> String {
    let server: SocketAddr = h.base.trim_start_matches("http://").parse().unwrap();
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(SocketAddr::new(ip(local), 0)).unwrap();
    let mut stream = socket.connect(server).await.unwrap();
    let _ = stream.write_all(bytes).await;
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response)).await;
    String::from_utf8_lossy(&response).into_owned()
}

fn proxy_v2(source: &str, command: v2::Command) -> Vec<u8> {
    let source: SocketAddr = source.parse().unwrap();
    let destination: SocketAddr = if source.is_ipv4() {
        "10.0.0.1:443".parse().unwrap()
    } else {
        "[2001:db8:ffff::1]:443".parse().unwrap()
    };
    v2::Builder::with_addresses(
        v2::Version::Two | command,
        v2::Protocol::Stream,
        (source, destination),
    )
    .build()
    .unwrap()
}

#[tokio::test]
async fn refused_addresses_are_closed_at_accept_and_allowed_ones_are_served() {
    let h = gateway(Allowlist {
        cidrs: nets(&["127.0.0.2/32"]),
        ..Allowlist::default()
    })
    .await;
    assert!(
        closed_unanswered(&h, "127.0.0.1").await,
        "nothing is answered"
    );
    // Every public path is behind it: metadata, unknown paths, no token.
    for path in ["/.well-known/oauth-protected-resource/mcp/v1", "/nowhere"] {
        let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        let raw = raw_exchange(&h, "127.0.0.1", request.as_bytes()).await;
        assert!(raw.is_empty(), "{path}: {raw}");
    }
    assert!(h.auth_calls().is_empty(), "refused before authentication");

    let (status, body, _) = ping_from(&h, "127.0.0.2", &[]).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(h.auth_calls().len(), 1);

    // The internal listener is never filtered.
    let health = h.get_internal("/healthz").await;
    assert_eq!(health.status(), 200);
    h.shutdown().await;
}

/// The issue's case: a gateway on the Connected Apps allowlist behind a
/// trusted PROXY-protocol peer that sends `PROXY UNKNOWN` (or `LOCAL`) and a
/// client-supplied `X-Forwarded-For` naming an allowed egress address.
#[tokio::test]
async fn forwarded_for_is_never_believed_behind_a_proxy_header_without_source() {
    let h = gateway(Allowlist {
        trusted_proxies: nets(&["127.0.0.1/32"]),
        proxy_protocol: true,
        ..Allowlist::default()
    })
    .await;
    let spoofed = raw_request(&h, "X-Forwarded-For: 74.125.232.5\r\n");
    for header in [
        b"PROXY UNKNOWN\r\n".to_vec(),
        proxy_v2("203.0.113.9:40000", v2::Command::Local),
    ] {
        let mut bytes = header.clone();
        bytes.extend_from_slice(spoofed.as_bytes());
        let raw = raw_exchange(&h, "127.0.0.1", &bytes).await;
        assert!(raw.is_empty(), "closed right after the PROXY header: {raw}");
    }
    // The same egress address relayed as the PROXY source is served.
    let mut bytes = b"PROXY TCP4 74.125.232.5 10.0.0.1 40000 443\r\n".to_vec();
    bytes.extend_from_slice(raw_request(&h, "").as_bytes());
    let raw = raw_exchange(&h, "127.0.0.1", &bytes).await;
    assert!(raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert_eq!(
        h.auth_calls().len(),
        1,
        "only the relayed client reached auth"
    );
    h.shutdown().await;
}

#[tokio::test]
async fn configured_ipv4_mapped_ranges_match_like_client_addresses() {
    let h = gateway(Allowlist {
        cidrs: nets(&["::ffff:127.0.0.2/128"]),
        ..Allowlist::default()
    })
    .await;
    let (status, body, _) = ping_from(&h, "127.0.0.2", &[]).await;
    assert_eq!(status, 200, "{body}");
    assert!(closed_unanswered(&h, "127.0.0.3").await);
    h.shutdown().await;
}

#[tokio::test]
async fn a_disabled_allowlist_serves_every_address() {
    let h = gateway(Allowlist {
        enabled: false,
        cidrs: nets(&["192.0.2.0/24"]),
        ..Allowlist::default()
    })
    .await;
    let (status, body, _) = ping_from(&h, "127.0.0.1", &[]).await;
    assert_eq!(status, 200, "{body}");
    h.shutdown().await;
}

#[tokio::test]
async fn the_production_default_refuses_everything_but_the_platform_egress() {
    let h = gateway(Allowlist::default()).await;
    assert!(closed_unanswered(&h, "127.0.0.1").await);
    h.shutdown().await;
}

#[tokio::test]
async fn forwarded_for_is_believed_only_from_a_trusted_proxy() {
    let h = gateway(Allowlist {
        cidrs: nets(&["203.0.113.0/24", "2001:db8::/32"]),
        trusted_proxies: nets(&["127.0.0.1/32"]),
        ..Allowlist::default()
    })
    .await;
    let xff = |value: &'static str| vec![("x-forwarded-for", value)];
    // From the trusted proxy: the right-most untrusted entry is the client.
    for (value, expected) in [
        ("203.0.113.9", 200),
        ("198.51.100.1", 403),
        ("203.0.113.9, 198.51.100.1", 403),
        ("198.51.100.1, 203.0.113.9", 200),
        ("203.0.113.9, 127.0.0.1", 200),
        ("2001:db8::5", 200),
        ("[2001:db8::5]:443", 200),
        ("2001:db9::5", 403),
        ("garbage", 403),
    ] {
        let (status, body, _) = ping_from(&h, "127.0.0.1", &xff(value)).await;
        assert_eq!(status, expected, "X-Forwarded-For: {value}: {body}");
        if status == 403 {
            assert!(body.is_empty());
        }
    }
    // Without the header, the client is the proxy itself: not allowed.
    let (status, _, _) = ping_from(&h, "127.0.0.1", &[]).await;
    assert_eq!(status, 403);
    // Spoofing: the same header from an untrusted peer is never read: the
    // peer itself is the client, refused at accept.
    assert!(
        try_ping_from(&h, "127.0.0.2", &xff("203.0.113.9"))
            .await
            .is_none()
    );
    h.shutdown().await;
}

#[tokio::test]
async fn ipv6_sockets_are_matched_against_ipv6_networks() {
    for (cidrs, served) in [(["::1/128"], true), (["2001:db8::/32"], false)] {
        let allowlist = Allowlist {
            cidrs: nets(&cidrs),
            ..Allowlist::default()
        };
        let h = Harness::start_on("[::1]:0", move |config| config.allowlist = allowlist).await;
        assert!(h.base.starts_with("http://[::1]:"), "{}", h.base);
        let answer = try_ping_from(&h, "::1", &[]).await;
        assert_eq!(
            answer.as_ref().map(|(status, _, _)| *status),
            served.then_some(200),
            "{cidrs:?}"
        );
        h.shutdown().await;
    }
}

#[tokio::test]
async fn proxy_protocol_headers_are_read_from_trusted_proxies_only() {
    let h = gateway(Allowlist {
        cidrs: nets(&["203.0.113.0/24", "2001:db8::/32"]),
        trusted_proxies: nets(&["127.0.0.1/32", "10.0.0.0/8"]),
        proxy_protocol: true,
        ..Allowlist::default()
    })
    .await;
    let ok = |raw: &str| raw.starts_with("HTTP/1.1 200");
    let forbidden = |raw: &str| raw.starts_with("HTTP/1.1 403");
    let closed = |raw: &str| raw.is_empty();

    let v1_allowed = b"PROXY TCP4 203.0.113.9 10.0.0.1 40000 443\r\n";
    let raw = raw_ping(&h, "127.0.0.1", v1_allowed).await;
    assert!(ok(&raw), "v1 from the trusted proxy: {raw}");
    assert!(raw.contains(r#""result":{}"#), "{raw}");
    let raw = raw_ping(
        &h,
        "127.0.0.1",
        b"PROXY TCP4 198.51.100.1 10.0.0.1 40000 443\r\n",
    )
    .await;
    assert!(closed(&raw), "v1 naming a refused client: {raw}");
    let raw = raw_ping(
        &h,
        "127.0.0.1",
        b"PROXY TCP6 2001:db8::7 2001:db8:ffff::1 40000 443\r\n",
    )
    .await;
    assert!(ok(&raw), "v1 TCP6: {raw}");

    let raw = raw_ping(
        &h,
        "127.0.0.1",
        &proxy_v2("203.0.113.9:40000", v2::Command::Proxy),
    )
    .await;
    assert!(ok(&raw), "v2 from the trusted proxy: {raw}");
    let raw = raw_ping(
        &h,
        "127.0.0.1",
        &proxy_v2("198.51.100.1:40000", v2::Command::Proxy),
    )
    .await;
    assert!(closed(&raw), "v2 naming a refused client: {raw}");
    let raw = raw_ping(
        &h,
        "127.0.0.1",
        &proxy_v2("[2001:db8::9]:40000", v2::Command::Proxy),
    )
    .await;
    assert!(ok(&raw), "v2 IPv6: {raw}");
    // LOCAL (the proxy's own health check): the client is the proxy.
    let raw = raw_ping(
        &h,
        "127.0.0.1",
        &proxy_v2("203.0.113.9:40000", v2::Command::Local),
    )
    .await;
    assert!(closed(&raw), "v2 LOCAL: {raw}");

    // A trusted hop relayed by PROXY passes the walk on to X-Forwarded-For.
    for (forwarded, allowed) in [("203.0.113.50", true), ("198.51.100.50", false)] {
        let chained = format!(
            "PROXY TCP4 10.1.2.3 10.0.0.1 40000 443\r\n{}",
            raw_request(&h, &format!("X-Forwarded-For: {forwarded}\r\n"))
        );
        let raw = raw_exchange(&h, "127.0.0.1", chained.as_bytes()).await;
        assert_eq!(
            ok(&raw),
            allowed,
            "PROXY 10.1.2.3 + X-Forwarded-For {forwarded}: {raw}"
        );
    }

    // A trusted proxy must send the header: a bare request is not served.
    let raw = raw_ping(&h, "127.0.0.1", b"").await;
    assert!(raw.is_empty(), "no header from the trusted proxy: {raw}");
    let raw = raw_ping(&h, "127.0.0.1", b"PROXY GARBAGE\r\n").await;
    assert!(raw.is_empty(), "invalid header: {raw}");

    // From an untrusted peer the header is never read: the peer is the
    // client, refused at accept, and the named address never used.
    let raw = raw_ping(&h, "127.0.0.2", v1_allowed).await;
    assert!(closed(&raw), "untrusted peer with a PROXY header: {raw}");
    let raw = raw_ping(&h, "127.0.0.2", b"").await;
    assert!(closed(&raw), "untrusted peer, plain request: {raw}");
    // A client named only by X-Forwarded-For gets the empty 403.
    let chained = format!(
        "PROXY TCP4 10.1.2.3 10.0.0.1 40000 443\r\n{}",
        raw_request(&h, "X-Forwarded-For: 198.51.100.50\r\n")
    );
    let raw = raw_exchange(&h, "127.0.0.1", chained.as_bytes()).await;
    assert!(forbidden(&raw), "{raw}");
    h.shutdown().await;
}

#[tokio::test]
async fn without_proxy_protocol_a_header_is_never_believed() {
    let h = gateway(Allowlist {
        cidrs: nets(&["203.0.113.0/24"]),
        trusted_proxies: nets(&["127.0.0.1/32"]),
        ..Allowlist::default()
    })
    .await;
    let raw = raw_ping(
        &h,
        "127.0.0.1",
        b"PROXY TCP4 203.0.113.9 10.0.0.1 40000 443\r\n",
    )
    .await;
    assert!(!raw.starts_with("HTTP/1.1 200"), "{raw}");
    assert!(h.auth_calls().is_empty());
    h.shutdown().await;
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_refusal_is_one_info_line_with_its_reason_and_no_token() {
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .finish();
    // Current-thread runtime: the gateway's tasks log on this thread.
    let _guard = tracing::subscriber::set_default(subscriber);
    let h = gateway(Allowlist {
        cidrs: nets(&["127.0.0.2/32"]),
        ..Allowlist::default()
    })
    .await;
    assert!(try_ping_from(&h, "127.0.0.1", &[]).await.is_none());
    h.shutdown().await;
    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    let refusals: Vec<&str> = logs
        .lines()
        .filter(|line| line.contains("refused by the allowlist"))
        .collect();
    assert_eq!(refusals.len(), 1, "{logs}");
    let line: serde_json::Value = serde_json::from_str(refusals[0]).unwrap();
    assert_eq!(line["level"], "INFO");
    assert_eq!(line["fields"]["reason"], "address_not_allowed");
    assert_eq!(line["fields"]["client"], "127.0.0.1");
    assert!(!logs.contains(TOKEN_ALL), "no token in the logs");
    assert!(
        !logs.contains("mcp request"),
        "a refused request never reaches the MCP handler"
    );
}
