//! TLS on an internal gRPC hop, with generated certificates: a client that
//! trusts the CA is served, mTLS refuses a client without a certificate, and
//! a certificate replaced on disk is used for the next connection without a
//! restart.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::time::Duration;

use chataigne_common::balance::{self, Balanced};
use chataigne_common::tls::{self, ClientTls, ServerTls};
use tokio::net::TcpListener;
use tonic_health::pb::HealthCheckRequest;
use tonic_health::pb::health_client::HealthClient;

/// A CA that signs the leaf certificates of a test.
struct Authority {
    key: rcgen::KeyPair,
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    pem: String,
}

fn authority(name: &str) -> Authority {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let cert = params.self_signed(&key).unwrap();
    let pem = cert.pem();
    let issuer = rcgen::Issuer::new(
        params,
        rcgen::KeyPair::from_pem(&key.serialize_pem()).unwrap(),
    );
    Authority { key, issuer, pem }
}

/// Writes a leaf for `name` signed by `ca` as `<stem>.crt` / `<stem>.key`.
fn leaf(dir: &Path, stem: &str, name: &str, ca: &Authority) -> (String, String) {
    let _ = &ca.key;
    let key = rcgen::KeyPair::generate().unwrap();
    let params = rcgen::CertificateParams::new(vec![name.to_owned()]).unwrap();
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    let cert_file = dir.join(format!("{stem}.crt"));
    let key_file = dir.join(format!("{stem}.key"));
    std::fs::write(&cert_file, cert.pem()).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    (path(&cert_file), path(&key_file))
}

fn path(p: &Path) -> String {
    p.display().to_string()
}

fn dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("chataigne-internal-tls-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

async fn serve(tls: &ServerTls, recheck: Duration) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let acceptor = tls.acceptor_rechecking(recheck).unwrap();
    let (_reporter, health) = tonic_health::server::health_reporter();
    tokio::spawn(async move {
        tonic::transport::Server::builder()
            .add_service(health)
            .serve_with_incoming(tls::incoming(listener, Some(acceptor)))
            .await
    });
    address
}

async fn check(address: std::net::SocketAddr, client: &ClientTls) -> bool {
    let options = balance::Options {
        connect_timeout: Duration::from_secs(2),
        tls: Some(client.connector("tool-service.internal").unwrap()),
        ..balance::Options::default()
    };
    let channel = Balanced::fixed(
        "https://tool-service.internal:50052",
        vec![address],
        options,
    )
    .unwrap();
    HealthClient::new(channel)
        .check(HealthCheckRequest::default())
        .await
        .is_ok()
}

#[tokio::test]
async fn a_client_trusting_the_ca_is_served_over_tls_and_mtls_needs_a_client_certificate() {
    let dir = dir();
    let ca = authority("internal CA");
    std::fs::write(dir.join("ca.pem"), &ca.pem).unwrap();
    let ca_file = path(&dir.join("ca.pem"));
    let (cert_file, key_file) = leaf(&dir, "server", "tool-service.internal", &ca);

    let server = ServerTls {
        cert_file: cert_file.clone(),
        key_file: key_file.clone(),
        client_ca_file: None,
    };
    let address = serve(&server, Duration::from_secs(5)).await;
    let trusting = ClientTls {
        ca_file: ca_file.clone(),
        ..ClientTls::default()
    };
    assert!(check(address, &trusting).await, "TLS with the CA");
    let other = authority("another CA");
    std::fs::write(dir.join("other.pem"), &other.pem).unwrap();
    let stranger = ClientTls {
        ca_file: path(&dir.join("other.pem")),
        ..ClientTls::default()
    };
    assert!(
        !check(address, &stranger).await,
        "an untrusted server is refused"
    );

    let mutual = ServerTls {
        client_ca_file: Some(ca_file.clone()),
        ..server
    };
    let address = serve(&mutual, Duration::from_secs(5)).await;
    assert!(
        !check(address, &trusting).await,
        "mTLS: no client certificate, no call"
    );
    let (client_cert, client_key) = leaf(&dir, "client", "gateway.internal", &ca);
    let identified = ClientTls {
        cert_file: Some(client_cert),
        key_file: Some(client_key),
        ..trusting
    };
    assert!(
        check(address, &identified).await,
        "mTLS with a client certificate"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_certificate_replaced_on_disk_serves_the_next_connection() {
    let dir = dir();
    let old_ca = authority("old CA");
    let (cert_file, key_file) = leaf(&dir, "server", "tool-service.internal", &old_ca);
    let server = ServerTls {
        cert_file,
        key_file,
        client_ca_file: None,
    };
    let address = serve(&server, Duration::ZERO).await;
    let new_ca = authority("new CA");
    std::fs::write(dir.join("new-ca.pem"), &new_ca.pem).unwrap();
    let trusting_new = ClientTls {
        ca_file: path(&dir.join("new-ca.pem")),
        ..ClientTls::default()
    };
    assert!(
        !check(address, &trusting_new).await,
        "still the old certificate"
    );
    // Rotation: the files are replaced in place (a renewed Secret), with a
    // later modification time (kept: the stamps are what is watched).
    std::thread::sleep(Duration::from_millis(20));
    leaf(&dir, "server", "tool-service.internal", &new_ca);
    assert!(
        check(address, &trusting_new).await,
        "the new certificate, no restart"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_rotation_caught_half_written_is_loaded_once_complete() {
    let dir = dir();
    let old_ca = authority("old CA");
    std::fs::write(dir.join("old-ca.pem"), &old_ca.pem).unwrap();
    let (cert_file, key_file) = leaf(&dir, "server", "tool-service.internal", &old_ca);
    let server = ServerTls {
        cert_file: cert_file.clone(),
        key_file: key_file.clone(),
        client_ca_file: None,
    };
    let address = serve(&server, Duration::ZERO).await;
    let new_ca = authority("new CA");
    std::fs::write(dir.join("new-ca.pem"), &new_ca.pem).unwrap();
    let trusting = |ca: &str| ClientTls {
        ca_file: path(&dir.join(ca)),
        ..ClientTls::default()
    };
    // Half-written: the new key has landed, the certificate is still the
    // old one. The pair does not load; the old certificate keeps serving.
    let old_cert = std::fs::read(&cert_file).unwrap();
    let cert_stamp = std::fs::metadata(&cert_file).unwrap().modified().unwrap();
    // Kept: the new key gets a later modification time (the stamps are what
    // is watched).
    std::thread::sleep(Duration::from_millis(20));
    leaf(&dir, "server", "tool-service.internal", &new_ca);
    let new_cert = std::fs::read(&cert_file).unwrap();
    std::fs::write(&cert_file, old_cert).unwrap();
    set_modified(&cert_file, cert_stamp);
    assert!(
        check(address, &trusting("old-ca.pem")).await,
        "half-written: the old pair still serves"
    );
    // The certificate lands within the same timestamp tick (coarse
    // timestamps): no stamp changes, yet the failed load is tried again.
    std::fs::write(&cert_file, new_cert).unwrap();
    set_modified(&cert_file, cert_stamp);
    assert!(
        check(address, &trusting("new-ca.pem")).await,
        "complete: the new certificate serves"
    );
    let _ = std::fs::remove_dir_all(dir);
}

fn set_modified(file: &str, at: std::time::SystemTime) {
    std::fs::File::options()
        .write(true)
        .open(file)
        .unwrap()
        .set_modified(at)
        .unwrap();
}

#[test]
fn validation_names_the_field_and_the_path() {
    let dir = dir();
    let ca = authority("internal CA");
    std::fs::write(dir.join("ca.pem"), &ca.pem).unwrap();
    let ca_file = path(&dir.join("ca.pem"));
    let (cert_file, key_file) = leaf(&dir, "server", "tool-service.internal", &ca);

    let no_key = ServerTls {
        cert_file: cert_file.clone(),
        key_file: String::new(),
        client_ca_file: None,
    };
    let error = no_key.validate("grpc_tls").unwrap_err().to_string();
    assert!(error.contains("grpc_tls.key_file"), "{error}");

    let missing = path(&dir.join("absent.crt"));
    let unreadable = ServerTls {
        cert_file: missing.clone(),
        key_file: key_file.clone(),
        client_ca_file: None,
    };
    let error = format!("{:#}", unreadable.validate("tls").unwrap_err());
    assert!(
        error.contains("tls.cert_file") && error.contains(&missing),
        "{error}"
    );

    let garbage = path(&dir.join("garbage.pem"));
    std::fs::write(&garbage, "not a certificate").unwrap();
    let unusable = ServerTls {
        cert_file: cert_file.clone(),
        key_file: key_file.clone(),
        client_ca_file: Some(garbage.clone()),
    };
    let error = format!("{:#}", unusable.validate("tls").unwrap_err());
    assert!(
        error.contains("tls.client_ca_file") && error.contains(&garbage),
        "{error}"
    );

    let cert_only = ClientTls {
        ca_file: ca_file.clone(),
        cert_file: Some(cert_file.clone()),
        ..ClientTls::default()
    };
    let error = cert_only.validate("backend_tls").unwrap_err().to_string();
    assert!(error.contains("backend_tls.key_file"), "{error}");
    let bad_name = ClientTls {
        ca_file: ca_file.clone(),
        server_name: Some("not a name!".into()),
        ..ClientTls::default()
    };
    let error = bad_name.validate("backend_tls").unwrap_err().to_string();
    assert!(error.contains("backend_tls.server_name"), "{error}");

    let complete = ClientTls {
        ca_file,
        cert_file: Some(cert_file.clone()),
        key_file: Some(key_file.clone()),
        server_name: Some("tool-service.internal".into()),
    };
    complete.validate("backend_tls").unwrap();
    ServerTls {
        cert_file,
        key_file,
        client_ca_file: None,
    }
    .validate("tls")
    .unwrap();
    let _ = std::fs::remove_dir_all(dir);
}
