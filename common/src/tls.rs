//! TLS for the internal gRPC hops (rustls with aws-lc-rs): the server side
//! (certificate chain and key, and with a client CA bundle, required client
//! certificates: mTLS) and the client side (the CA bundle that verifies the
//! backend, and optionally a client certificate), all from PEM files that are
//! re-read when they change — a rotated certificate (cert-manager renews
//! Secrets in place) applies to the next connection without a restart.
//! [`incoming`] feeds a tonic server; [`TlsAdmission`] puts TLS on an
//! `http_server` listener (the auth-service's OAuth HTTP port).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use futures::{Stream, StreamExt};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};

use crate::http_server::{Admission, Opened, Screen};

/// How often changed files are looked for, at most.
const RECHECK_EVERY: Duration = Duration::from_secs(5);
/// Longest TLS handshake of an accepted connection.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Handshakes run at once on a listener; more connections wait their turn.
const CONCURRENT_HANDSHAKES: usize = 256;

/// Server TLS of a gRPC listener.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServerTls {
    /// PEM certificate chain, leaf first; with `key_file`, re-read within
    /// seconds when either changes (a renewed Secret), no restart.
    pub cert_file: String,
    /// PEM private key of `cert_file`.
    pub key_file: String,
    /// PEM CA bundle of client certificates; set, every client must present
    /// a certificate it signed (mTLS).
    #[serde(default)]
    pub client_ca_file: Option<String>,
}

/// Client TLS towards a backend.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientTls {
    /// PEM CA bundle that verifies the backend's certificate.
    pub ca_file: String,
    /// PEM client certificate chain, for backends that require mTLS; needs
    /// `key_file`.
    #[serde(default)]
    pub cert_file: Option<String>,
    /// PEM key of `cert_file`.
    #[serde(default)]
    pub key_file: Option<String>,
    /// Name the backend's certificate must carry; default: the URL's host.
    #[serde(default)]
    pub server_name: Option<String>,
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

fn certificates(path: &str, what: &str) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let chain = CertificateDer::pem_file_iter(path)
        .with_context(|| format!("reading {what} {path}"))?
        .collect::<Result<Vec<_>, _>>()
        .with_context(|| format!("parsing {what} {path}"))?;
    anyhow::ensure!(!chain.is_empty(), "{what} {path} holds no certificate");
    Ok(chain)
}

fn private_key(path: &str, what: &str) -> anyhow::Result<PrivateKeyDer<'static>> {
    PrivateKeyDer::from_pem_file(path).with_context(|| format!("reading {what} {path}"))
}

fn roots(path: &str, what: &str) -> anyhow::Result<RootCertStore> {
    let mut roots = RootCertStore::empty();
    for certificate in certificates(path, what)? {
        roots
            .add(certificate)
            .with_context(|| format!("{what} {path} holds an unusable certificate"))?;
    }
    Ok(roots)
}

/// The file of `section.field` can be opened for reading.
fn readable(section: &str, field: &str, path: &str) -> anyhow::Result<()> {
    std::fs::File::open(path)
        .map(drop)
        .with_context(|| format!("{section}.{field}: cannot read {path}"))
}

impl ServerTls {
    fn files(&self) -> Vec<PathBuf> {
        let mut files = vec![
            PathBuf::from(&self.cert_file),
            PathBuf::from(&self.key_file),
        ];
        files.extend(self.client_ca_file.iter().map(PathBuf::from));
        files
    }

    /// Checks the fields alone (no file is read): both files named. Errors
    /// name `section.<field>`.
    pub fn check_fields(&self, section: &str) -> anyhow::Result<()> {
        for (field, value) in [("cert_file", &self.cert_file), ("key_file", &self.key_file)] {
            anyhow::ensure!(
                !value.trim().is_empty(),
                "{section}.{field} must be set (a server certificate needs both cert_file and key_file)"
            );
        }
        Ok(())
    }

    /// Checks the configuration now: [`ServerTls::check_fields`], every file
    /// readable and the certificates usable. Errors name `section.<field>`
    /// and the path.
    pub fn validate(&self, section: &str) -> anyhow::Result<()> {
        self.check_fields(section)?;
        readable(section, "cert_file", &self.cert_file)?;
        readable(section, "key_file", &self.key_file)?;
        if let Some(ca) = &self.client_ca_file {
            readable(section, "client_ca_file", ca)?;
        }
        self.build(section).map(drop)
    }

    fn build(&self, section: &str) -> anyhow::Result<ServerConfig> {
        let chain = certificates(&self.cert_file, &format!("{section}.cert_file"))?;
        let key = private_key(&self.key_file, &format!("{section}.key_file"))?;
        let builder = ServerConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?;
        let builder = match &self.client_ca_file {
            Some(ca) => {
                let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                    Arc::new(roots(ca, &format!("{section}.client_ca_file"))?),
                    provider(),
                )
                .build()
                .with_context(|| format!("{section}.client_ca_file"))?;
                builder.with_client_cert_verifier(verifier)
            }
            None => builder.with_no_client_auth(),
        };
        let mut config = builder.with_single_cert(chain, key).with_context(|| {
            format!("{section}.cert_file and {section}.key_file do not form a usable pair")
        })?;
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(config)
    }

    /// The acceptor of this configuration (gRPC: HTTP/2 only), checked now (a
    /// wrong file stops the start) and re-read when its files change.
    pub fn acceptor(&self) -> anyhow::Result<Acceptor> {
        self.acceptor_rechecking(RECHECK_EVERY)
    }

    /// The acceptor of an HTTP listener: like [`ServerTls::acceptor`], also
    /// offering HTTP/1.1 (ALPN `h2`, then `http/1.1`).
    pub fn http_acceptor(&self) -> anyhow::Result<Acceptor> {
        let tls = self.clone();
        Ok(Acceptor(Arc::new(Reloading::new(
            self.files(),
            RECHECK_EVERY,
            move || {
                let mut config = tls.build("tls")?;
                config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
                Ok(Arc::new(config))
            },
        )?)))
    }

    /// Like [`ServerTls::acceptor`], looking for changed files at most every
    /// `every`.
    pub fn acceptor_rechecking(&self, every: Duration) -> anyhow::Result<Acceptor> {
        let tls = self.clone();
        Ok(Acceptor(Arc::new(Reloading::new(
            self.files(),
            every,
            move || tls.build("tls").map(Arc::new),
        )?)))
    }
}

impl ClientTls {
    fn files(&self) -> Vec<PathBuf> {
        let mut files = vec![PathBuf::from(&self.ca_file)];
        files.extend(self.cert_file.iter().map(PathBuf::from));
        files.extend(self.key_file.iter().map(PathBuf::from));
        files
    }

    /// Checks the fields alone (no file is read): the CA bundle named, the
    /// client certificate and key together or neither, the server name
    /// override valid. Errors name `section.<field>`.
    pub fn check_fields(&self, section: &str) -> anyhow::Result<()> {
        anyhow::ensure!(
            !self.ca_file.trim().is_empty(),
            "{section}.ca_file must be set"
        );
        match (&self.cert_file, &self.key_file) {
            (Some(_), None) => {
                anyhow::bail!("{section}.cert_file is set without {section}.key_file")
            }
            (None, Some(_)) => {
                anyhow::bail!("{section}.key_file is set without {section}.cert_file")
            }
            _ => {}
        }
        if let Some(name) = &self.server_name {
            ServerName::try_from(name.clone()).with_context(|| {
                format!("{section}.server_name: {name:?} is not a valid TLS server name")
            })?;
        }
        Ok(())
    }

    /// Checks the configuration now: [`ClientTls::check_fields`], every file
    /// readable and the certificates usable. Errors name `section.<field>`
    /// and the path.
    pub fn validate(&self, section: &str) -> anyhow::Result<()> {
        self.check_fields(section)?;
        readable(section, "ca_file", &self.ca_file)?;
        for (field, file) in [("cert_file", &self.cert_file), ("key_file", &self.key_file)] {
            if let Some(file) = file {
                readable(section, field, file)?;
            }
        }
        self.build(section).map(drop)
    }

    fn build(&self, section: &str) -> anyhow::Result<ClientConfig> {
        let builder = ClientConfig::builder_with_provider(provider())
            .with_safe_default_protocol_versions()
            .context("TLS protocol versions")?
            .with_root_certificates(roots(&self.ca_file, &format!("{section}.ca_file"))?);
        let mut config = match (&self.cert_file, &self.key_file) {
            (Some(cert), Some(key)) => builder
                .with_client_auth_cert(
                    certificates(cert, &format!("{section}.cert_file"))?,
                    private_key(key, &format!("{section}.key_file"))?,
                )
                .with_context(|| {
                    format!("{section}.cert_file and {section}.key_file do not form a usable pair")
                })?,
            (None, None) => builder.with_no_client_auth(),
            _ => anyhow::bail!("{section}.cert_file and {section}.key_file go together"),
        };
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(config)
    }

    /// The connector of this configuration, checked now and re-read when its
    /// files change.
    pub fn connector(&self, default_server_name: &str) -> anyhow::Result<Connector> {
        let name = self
            .server_name
            .clone()
            .unwrap_or_else(|| default_server_name.to_owned());
        let server_name = ServerName::try_from(name.clone())
            .with_context(|| format!("{name:?} is not a valid TLS server name"))?;
        let tls = self.clone();
        Ok(Connector {
            config: Arc::new(Reloading::new(self.files(), RECHECK_EVERY, move || {
                tls.build("client tls").map(Arc::new)
            })?),
            server_name,
        })
    }

    /// [`ClientTls::connector`] towards the backend named by `url`: its host
    /// is the server name unless `server_name` overrides it.
    pub fn connector_for(&self, url: &str) -> anyhow::Result<Connector> {
        let uri: http::Uri = url
            .parse()
            .with_context(|| format!("{url:?} is not a URL"))?;
        let host = uri
            .host()
            .with_context(|| format!("{url:?} names no host"))?;
        self.connector(host.trim_start_matches('[').trim_end_matches(']'))
    }
}

/// A value built from files and rebuilt when one of them changes (checked at
/// most every few seconds, on use); a rebuild that fails keeps the last good
/// value, says so, and is tried again at the next check.
struct Reloading<T> {
    files: Vec<PathBuf>,
    recheck_every: Duration,
    build: Box<dyn Fn() -> anyhow::Result<Arc<T>> + Send + Sync>,
    current: RwLock<Arc<T>>,
    seen: Mutex<(Instant, Vec<Option<SystemTime>>)>,
}

fn modified(files: &[PathBuf]) -> Vec<Option<SystemTime>> {
    files
        .iter()
        .map(|f| std::fs::metadata(f).and_then(|m| m.modified()).ok())
        .collect()
}

impl<T> Reloading<T> {
    fn new(
        files: Vec<PathBuf>,
        recheck_every: Duration,
        build: impl Fn() -> anyhow::Result<Arc<T>> + Send + Sync + 'static,
    ) -> anyhow::Result<Reloading<T>> {
        let current = build()?;
        let stamps = modified(&files);
        Ok(Reloading {
            files,
            recheck_every,
            build: Box::new(build),
            current: RwLock::new(current),
            seen: Mutex::new((Instant::now(), stamps)),
        })
    }

    fn get(&self) -> Arc<T> {
        let changed = {
            let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
            if seen.0.elapsed() < self.recheck_every {
                None
            } else {
                seen.0 = Instant::now();
                let stamps = modified(&self.files);
                (stamps != seen.1).then_some(stamps)
            }
        };
        if let Some(stamps) = changed {
            match (self.build)() {
                Ok(fresh) => {
                    tracing::info!("TLS files changed: certificates reloaded");
                    *self.current.write().unwrap_or_else(|p| p.into_inner()) = fresh;
                    self.seen.lock().unwrap_or_else(|p| p.into_inner()).1 = stamps;
                }
                Err(error) => {
                    // Not recorded as seen: a rotation caught half-written
                    // (new certificate, old key) is tried again next time.
                    tracing::warn!(%error, "TLS files changed but do not load: the previous ones stay in use");
                }
            }
        }
        self.current
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// Server side: completes TLS handshakes with the current certificates.
#[derive(Clone)]
pub struct Acceptor(Arc<Reloading<ServerConfig>>);

impl Acceptor {
    pub async fn accept(
        &self,
        tcp: TcpStream,
    ) -> std::io::Result<tokio_rustls::server::TlsStream<TcpStream>> {
        tokio_rustls::TlsAcceptor::from(self.0.get())
            .accept(tcp)
            .await
    }
}

/// Client side: opens TLS connections to a backend with the current files.
#[derive(Clone)]
pub struct Connector {
    config: Arc<Reloading<ClientConfig>>,
    server_name: ServerName<'static>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

impl Connector {
    pub async fn connect(
        &self,
        address: SocketAddr,
    ) -> std::io::Result<tokio_rustls::client::TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(address).await?;
        tcp.set_nodelay(true)?;
        tokio_rustls::TlsConnector::from(self.config.get())
            .connect(self.server_name.clone(), tcp)
            .await
    }
}

/// One accepted connection of a gRPC listener, plain or TLS.
pub enum Conn {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl Conn {
    fn tcp(&self) -> &TcpStream {
        match self {
            Conn::Plain(tcp) => tcp,
            Conn::Tls(tls) => tls.get_ref().0,
        }
    }
}

impl tonic::transport::server::Connected for Conn {
    type ConnectInfo = tonic::transport::server::TcpConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        tonic::transport::server::TcpConnectInfo {
            local_addr: self.tcp().local_addr().ok(),
            remote_addr: self.tcp().peer_addr().ok(),
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(tcp) => Pin::new(tcp).poll_read(cx, buf),
            Conn::Tls(tls) => Pin::new(tls.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Conn::Plain(tcp) => Pin::new(tcp).poll_write(cx, buf),
            Conn::Tls(tls) => Pin::new(tls.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(tcp) => Pin::new(tcp).poll_flush(cx),
            Conn::Tls(tls) => Pin::new(tls.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Conn::Plain(tcp) => Pin::new(tcp).poll_shutdown(cx),
            Conn::Tls(tls) => Pin::new(tls.as_mut()).poll_shutdown(cx),
        }
    }
}

/// The connections of a gRPC listener for `tonic`'s `serve_with_incoming`:
/// plain, or TLS with `acceptor` (handshakes run concurrently, each bounded
/// in time; a failed one closes that connection only).
pub fn incoming(
    listener: TcpListener,
    acceptor: Option<Acceptor>,
) -> impl Stream<Item = std::io::Result<Conn>> + Send {
    tokio_stream::wrappers::TcpListenerStream::new(listener)
        .filter_map(|accepted| async move {
            match accepted {
                Ok(tcp) => {
                    let _ = tcp.set_nodelay(true);
                    Some(tcp)
                }
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    None
                }
            }
        })
        .map(move |tcp| {
            let acceptor = acceptor.clone();
            async move {
                match acceptor {
                    None => Some(Conn::Plain(tcp)),
                    Some(acceptor) => {
                        match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                            Ok(Ok(tls)) => Some(Conn::Tls(Box::new(tls))),
                            Ok(Err(error)) => {
                                tracing::debug!(%error, "TLS handshake refused");
                                None
                            }
                            Err(_) => {
                                tracing::debug!("TLS handshake timed out");
                                None
                            }
                        }
                    }
                }
            }
        })
        .buffer_unordered(CONCURRENT_HANDSHAKES)
        .filter_map(|conn| async move { conn.map(Ok) })
}

/// An HTTP listener's admission (see `http_server`) with TLS after `inner`:
/// `inner` screens the peer and prepares the plain TCP connection, then the
/// handshake runs with the current certificates, under the header deadline.
/// Without an acceptor, connections stay plain.
pub struct TlsAdmission<A> {
    inner: A,
    acceptor: Option<Acceptor>,
}

impl<A> TlsAdmission<A> {
    pub fn new(inner: A, acceptor: Option<Acceptor>) -> TlsAdmission<A> {
        TlsAdmission { inner, acceptor }
    }
}

impl<A: Admission<Io = TcpStream>> Admission for TlsAdmission<A> {
    type Io = Conn;
    type Info = A::Info;

    fn screen(&self, peer: SocketAddr) -> Screen {
        self.inner.screen(peer)
    }

    async fn open(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> Result<Opened<Conn, A::Info>, &'static str> {
        let opened = self.inner.open(stream, peer).await?;
        let io = match &self.acceptor {
            None => Conn::Plain(opened.io),
            Some(acceptor) => match acceptor.accept(opened.io).await {
                Ok(tls) => Conn::Tls(Box::new(tls)),
                Err(error) => {
                    tracing::debug!(%error, "TLS handshake refused");
                    return Err("tls_handshake_failed");
                }
            },
        };
        Ok(Opened {
            io,
            info: opened.info,
            client: opened.client,
        })
    }
}
