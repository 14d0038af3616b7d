//! The public listener's admission of each connection (the gateway's part
//! of `chataigne_common::http_server`, which adds the connection caps and
//! time bounds): the source-address allowlist is decided at accept, before
//! any byte is read, for every peer that is not a trusted proxy; a trusted
//! proxy speaking the PROXY protocol (v1/v2, parsed by the `ppp` crate) must
//! open with its header, and the client it names is decided right after it.
//! A refused address is closed at once. Then, when TLS is configured, the
//! handshake. Connections from trusted proxies without the PROXY protocol
//! are decided per request from `X-Forwarded-For` (`allowlist::enforce`).

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::task::{Context, Poll};

use chataigne_common::http_server::{Admission, Opened, Screen};
use ppp::{HeaderResult, PartialResult, v1, v2};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::config::Allowlist;
use crate::edge::allowlist::{self, Origin, Peer, Policy, Relayed};

/// Largest PROXY header read (v2: 16 bytes + a 16-bit length).
const MAX_HEADER_BYTES: usize = 16 + u16::MAX as usize;

/// The gateway's admission: allowlist at accept, PROXY header, TLS.
pub struct PublicAdmission {
    policy: Policy,
    proxy_protocol: bool,
    tls: Option<TlsAcceptor>,
}

impl PublicAdmission {
    pub fn new(allowlist: &Allowlist, tls: Option<TlsAcceptor>) -> PublicAdmission {
        PublicAdmission {
            policy: Policy::new(allowlist),
            proxy_protocol: allowlist.proxy_protocol,
            tls,
        }
    }

    fn expects_header(&self, peer: IpAddr) -> bool {
        self.proxy_protocol && self.policy.is_trusted(peer)
    }
}

impl Admission for PublicAdmission {
    type Io = Connection;
    type Info = Peer;

    /// Peers that are not trusted proxies are the clients: refused ones are
    /// closed before any byte is read; the others are held to the
    /// per-address cap. Trusted proxies are held to the total cap only.
    fn screen(&self, peer: SocketAddr) -> Screen {
        let socket = allowlist::canonical(peer.ip());
        match self.policy.origin(socket) {
            Origin::Forwarded(_) => Screen::Admit { client: None },
            Origin::Client(client) if self.policy.admits(client) => Screen::Admit {
                client: Some(client),
            },
            Origin::Client(client) => {
                allowlist::log_refusal("address_not_allowed", Some(client), socket);
                Screen::Refuse("address_not_allowed")
            }
        }
    }

    /// Reads the PROXY header a trusted proxy sends first and decides the
    /// client it names, then performs the TLS handshake. The connection is
    /// closed, never served, when the header is missing or invalid, names a
    /// refused client, or the handshake fails (all within the header read
    /// timeout of the server).
    async fn open(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> Result<Opened<Connection, Peer>, &'static str> {
        let socket = allowlist::canonical(peer.ip());
        let (replay, origin, client) = if self.expects_header(socket) {
            let Some((replay, relayed)) = read_proxy_header(stream).await else {
                tracing::info!(
                    reason = "proxy_header_invalid",
                    peer = %socket,
                    "connection refused: no valid PROXY protocol header from a trusted proxy"
                );
                return Err("proxy_header_invalid");
            };
            match self.policy.origin_via_proxy(socket, relayed) {
                Origin::Client(client) if !self.policy.admits(client) => {
                    allowlist::log_refusal("address_not_allowed", Some(client), socket);
                    return Err("address_not_allowed");
                }
                origin @ Origin::Client(client) => (replay, origin, Some(client)),
                origin @ Origin::Forwarded(_) => (replay, origin, None),
            }
        } else {
            (
                Replay::new(stream, Vec::new()),
                self.policy.origin(socket),
                None,
            )
        };
        let io = match &self.tls {
            None => Connection::Plain(replay),
            Some(acceptor) => match acceptor.accept(replay).await {
                Ok(stream) => Connection::Tls(Box::new(stream)),
                Err(_) => {
                    tracing::debug!(peer = %socket, "TLS handshake failed");
                    return Err("tls_handshake_failed");
                }
            },
        };
        Ok(Opened {
            io,
            info: Peer {
                socket: peer,
                origin,
            },
            client,
        })
    }
}

/// The relayed source of a parsed header; `None` for `LOCAL`/`UNKNOWN`
/// headers (the proxy's own connections, e.g. health checks).
fn relayed_source(header: &HeaderResult<'_>) -> Option<SocketAddr> {
    match header {
        HeaderResult::V1(Ok(header)) => match header.addresses {
            v1::Addresses::Tcp4(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
            v1::Addresses::Tcp6(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
            v1::Addresses::Unknown => None,
        },
        HeaderResult::V2(Ok(header)) if header.command == v2::Command::Proxy => {
            match header.addresses {
                v2::Addresses::IPv4(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
                v2::Addresses::IPv6(a) => Some(SocketAddr::from((a.source_address, a.source_port))),
                v2::Addresses::Unspecified | v2::Addresses::Unix(_) => None,
            }
        }
        _ => None,
    }
}

/// Length of a parsed header, or `None` when the bytes are not one.
fn header_length(header: &HeaderResult<'_>) -> Option<usize> {
    match header {
        HeaderResult::V1(Ok(header)) => Some(header.header.len()),
        HeaderResult::V2(Ok(header)) => Some(header.header.len()),
        HeaderResult::V1(Err(_)) | HeaderResult::V2(Err(_)) => None,
    }
}

/// Reads a PROXY header (bounded in size; the server bounds the time); the
/// bytes after it are kept for the connection.
async fn read_proxy_header(mut stream: TcpStream) -> Option<(Replay, Relayed)> {
    let mut buffer = Vec::with_capacity(256);
    let mut chunk = [0u8; 1024];
    loop {
        let read = stream.read(&mut chunk).await.ok()?;
        if read == 0 {
            return None;
        }
        buffer.extend_from_slice(&chunk[..read]);
        let header = HeaderResult::parse(&buffer);
        if header.is_complete() {
            let length = header_length(&header)?;
            let relayed = relayed_source(&header)
                .map_or(Relayed::Unknown, |source| Relayed::Source(source.ip()));
            let rest = buffer.split_off(length);
            return Some((Replay::new(stream, rest), relayed));
        }
        if buffer.len() > MAX_HEADER_BYTES {
            return None;
        }
    }
}

/// An accepted connection, in plain text or TLS.
pub enum Connection {
    Plain(Replay),
    Tls(Box<TlsStream<Replay>>),
}

impl AsyncRead for Connection {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Connection::Plain(stream) => Pin::new(stream).poll_read(cx, buf),
            Connection::Tls(stream) => Pin::new(stream.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Connection {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Connection::Plain(stream) => Pin::new(stream).poll_write(cx, buf),
            Connection::Tls(stream) => Pin::new(stream.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Connection::Plain(stream) => Pin::new(stream).poll_write_vectored(cx, bufs),
            Connection::Tls(stream) => Pin::new(stream.as_mut()).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Connection::Plain(stream) => stream.is_write_vectored(),
            Connection::Tls(stream) => stream.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Connection::Plain(stream) => Pin::new(stream).poll_flush(cx),
            Connection::Tls(stream) => Pin::new(stream.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Connection::Plain(stream) => Pin::new(stream).poll_shutdown(cx),
            Connection::Tls(stream) => Pin::new(stream.as_mut()).poll_shutdown(cx),
        }
    }
}

/// A TCP connection whose bytes read past a PROXY header are replayed first.
pub struct Replay {
    replay: Vec<u8>,
    replayed: usize,
    stream: TcpStream,
}

impl Replay {
    fn new(stream: TcpStream, replay: Vec<u8>) -> Replay {
        Replay {
            replay,
            replayed: 0,
            stream,
        }
    }
}

impl AsyncRead for Replay {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.replayed < this.replay.len() {
            let pending = &this.replay[this.replayed..];
            let n = pending.len().min(buf.remaining());
            buf.put_slice(&pending[..n]);
            this.replayed += n;
            if this.replayed == this.replay.len() {
                this.replay = Vec::new();
                this.replayed = 0;
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Replay {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn admission(proxy_protocol: bool) -> PublicAdmission {
        PublicAdmission::new(
            &Allowlist {
                enabled: true,
                cidrs: vec!["203.0.113.0/24".parse().unwrap()],
                trusted_proxies: vec!["127.0.0.1/32".parse().unwrap()],
                proxy_protocol,
            },
            None,
        )
    }

    /// Opens one loopback connection through `admission` after the client
    /// wrote `bytes`.
    async fn open_with(admission: &PublicAdmission, bytes: &[u8]) -> Result<Peer, &'static str> {
        use tokio::io::AsyncWriteExt;
        let tcp = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let mut client = TcpStream::connect(tcp.local_addr().unwrap()).await.unwrap();
        client.write_all(bytes).await.unwrap();
        client.shutdown().await.unwrap();
        let (stream, peer) = tcp.accept().await.unwrap();
        admission.open(stream, peer).await.map(|opened| opened.info)
    }

    #[tokio::test]
    async fn a_trusted_peer_must_send_a_proxy_header_naming_an_allowed_client() {
        let with_proxy = admission(true);
        assert_eq!(
            open_with(&with_proxy, b"GET / HTTP/1.1\r\n\r\n").await,
            Err("proxy_header_invalid")
        );
        assert_eq!(
            open_with(&with_proxy, b"PROXY TCP4 198.51.100.1 10.0.0.1 1 443\r\n").await,
            Err("address_not_allowed"),
            "refused right after the header"
        );
        assert_eq!(
            open_with(&with_proxy, b"PROXY UNKNOWN\r\n").await,
            Err("address_not_allowed"),
            "no source: the proxy itself is the client"
        );
        let peer = open_with(&with_proxy, b"PROXY TCP4 203.0.113.9 10.0.0.1 1 443\r\n")
            .await
            .unwrap();
        assert_eq!(peer.origin, Origin::Client("203.0.113.9".parse().unwrap()));
        // Without the protocol, the trusted proxy forwards with X-Forwarded-For.
        let peer = open_with(&admission(false), b"GET / HTTP/1.1\r\n\r\n")
            .await
            .unwrap();
        assert_eq!(peer.origin, Origin::Forwarded("127.0.0.1".parse().unwrap()));
    }

    #[test]
    fn refused_peers_are_screened_before_any_byte_is_read() {
        let admission = admission(true);
        let screen = |addr: &str| admission.screen(addr.parse().unwrap());
        assert_eq!(
            screen("198.51.100.1:4000"),
            Screen::Refuse("address_not_allowed")
        );
        assert_eq!(
            screen("203.0.113.7:4000"),
            Screen::Admit {
                client: Some("203.0.113.7".parse().unwrap())
            }
        );
        assert_eq!(
            screen("[::ffff:203.0.113.7]:4000"),
            Screen::Admit {
                client: Some("203.0.113.7".parse().unwrap())
            },
            "dual-stack sockets compare as IPv4"
        );
        assert_eq!(
            screen("127.0.0.1:4000"),
            Screen::Admit { client: None },
            "a trusted proxy is decided after its header"
        );
    }

    #[test]
    fn v1_and_v2_headers_give_the_relayed_source_and_their_length() {
        let v1 = b"PROXY TCP4 198.51.100.4 10.0.0.1 4000 443\r\nGET / HTTP/1.1\r\n";
        let parsed = HeaderResult::parse(v1);
        assert!(parsed.is_complete());
        assert_eq!(
            relayed_source(&parsed),
            Some("198.51.100.4:4000".parse().unwrap())
        );
        assert_eq!(header_length(&parsed), Some(43));

        let v1_six = b"PROXY TCP6 2001:db8::1 2001:db8::2 4000 443\r\n";
        let parsed = HeaderResult::parse(v1_six);
        assert_eq!(
            relayed_source(&parsed),
            Some("[2001:db8::1]:4000".parse().unwrap())
        );

        let unknown = HeaderResult::parse(b"PROXY UNKNOWN\r\n");
        assert_eq!(relayed_source(&unknown), None);
        assert_eq!(header_length(&unknown), Some(15));

        let addresses: v2::Addresses = (
            "198.51.100.4:4000".parse::<SocketAddr>().unwrap(),
            "10.0.0.1:443".parse::<SocketAddr>().unwrap(),
        )
            .into();
        let mut v2 = v2::Builder::with_addresses(
            v2::Version::Two | v2::Command::Proxy,
            v2::Protocol::Stream,
            addresses,
        )
        .build()
        .unwrap();
        let length = v2.len();
        v2.extend_from_slice(b"GET /");
        let parsed = HeaderResult::parse(&v2);
        assert!(parsed.is_complete());
        assert_eq!(
            relayed_source(&parsed),
            Some("198.51.100.4:4000".parse().unwrap())
        );
        assert_eq!(header_length(&parsed), Some(length));
    }

    #[test]
    fn partial_and_foreign_bytes_are_told_apart() {
        assert!(HeaderResult::parse(b"PROXY TCP4 198.51").is_incomplete());
        let http = HeaderResult::parse(b"GET /mcp/v1 HTTP/1.1\r\nHost: x\r\n\r\n");
        assert!(http.is_complete());
        assert_eq!(header_length(&http), None);
    }
}
