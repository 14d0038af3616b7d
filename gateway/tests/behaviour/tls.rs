//! TLS on the public listener: a client trusting the configured certificate
//! completes the handshake and is served; a plain-text client is not; the
//! derived canonical URL uses https; a bad key pair stops start-up.

use crate::support;

use std::sync::Arc;

use chataigne_gateway::config::TlsConfig;
use rustls::pki_types::{CertificateDer, ServerName};
use support::Harness;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

struct Files {
    dir: std::path::PathBuf,
    cert_pem: String,
    tls: TlsConfig,
}

fn certificate() -> Files {
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    let cert = params.self_signed(&key).unwrap();
    let dir = std::env::temp_dir().join(format!("chataigne-tls-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let cert_file = dir.join("tls.crt");
    let key_file = dir.join("tls.key");
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    Files {
        cert_pem: cert.pem(),
        tls: TlsConfig {
            cert_file: cert_file.display().to_string(),
            key_file: key_file.display().to_string(),
        },
        dir,
    }
}

async fn https_get(addr: &str, cert_pem: &str, path: &str) -> String {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(CertificateDer::from_pem_slice(cert_pem.as_bytes()).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(addr).await.unwrap();
    let mut tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .expect("TLS handshake with the gateway");
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    tls.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    tls.read_to_string(&mut response).await.ok();
    response
}

#[tokio::test]
async fn the_public_listener_serves_https_with_the_configured_certificate() {
    let files = certificate();
    let tls = files.tls.clone();
    let harness = Harness::start_with(move |config| {
        config.tls = Some(tls);
        config.public_url = None;
    })
    .await;
    let addr = harness.base.trim_start_matches("http://").to_owned();
    let port = addr.rsplit(':').next().unwrap().to_owned();

    let response = https_get(
        &addr,
        &files.cert_pem,
        "/.well-known/oauth-protected-resource/mcp/v1",
    )
    .await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let lower = response.to_ascii_lowercase();
    assert!(
        lower.contains("strict-transport-security: max-age=31536000\r\n"),
        "a listener serving TLS sends HSTS, its public URL derived: {response}"
    );
    assert!(
        lower.contains("x-content-type-options: nosniff"),
        "{response}"
    );
    assert!(
        response.contains(&format!("\"resource\":\"https://127.0.0.1:{port}/mcp/v1\"")),
        "the canonical URL is https when the listener terminates TLS: {response}"
    );

    // A plain-text request on the TLS port is never served.
    let mut plain = TcpStream::connect(&addr).await.unwrap();
    plain
        .write_all(b"GET /.well-known/oauth-protected-resource/mcp/v1 HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(7),
        plain.read_to_end(&mut answer),
    )
    .await;
    assert!(
        !String::from_utf8_lossy(&answer).contains("\"resource\""),
        "plain HTTP is not served on the TLS listener"
    );
    let _ = std::fs::remove_dir_all(&files.dir);
}

#[tokio::test]
async fn a_key_that_does_not_match_the_certificate_stops_start_up() {
    let files = certificate();
    let other = certificate();
    let mut config = support::test_config();
    config.tls = Some(TlsConfig {
        cert_file: files.tls.cert_file.clone(),
        key_file: other.tls.key_file.clone(),
    });
    let public = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let internal = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let result = chataigne_gateway::run(
        config,
        chataigne_gateway::Listeners { public, internal },
        std::future::pending(),
    )
    .await;
    let error = format!("{:#}", result.expect_err("start-up refuses the pair"));
    assert!(error.contains("do not form a usable pair"), "{error}");
    let _ = std::fs::remove_dir_all(&files.dir);
    let _ = std::fs::remove_dir_all(&other.dir);
}

#[tokio::test(start_paused = true)]
async fn a_stalled_tls_handshake_is_closed_within_the_header_timeout() {
    let files = certificate();
    let tls = files.tls.clone();
    let harness = Harness::start_with(move |config| {
        config.tls = Some(tls);
        config.public_url = None;
        config.connections.header_read_timeout_ms = 400;
    })
    .await;
    let addr = harness.base.trim_start_matches("http://").to_owned();
    // Half a ClientHello record header, then nothing.
    let mut stalled = TcpStream::connect(&addr).await.unwrap();
    stalled.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
    // Paused clock: the stalled connection is closed when the 400 ms header
    // timeout fires, not before and well before the 5 s read bound.
    let started = tokio::time::Instant::now();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        stalled.read_to_end(&mut answer),
    )
    .await;
    assert!(read.is_ok(), "closed by the server");
    let took = started.elapsed();
    assert!(
        took >= std::time::Duration::from_millis(400) && took < std::time::Duration::from_secs(1),
        "{took:?}"
    );
    // The listener still serves TLS clients.
    let response = https_get(
        &addr,
        &files.cert_pem,
        "/.well-known/oauth-protected-resource/mcp/v1",
    )
    .await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    let _ = std::fs::remove_dir_all(&files.dir);
}
