//! The public listener: accepts TCP connections; when the PROXY protocol is
//! on, reads the v1/v2 header that trusted proxies put in front of each
//! connection (parsed by the `ppp` crate) to learn the client's address; and
//! when TLS is configured, performs the TLS handshake. Header reads and
//! handshakes run concurrently with accepting, each under a deadline, so a
//! slow connection never holds up the others.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use chataigne_common::metrics::prometheus::IntCounter;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use ipnet::IpNet;
use ppp::{HeaderResult, PartialResult, v1, v2};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

use crate::config::Allowlist;

/// Longest wait for a complete PROXY header, and then for the TLS handshake,
/// after the connection opens.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Largest PROXY header read (v2: 16 bytes + a 16-bit length).
const MAX_HEADER_BYTES: usize = 16 + u16::MAX as usize;

/// Where a connection comes from: the socket peer and, when a trusted proxy
/// sent a PROXY header naming one, the source it relays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Peer {
    pub socket: SocketAddr,
    pub proxied: Option<SocketAddr>,
}

impl Connected<IncomingStream<'_, PublicListener>> for Peer {
    fn connect_info(stream: IncomingStream<'_, PublicListener>) -> Self {
        *stream.remote_addr()
    }
}

type Handshake = Pin<Box<dyn Future<Output = Option<(Connection, Peer)>> + Send>>;

/// The public listener with its optional PROXY protocol handling and TLS.
pub struct PublicListener {
    tcp: TcpListener,
    /// Peers that must open with a PROXY header; `None`: protocol off.
    proxy_peers: Option<Arc<[IpNet]>>,
    tls: Option<TlsAcceptor>,
    handshakes: FuturesUnordered<Handshake>,
    /// Counts connections dropped for a missing or invalid PROXY header.
    proxy_refusals: Option<IntCounter>,
}

impl PublicListener {
    pub fn new(
        tcp: TcpListener,
        allowlist: &Allowlist,
        tls: Option<TlsAcceptor>,
    ) -> PublicListener {
        PublicListener {
            tcp,
            proxy_peers: allowlist
                .proxy_protocol
                .then(|| allowlist.trusted_proxies.iter().map(IpNet::trunc).collect()),
            tls,
            handshakes: FuturesUnordered::new(),
            proxy_refusals: None,
        }
    }

    /// Counts in `counter` each connection refused for its PROXY header.
    pub fn counting_proxy_refusals(mut self, counter: IntCounter) -> PublicListener {
        self.proxy_refusals = Some(counter);
        self
    }

    fn expects_header(&self, peer: SocketAddr) -> bool {
        let ip = peer.ip().to_canonical();
        self.proxy_peers
            .as_ref()
            .is_some_and(|nets| nets.iter().any(|net| net.contains(&ip)))
    }
}

impl Listener for PublicListener {
    type Io = Connection;
    type Addr = Peer;

    async fn accept(&mut self) -> (Connection, Peer) {
        loop {
            tokio::select! {
                accepted = self.tcp.accept() => match accepted {
                    Ok((stream, socket)) if self.expects_header(socket) || self.tls.is_some() => {
                        let header = self.expects_header(socket);
                        let tls = self.tls.clone();
                        let refusals = self.proxy_refusals.clone();
                        let pending = handshake(stream, socket, header, tls, refusals);
                        self.handshakes.push(Box::pin(pending));
                    }
                    Ok((stream, socket)) => {
                        let peer = Peer { socket, proxied: None };
                        return (Connection::Plain(Replay::new(stream, Vec::new())), peer);
                    }
                    Err(error) => accept_error(error).await,
                },
                Some(done) = self.handshakes.next(), if !self.handshakes.is_empty() => {
                    if let Some(connection) = done {
                        return connection;
                    }
                }
            }
        }
    }

    fn local_addr(&self) -> io::Result<Peer> {
        Ok(Peer {
            socket: self.tcp.local_addr()?,
            proxied: None,
        })
    }
}

/// Connection-level errors concern one client; others (e.g. no file
/// descriptors left) get a pause before accepting again.
async fn accept_error(error: io::Error) {
    if matches!(
        error.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    ) {
        return;
    }
    tracing::error!(%error, "accept failed");
    tokio::time::sleep(Duration::from_secs(1)).await;
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

/// Reads the PROXY header a trusted proxy sends first (when `header`), then
/// performs the TLS handshake (when `tls`). The connection is dropped, never
/// served, when the header is missing, invalid or late, or the handshake fails.
async fn handshake(
    stream: TcpStream,
    socket: SocketAddr,
    header: bool,
    tls: Option<TlsAcceptor>,
    refusals: Option<IntCounter>,
) -> Option<(Connection, Peer)> {
    let (replay, proxied) = if header {
        let Some(read) = read_proxy_header(stream, socket).await else {
            if let Some(refusals) = refusals {
                refusals.inc();
            }
            return None;
        };
        read
    } else {
        (Replay::new(stream, Vec::new()), None)
    };
    let peer = Peer { socket, proxied };
    let Some(acceptor) = tls else {
        return Some((Connection::Plain(replay), peer));
    };
    match tokio::time::timeout(HEADER_TIMEOUT, acceptor.accept(replay)).await {
        Ok(Ok(stream)) => Some((Connection::Tls(Box::new(stream)), peer)),
        Ok(Err(_)) | Err(_) => {
            tracing::debug!(peer = %socket.ip(), "TLS handshake failed");
            None
        }
    }
}

/// Reads a PROXY header; the bytes after it are kept for the connection.
async fn read_proxy_header(
    mut stream: TcpStream,
    socket: SocketAddr,
) -> Option<(Replay, Option<SocketAddr>)> {
    let read = async {
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
                let proxied = relayed_source(&header);
                let rest = buffer.split_off(length);
                return Some((rest, proxied));
            }
            if buffer.len() > MAX_HEADER_BYTES {
                return None;
            }
        }
    };
    match tokio::time::timeout(HEADER_TIMEOUT, read).await {
        Ok(Some((rest, proxied))) => Some((Replay::new(stream, rest), proxied)),
        Ok(None) | Err(_) => {
            tracing::info!(
                reason = "proxy_header_invalid",
                peer = %socket.ip(),
                "connection refused: no valid PROXY protocol header from a trusted proxy"
            );
            None
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

    #[tokio::test]
    async fn a_trusted_peer_without_a_proxy_header_is_counted_and_dropped() {
        use tokio::io::AsyncWriteExt;
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let allowlist = Allowlist {
            enabled: true,
            cidrs: vec!["127.0.0.1/32".parse().unwrap()],
            trusted_proxies: vec!["127.0.0.1/32".parse().unwrap()],
            proxy_protocol: true,
        };
        let refused = IntCounter::new("t_refused", "Refused.").unwrap();
        let mut listener =
            PublicListener::new(tcp, &allowlist, None).counting_proxy_refusals(refused.clone());
        let accepting = tokio::spawn(async move { listener.accept().await.1 });
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream.write_all(b"GET / HTTP/1.1\r\n\r\n").await.unwrap();
        let counted = tokio::time::timeout(Duration::from_secs(5), async {
            while refused.get() == 0 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await;
        assert!(counted.is_ok(), "the refusal is counted");
        assert!(!accepting.is_finished(), "the connection is never served");
        accepting.abort();
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
