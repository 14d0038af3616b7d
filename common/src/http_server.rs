//! Serving HTTP on an internet-facing listener with connection discipline,
//! shared by the gateway and the authorization server. The work done for a
//! connection is bounded before any request exists:
//!
//! - **caps**, decided at accept before any byte is read: connections in
//!   total and per client address (IPv6 per /64). At a cap the new
//!   connection is accepted and closed at once (counted), so the kernel
//!   backlog never fills with connections nobody will serve;
//! - **admission** ([`Admission`]): the server's own decision at accept
//!   (e.g. the source-address allowlist: a refused address is closed at once)
//!   and its handshake (PROXY protocol header, TLS), under the header deadline;
//! - **header read timeout**: from accept until the first request's head is
//!   complete (handshake included), and on HTTP/1.1 from the first byte of
//!   each later request head; past it the connection is closed without an
//!   answer (a slow-loris client gets nothing);
//! - **idle timeout**: a connection without a request in flight is closed
//!   gracefully after `idle_timeout_secs` (HTTP/2: GOAWAY), and dropped if it
//!   has not finished one header timeout later (a client that never reads);
//! - **bounds** on the request head (bytes, HTTP/1.1 field count; HTTP/2
//!   header list size) and HTTP/2 limits (concurrent streams, pending and
//!   locally-errored stream resets: rapid-reset floods end the connection).
//!
//! hyper-util's server builder does the protocol work (HTTP/1.1 and HTTP/2,
//! plain or prior-knowledge); this module only adds what it lacks: the caps,
//! the admission step and a per-connection watchdog over request activity.
//! Shutdown closes the listener first (new connections are refused), then
//! asks every connection to finish gracefully and waits for them.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::ConnectInfo;
use hyper::body::{Body, Bytes, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use ipnet::{IpNet, Ipv4Net};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tower::Service;

/// Connection limits of a public HTTP listener (see the module doc for what
/// each one does at its bound).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ConnectionLimits {
    /// From accept until the first request head is complete (PROXY header
    /// and TLS handshake included), and on HTTP/1.1 from the first byte of
    /// each later request head. Past it the connection is closed.
    pub header_read_timeout_ms: u64,
    /// A request body must arrive whole within this once its head is read;
    /// past it the request is answered 408 and the connection closed.
    pub body_read_timeout_ms: u64,
    /// A connection with no request in flight is closed after this.
    pub idle_timeout_secs: u64,
    /// Largest request head (HTTP/1.1 request line and fields: 431 past it;
    /// HTTP/2 header list size). At least 8192.
    pub max_header_bytes: usize,
    /// Most header fields of an HTTP/1.1 request (431 past it).
    pub max_headers: usize,
    /// Concurrent connections in total; past it a new connection is accepted
    /// and closed at once.
    pub max_connections: usize,
    /// Concurrent connections per client address (IPv6: per /64); past it a
    /// new connection from that address is closed at once. Connections from
    /// trusted proxies are only held to the total.
    pub max_connections_per_address: usize,
    pub http2: Http2Limits,
}

/// HTTP/2 settings of a public listener.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Http2Limits {
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` announced to clients.
    pub max_concurrent_streams: u32,
    /// Streams a client may open and reset before the server accepted them
    /// (rapid-reset floods); past it the connection ends with GOAWAY.
    pub max_pending_accept_reset_streams: usize,
    /// Streams the server may reset for protocol errors of the client before
    /// it ends the connection.
    pub max_local_error_reset_streams: usize,
    /// Interval of the server's keep-alive pings (0: none).
    pub keep_alive_interval_secs: u64,
    /// How long a ping may stay unanswered before the connection is closed.
    pub keep_alive_timeout_secs: u64,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_read_timeout_ms: 5_000,
            body_read_timeout_ms: 10_000,
            idle_timeout_secs: 60,
            max_header_bytes: 16 * 1024,
            max_headers: 64,
            max_connections: 10_000,
            max_connections_per_address: 1_000,
            http2: Http2Limits::default(),
        }
    }
}

impl Default for Http2Limits {
    fn default() -> Self {
        Http2Limits {
            max_concurrent_streams: 100,
            max_pending_accept_reset_streams: 20,
            max_local_error_reset_streams: 256,
            keep_alive_interval_secs: 30,
            keep_alive_timeout_secs: 10,
        }
    }
}

/// Smallest `max_header_bytes` (hyper's smallest read buffer).
const MIN_HEADER_BYTES: usize = 8 * 1024;

impl ConnectionLimits {
    /// Checks every bound; the error names the field under `section`.
    pub fn validate(&self, section: &str) -> Result<(), String> {
        let positive = [
            ("header_read_timeout_ms", self.header_read_timeout_ms),
            ("body_read_timeout_ms", self.body_read_timeout_ms),
            ("idle_timeout_secs", self.idle_timeout_secs),
            ("max_headers", self.max_headers as u64),
            ("max_connections", self.max_connections as u64),
            (
                "max_connections_per_address",
                self.max_connections_per_address as u64,
            ),
            (
                "http2.max_concurrent_streams",
                u64::from(self.http2.max_concurrent_streams),
            ),
            (
                "http2.keep_alive_timeout_secs",
                self.http2.keep_alive_timeout_secs,
            ),
        ];
        for (name, value) in positive {
            if value == 0 {
                return Err(format!("{section}.{name} must be greater than zero"));
            }
        }
        if !(MIN_HEADER_BYTES..=1024 * 1024).contains(&self.max_header_bytes) {
            return Err(format!(
                "{section}.max_header_bytes must be between {MIN_HEADER_BYTES} and 1048576"
            ));
        }
        if self.max_connections_per_address > self.max_connections {
            return Err(format!(
                "{section}.max_connections_per_address must not exceed {section}.max_connections"
            ));
        }
        Ok(())
    }

    pub fn header_read_timeout(&self) -> Duration {
        Duration::from_millis(self.header_read_timeout_ms)
    }

    pub fn body_read_timeout(&self) -> Duration {
        Duration::from_millis(self.body_read_timeout_ms)
    }

    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs)
    }
}

/// What [`Admission::screen`] decides at accept, before any byte is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Screen {
    /// Closed at once; the reason is reported to the server's observer.
    Refuse(&'static str),
    /// Served; `client` (when it is known now) is held to the per-address cap.
    Admit { client: Option<IpAddr> },
}

/// A connection made ready by [`Admission::open`].
pub struct Opened<Io, Info> {
    pub io: Io,
    /// Inserted into every request as `ConnectInfo<Info>`.
    pub info: Info,
    /// The client address learnt during the handshake (e.g. from a PROXY
    /// header), held to the per-address cap.
    pub client: Option<IpAddr>,
}

/// A server's own part of accepting a connection.
pub trait Admission: Send + Sync + 'static {
    type Io: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    type Info: Clone + Send + Sync + 'static;

    /// Decides from the socket peer alone, before reading.
    fn screen(&self, peer: SocketAddr) -> Screen;

    /// Prepares the connection (PROXY header, TLS handshake…), bounded by the
    /// header read timeout; `Err(reason)` closes it.
    fn open(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> impl Future<Output = Result<Opened<Self::Io, Self::Info>, &'static str>> + Send;
}

/// Plain TCP: the socket peer is the client, except for the peers `proxies`
/// names (their clients are only known from forwarding headers, so they are
/// held to the total cap only). Requests carry `ConnectInfo<SocketAddr>`.
pub struct Direct<F> {
    is_proxy: F,
}

impl<F: Fn(IpAddr) -> bool + Send + Sync + 'static> Direct<F> {
    pub fn new(is_proxy: F) -> Direct<F> {
        Direct { is_proxy }
    }
}

impl<F: Fn(IpAddr) -> bool + Send + Sync + 'static> Admission for Direct<F> {
    type Io = TcpStream;
    type Info = SocketAddr;

    fn screen(&self, peer: SocketAddr) -> Screen {
        let ip = peer.ip().to_canonical();
        Screen::Admit {
            client: (!(self.is_proxy)(ip)).then_some(ip),
        }
    }

    async fn open(
        &self,
        stream: TcpStream,
        peer: SocketAddr,
    ) -> Result<Opened<TcpStream, SocketAddr>, &'static str> {
        Ok(Opened {
            io: stream,
            info: peer,
            client: None,
        })
    }
}

/// Reports connections closed by the discipline (`connection_limit`,
/// `address_connection_limit`, `header_timeout`, and the admission's own
/// reasons), e.g. to a metrics counter.
pub type Observer = Arc<dyn Fn(&'static str) + Send + Sync>;

/// A configured network in the form client addresses take once
/// canonicalised (`IpAddr::to_canonical`): an IPv4-mapped IPv6 network
/// (`::ffff:a.b.c.d/n`, n >= 96) becomes the IPv4 network it maps; host bits
/// are cleared.
pub fn canonical_net(net: IpNet) -> IpNet {
    if let IpNet::V6(v6) = net
        && v6.prefix_len() >= 96
        && let Some(v4) = v6.network().to_ipv4_mapped()
        && let Ok(mapped) = Ipv4Net::new(v4, v6.prefix_len() - 96)
    {
        return IpNet::V4(mapped.trunc());
    }
    net.trunc()
}

/// The per-address key: the canonical address, IPv6 by its /64.
fn address_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => {
            let bits = u128::from(v6) & !((1u128 << 64) - 1);
            IpAddr::V6(Ipv6Addr::from(bits))
        }
        v4 => v4,
    }
}

/// Open connections per client address.
#[derive(Default)]
struct PerAddress {
    counts: Mutex<HashMap<IpAddr, usize>>,
}

/// One connection counted for its address, released on drop.
struct AddressSlot {
    key: IpAddr,
    table: Arc<PerAddress>,
}

impl PerAddress {
    fn acquire(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<AddressSlot> {
        let key = address_key(ip);
        let mut counts = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let count = counts.entry(key).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(AddressSlot {
            key,
            table: self.clone(),
        })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut counts = self.table.counts.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(count) = counts.get_mut(&self.key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                counts.remove(&self.key);
            }
        }
    }
}

/// Protocol of a connection as seen from its first bytes.
const PROTOCOL_UNKNOWN: u8 = 0;
const PROTOCOL_HTTP1: u8 = 1;
const PROTOCOL_HTTP2: u8 = 2;
/// Start of the HTTP/2 connection preface.
const H2_PREFACE_START: &[u8] = b"PRI ";

/// Request activity of one connection, shared by its I/O, its service and
/// its watchdog.
#[derive(Default)]
struct Activity {
    /// Requests whose head is read and whose response is not produced yet.
    active: AtomicUsize,
    /// Requests started so far.
    started: AtomicU64,
    /// Bumped at every start and end.
    changes: AtomicU64,
    /// Bytes arrived while no request was in flight (a next request head).
    read_while_idle: AtomicBool,
    protocol: AtomicU8,
    notify: Notify,
}

impl Activity {
    fn begin(self: &Arc<Self>) -> InFlight {
        self.read_while_idle.store(false, Ordering::SeqCst);
        self.active.fetch_add(1, Ordering::SeqCst);
        self.started.fetch_add(1, Ordering::SeqCst);
        self.changes.fetch_add(1, Ordering::SeqCst);
        self.notify.notify_one();
        InFlight(self.clone())
    }

    fn on_read(&self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if self.protocol.load(Ordering::Relaxed) == PROTOCOL_UNKNOWN {
            let n = bytes.len().min(H2_PREFACE_START.len());
            let protocol = if bytes[..n] != H2_PREFACE_START[..n] {
                PROTOCOL_HTTP1
            } else if n == H2_PREFACE_START.len() {
                PROTOCOL_HTTP2
            } else {
                PROTOCOL_UNKNOWN
            };
            self.protocol.store(protocol, Ordering::Relaxed);
        }
        if self.active.load(Ordering::SeqCst) == 0
            && self.started.load(Ordering::SeqCst) > 0
            && !self.read_while_idle.swap(true, Ordering::SeqCst)
        {
            self.notify.notify_one();
        }
    }
}

/// A request in flight; ends when dropped (answered or abandoned).
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::SeqCst);
        self.0.changes.fetch_add(1, Ordering::SeqCst);
        self.0.notify.notify_one();
    }
}

/// The connection's I/O, reporting reads to its [`Activity`].
struct Watched<Io> {
    io: Io,
    activity: Arc<Activity>,
}

impl<Io: AsyncRead + Unpin> AsyncRead for Watched<Io> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            this.activity.on_read(&buf.filled()[before..]);
        }
        polled
    }
}

impl<Io: AsyncWrite + Unpin> AsyncWrite for Watched<Io> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }
}

/// The application service of one connection: inserts the connection's
/// `ConnectInfo` and counts the request as in flight until it is answered.
#[derive(Clone)]
struct Tracked<S, I> {
    inner: S,
    info: I,
    activity: Arc<Activity>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, I, B> Service<http::Request<Incoming>> for Tracked<S, I>
where
    S: Service<http::Request<Incoming>, Response = http::Response<B>, Error = Infallible>,
    S::Future: Send + 'static,
    I: Clone + Send + Sync + 'static,
{
    type Response = http::Response<B>;
    type Error = Infallible;
    type Future = BoxFuture<Result<http::Response<B>, Infallible>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: http::Request<Incoming>) -> Self::Future {
        request
            .extensions_mut()
            .insert(ConnectInfo(self.info.clone()));
        let in_flight = self.activity.begin();
        let answer = self.inner.call(request);
        Box::pin(async move {
            let response = answer.await;
            drop(in_flight);
            response
        })
    }
}

/// What the watchdog does when its deadline passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expiry {
    /// Close without an answer (slow or absent request head), counted.
    Drop(&'static str),
    /// Ask the connection to finish (idle), then drop it if it does not.
    Graceful,
}

/// The per-connection deadlines, recomputed from [`Activity`] after every
/// change.
struct Watchdog {
    header_timeout: Duration,
    idle_timeout: Duration,
    /// The first request head must be complete by then.
    first_head_by: Instant,
    seen_changes: u64,
    idle_since: Option<Instant>,
    idle_read_at: Option<Instant>,
    /// When a graceful close was asked (idle, or server shutdown).
    closing_since: Option<Instant>,
}

impl Watchdog {
    fn new(limits: &ConnectionLimits, accepted: Instant) -> Watchdog {
        Watchdog {
            header_timeout: limits.header_read_timeout(),
            idle_timeout: limits.idle_timeout(),
            first_head_by: accepted + limits.header_read_timeout(),
            seen_changes: 0,
            idle_since: None,
            idle_read_at: None,
            closing_since: None,
        }
    }

    /// The next deadline and what happens then; `None` while a request is
    /// in flight (its own time bounds apply).
    fn next(&mut self, activity: &Activity, now: Instant) -> Option<(Instant, Expiry)> {
        let changes = activity.changes.load(Ordering::SeqCst);
        let active = activity.active.load(Ordering::SeqCst);
        if changes != self.seen_changes {
            self.seen_changes = changes;
            self.idle_read_at = None;
            self.idle_since = (active == 0).then_some(now);
        }
        if active > 0 {
            return None;
        }
        let started = activity.started.load(Ordering::SeqCst);
        if let Some(closing) = self.closing_since {
            let from = self.idle_since.map_or(closing, |idle| idle.max(closing));
            return Some((from + self.header_timeout, Expiry::Drop("close_timeout")));
        }
        if started == 0 {
            return Some((self.first_head_by, Expiry::Drop("header_timeout")));
        }
        let idle_since = *self.idle_since.get_or_insert(now);
        let idle_end = (idle_since + self.idle_timeout, Expiry::Graceful);
        let http1 = activity.protocol.load(Ordering::Relaxed) == PROTOCOL_HTTP1;
        if http1 && activity.read_while_idle.load(Ordering::SeqCst) {
            let read_at = *self.idle_read_at.get_or_insert(now);
            let head_end = read_at + self.header_timeout;
            if head_end < idle_end.0 {
                return Some((head_end, Expiry::Drop("header_timeout")));
            }
        }
        Some(idle_end)
    }

    fn closing(&mut self, now: Instant) {
        self.closing_since.get_or_insert(now);
    }
}

/// What every connection task of one server shares.
struct Shared<A, S> {
    admission: A,
    service: S,
    limits: ConnectionLimits,
    builder: Builder<TokioExecutor>,
    observer: Observer,
    total: Arc<Semaphore>,
    per_address: Arc<PerAddress>,
    stop: CancellationToken,
}

/// hyper's builder with the limits' HTTP/1.1 and HTTP/2 settings. hyper's
/// own HTTP/1.1 header timeout is off: the watchdog applies
/// `header_read_timeout` itself, without closing idle keep-alive
/// connections early.
fn builder(limits: &ConnectionLimits) -> Builder<TokioExecutor> {
    let mut builder = Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(None)
        .max_buf_size(limits.max_header_bytes)
        .max_headers(limits.max_headers)
        .keep_alive(true);
    let h2 = &limits.http2;
    let header_list = u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX);
    builder
        .http2()
        .timer(TokioTimer::new())
        .max_concurrent_streams(h2.max_concurrent_streams)
        .max_pending_accept_reset_streams(h2.max_pending_accept_reset_streams)
        .max_local_error_reset_streams(h2.max_local_error_reset_streams)
        .max_header_list_size(header_list)
        .keep_alive_interval(
            (h2.keep_alive_interval_secs > 0)
                .then(|| Duration::from_secs(h2.keep_alive_interval_secs)),
        )
        .keep_alive_timeout(Duration::from_secs(h2.keep_alive_timeout_secs));
    builder
}

/// Serves `service` on `listener` under `limits` until `shutdown` resolves,
/// then refuses new connections and waits for open ones to finish.
pub async fn serve<A, S, B>(
    listener: TcpListener,
    limits: ConnectionLimits,
    admission: A,
    service: S,
    observer: Observer,
    shutdown: impl Future<Output = ()> + Send,
) -> io::Result<()>
where
    A: Admission,
    S: Service<http::Request<Incoming>, Response = http::Response<B>, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let shared = Arc::new(Shared {
        admission,
        service,
        builder: builder(&limits),
        total: Arc::new(Semaphore::new(limits.max_connections)),
        per_address: Arc::new(PerAddress::default()),
        limits,
        observer,
        stop: CancellationToken::new(),
    });
    let tracker = TaskTracker::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    accept_error(error).await;
                    continue;
                }
            },
        };
        let Ok(permit) = shared.total.clone().try_acquire_owned() else {
            (shared.observer)("connection_limit");
            tracing::debug!(peer = %peer.ip(), "connection closed: connection limit reached");
            continue;
        };
        let slot = match shared.admission.screen(peer) {
            Screen::Refuse(reason) => {
                (shared.observer)(reason);
                continue;
            }
            Screen::Admit { client: None } => None,
            Screen::Admit {
                client: Some(client),
            } => match shared
                .per_address
                .acquire(client, shared.limits.max_connections_per_address)
            {
                Some(slot) => Some(slot),
                None => {
                    (shared.observer)("address_connection_limit");
                    tracing::debug!(peer = %peer.ip(), "connection closed: per-address connection limit reached");
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        tracker.spawn(connection(shared.clone(), stream, peer, permit, slot));
    }
    // New connections are refused from here on.
    drop(listener);
    shared.stop.cancel();
    tracker.close();
    tracker.wait().await;
    Ok(())
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

/// One connection: admission handshake, then HTTP under the watchdog.
async fn connection<A, S, B>(
    shared: Arc<Shared<A, S>>,
    stream: TcpStream,
    peer: SocketAddr,
    _permit: OwnedSemaphorePermit,
    slot: Option<AddressSlot>,
) where
    A: Admission,
    S: Service<http::Request<Incoming>, Response = http::Response<B>, Error = Infallible>
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let accepted = Instant::now();
    let mut watchdog = Watchdog::new(&shared.limits, accepted);
    let handshake =
        tokio::time::timeout_at(watchdog.first_head_by, shared.admission.open(stream, peer));
    let opened = tokio::select! {
        opened = handshake => opened,
        // Shutting down: a connection not opened yet is not served.
        () = shared.stop.cancelled() => return,
    };
    let opened = match opened {
        Ok(Ok(opened)) => opened,
        Ok(Err(reason)) => return (shared.observer)(reason),
        Err(_elapsed) => {
            tracing::debug!(peer = %peer.ip(), "connection closed: handshake not complete in time");
            return (shared.observer)("header_timeout");
        }
    };
    let _slot = match (slot, opened.client) {
        (Some(slot), _) => Some(slot),
        (None, Some(client)) => match shared
            .per_address
            .acquire(client, shared.limits.max_connections_per_address)
        {
            Some(slot) => Some(slot),
            None => return (shared.observer)("address_connection_limit"),
        },
        (None, None) => None,
    };
    let activity = Arc::new(Activity::default());
    let io = TokioIo::new(Watched {
        io: opened.io,
        activity: activity.clone(),
    });
    let service = TowerToHyperService::new(Tracked {
        inner: shared.service.clone(),
        info: opened.info,
        activity: activity.clone(),
    });
    let connection = shared.builder.serve_connection(io, service);
    tokio::pin!(connection);
    let mut draining = false;
    loop {
        if !draining && shared.stop.is_cancelled() {
            draining = true;
            watchdog.closing(Instant::now());
            connection.as_mut().graceful_shutdown();
        }
        let next = watchdog.next(&activity, Instant::now());
        let deadline = next.map(|(at, _)| at);
        tokio::select! {
            served = connection.as_mut() => {
                if let Err(error) = served {
                    tracing::debug!(peer = %peer.ip(), %error, "connection ended with an error");
                }
                return;
            }
            () = shared.stop.cancelled(), if !draining => {}
            () = activity.notify.notified() => {}
            () = sleep_until(deadline) => match next.map(|(_, expiry)| expiry) {
                Some(Expiry::Drop(reason)) => {
                    tracing::debug!(peer = %peer.ip(), reason, "connection closed by its watchdog");
                    if reason == "header_timeout" {
                        (shared.observer)(reason);
                    }
                    return;
                }
                Some(Expiry::Graceful) => {
                    watchdog.closing(Instant::now());
                    connection.as_mut().graceful_shutdown();
                }
                None => {}
            },
        }
    }
}

/// Sleeps until `deadline`, or forever without one.
async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> ConnectionLimits {
        ConnectionLimits {
            header_read_timeout_ms: 1_000,
            idle_timeout_secs: 10,
            ..ConnectionLimits::default()
        }
    }

    #[test]
    fn defaults_are_valid_and_bad_bounds_are_named() {
        ConnectionLimits::default().validate("connections").unwrap();
        let bad = ConnectionLimits {
            max_header_bytes: 1024,
            ..ConnectionLimits::default()
        };
        assert!(
            bad.validate("c")
                .unwrap_err()
                .contains("c.max_header_bytes")
        );
        let bad = ConnectionLimits {
            max_connections_per_address: 20_000,
            ..ConnectionLimits::default()
        };
        assert!(bad.validate("c").is_err());
        let bad = ConnectionLimits {
            header_read_timeout_ms: 0,
            ..ConnectionLimits::default()
        };
        assert!(
            bad.validate("c")
                .unwrap_err()
                .contains("header_read_timeout_ms")
        );
    }

    #[test]
    fn ipv6_addresses_share_their_slash_64() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let c: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key(c));
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap();
        assert_eq!(address_key(mapped), "192.0.2.7".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn per_address_slots_are_capped_and_released() {
        let table = Arc::new(PerAddress::default());
        let ip: IpAddr = "192.0.2.1".parse().unwrap();
        let first = table.acquire(ip, 2).unwrap();
        let _second = table.acquire(ip, 2).unwrap();
        assert!(table.acquire(ip, 2).is_none(), "third over the cap");
        assert!(table.acquire("192.0.2.2".parse().unwrap(), 2).is_some());
        drop(first);
        assert!(table.acquire(ip, 2).is_some(), "released on drop");
    }

    #[tokio::test(start_paused = true)]
    async fn the_watchdog_bounds_the_first_head_idle_time_and_a_later_partial_head() {
        let accepted = Instant::now();
        let mut dog = Watchdog::new(&limits(), accepted);
        let activity = Arc::new(Activity::default());
        // No request yet: the first head is due one header timeout after accept.
        assert_eq!(
            dog.next(&activity, accepted),
            Some((
                accepted + Duration::from_secs(1),
                Expiry::Drop("header_timeout")
            ))
        );
        activity.on_read(b"POST /mcp/v1 HTTP/1.1\r\n");
        let in_flight = activity.begin();
        assert_eq!(
            dog.next(&activity, accepted),
            None,
            "in flight: no deadline"
        );
        let done = accepted + Duration::from_millis(200);
        drop(in_flight);
        assert_eq!(
            dog.next(&activity, done),
            Some((done + Duration::from_secs(10), Expiry::Graceful)),
            "idle: closed gracefully after the idle timeout"
        );
        // HTTP/1.1: the first byte of a next head starts the header timeout.
        let later = done + Duration::from_secs(3);
        activity.on_read(b"PO");
        assert_eq!(
            dog.next(&activity, later),
            Some((
                later + Duration::from_secs(1),
                Expiry::Drop("header_timeout")
            ))
        );
        // Once asked to close, a connection gets one header timeout to finish.
        dog.closing(later);
        assert_eq!(
            dog.next(&activity, later),
            Some((
                later + Duration::from_secs(1),
                Expiry::Drop("close_timeout")
            ))
        );
    }

    #[tokio::test(start_paused = true)]
    async fn http2_control_frames_while_idle_keep_the_idle_deadline() {
        let accepted = Instant::now();
        let mut dog = Watchdog::new(&limits(), accepted);
        let activity = Arc::new(Activity::default());
        activity.on_read(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        drop(activity.begin());
        let idle = accepted + Duration::from_millis(100);
        assert_eq!(
            dog.next(&activity, idle),
            Some((idle + Duration::from_secs(10), Expiry::Graceful))
        );
        activity.on_read(b"\x00\x00\x08\x06");
        assert_eq!(
            dog.next(&activity, idle + Duration::from_secs(2)),
            Some((idle + Duration::from_secs(10), Expiry::Graceful)),
            "a PING is no request head"
        );
    }
}
