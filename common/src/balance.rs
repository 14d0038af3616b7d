//! Client-side balancing over every instance of a backend service: the
//! service's name is resolved again and again (with a headless Kubernetes
//! Service, one address per ready pod), each address gets its own lazy HTTP/2
//! channel, calls go round-robin over the instances not ejected, and an
//! instance whose connection fails is ejected: after that first failed call
//! no call goes to it until a probe (a TCP connect, every `probe_every`)
//! reaches it again or the resolver stops listing it.
//!
//! One `tonic` channel to a ClusterIP Service would pin each client to one
//! backend pod for the connection's life: replicas added by the autoscaler
//! would get nothing. Here a scale-up is followed within one resolution
//! interval, a scale-down at the next failure or resolution.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use futures::future::BoxFuture;
use tonic::transport::{Channel, Endpoint, Uri};
use tower::{Service, ServiceExt};

/// How the addresses of a backend are found.
pub trait Resolve: Send + Sync + 'static {
    /// Every current address of the backend (empty: unknown, keep the last).
    fn resolve(&self) -> BoxFuture<'_, std::io::Result<Vec<SocketAddr>>>;
}

/// DNS (or an IP literal) for `host:port`.
pub struct Dns {
    target: String,
}

impl Resolve for Dns {
    fn resolve(&self) -> BoxFuture<'_, std::io::Result<Vec<SocketAddr>>> {
        Box::pin(async move {
            let mut found: Vec<SocketAddr> = tokio::net::lookup_host(&self.target).await?.collect();
            found.sort();
            found.dedup();
            Ok(found)
        })
    }
}

/// A fixed list of addresses (tests, or a static configuration).
pub struct Fixed(pub Vec<SocketAddr>);

impl Resolve for Fixed {
    fn resolve(&self) -> BoxFuture<'_, std::io::Result<Vec<SocketAddr>>> {
        let addresses = self.0.clone();
        Box::pin(async move { Ok(addresses) })
    }
}

/// How a balanced channel connects and follows its backend.
#[derive(Debug, Clone)]
pub struct Options {
    pub connect_timeout: Duration,
    /// Bound of each call on the channel (besides the caller's deadline).
    pub request_timeout: Option<Duration>,
    /// How often the name is resolved again.
    pub resolve_every: Duration,
    /// How often an ejected instance is probed.
    pub probe_every: Duration,
    /// TLS towards the instances (`None`: plaintext HTTP/2).
    pub tls: Option<crate::tls::Connector>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            connect_timeout: Duration::from_millis(1_500),
            request_timeout: None,
            resolve_every: Duration::from_secs(5),
            probe_every: Duration::from_secs(1),
            tls: None,
        }
    }
}

struct Member {
    address: SocketAddr,
    channel: Channel,
    /// When its connection failed; `None` while it takes calls.
    ejected_since: Mutex<Option<Instant>>,
}

impl Member {
    fn ejected_since(&self) -> Option<Instant> {
        *self.ejected_since.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn set_ejected(&self, since: Option<Instant>) {
        *self.ejected_since.lock().unwrap_or_else(|p| p.into_inner()) = since;
    }
}

struct Pool {
    /// The URL the backend was named by: its authority goes in every request.
    origin: Uri,
    options: Options,
    members: RwLock<Vec<Arc<Member>>>,
    next: AtomicUsize,
}

impl Pool {
    fn channel_to(&self, address: SocketAddr) -> Option<Channel> {
        let scheme = self.origin.scheme_str().unwrap_or("http");
        let mut endpoint = Endpoint::from_shared(format!("{scheme}://{address}"))
            .ok()?
            .origin(self.origin.clone())
            .connect_timeout(self.options.connect_timeout)
            .tcp_nodelay(true)
            .http2_keep_alive_interval(Duration::from_secs(30))
            .keep_alive_timeout(Duration::from_secs(10))
            .keep_alive_while_idle(true);
        if let Some(timeout) = self.options.request_timeout {
            endpoint = endpoint.timeout(timeout);
        }
        Some(match &self.options.tls {
            None => endpoint.connect_lazy(),
            Some(tls) => {
                let tls = tls.clone();
                endpoint.connect_with_connector_lazy(tower::service_fn(move |_: Uri| {
                    let tls = tls.clone();
                    async move { tls.connect(address).await.map(hyper_util::rt::TokioIo::new) }
                }))
            }
        })
    }

    /// Replaces the members by `addresses`, keeping the channels (and the
    /// ejections) of the addresses that stay. An empty answer keeps the
    /// current members: a resolver blip must not leave the backend without
    /// instances.
    fn update(&self, addresses: &[SocketAddr]) {
        if addresses.is_empty() {
            return;
        }
        let mut members = self.members.write().unwrap_or_else(|p| p.into_inner());
        let mut current: BTreeMap<SocketAddr, Arc<Member>> =
            members.drain(..).map(|m| (m.address, m)).collect();
        let mut updated = Vec::with_capacity(addresses.len());
        for &address in addresses {
            if let Some(member) = current.remove(&address) {
                updated.push(member);
            } else if let Some(channel) = self.channel_to(address) {
                tracing::info!(backend = %self.origin, %address, "backend instance added");
                updated.push(Arc::new(Member {
                    address,
                    channel,
                    ejected_since: Mutex::new(None),
                }));
            }
        }
        for address in current.keys() {
            tracing::info!(backend = %self.origin, %address, "backend instance removed");
        }
        *members = updated;
    }

    /// The next instance round-robin among those not ejected; when all are,
    /// the one ejected longest ago (a call must still be tried).
    fn pick(&self) -> Option<Arc<Member>> {
        let members = self.members.read().unwrap_or_else(|p| p.into_inner());
        if members.is_empty() {
            return None;
        }
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        (0..members.len())
            .map(|offset| &members[(start + offset) % members.len()])
            .find(|member| member.ejected_since().is_none())
            .or_else(|| members.iter().min_by_key(|member| member.ejected_since()))
            .cloned()
    }

    /// Lets the ejected instances that accept a connection again take calls.
    async fn probe(&self) {
        let ejected: Vec<Arc<Member>> = {
            let members = self.members.read().unwrap_or_else(|p| p.into_inner());
            members
                .iter()
                .filter(|m| m.ejected_since().is_some())
                .cloned()
                .collect()
        };
        for member in ejected {
            let connect = tokio::net::TcpStream::connect(member.address);
            if let Ok(Ok(_)) = tokio::time::timeout(self.options.connect_timeout, connect).await {
                tracing::info!(backend = %self.origin, address = %member.address, "backend instance back");
                member.set_ejected(None);
            }
        }
    }
}

/// A gRPC channel over every instance of one backend.
#[derive(Clone)]
pub struct Balanced {
    pool: Arc<Pool>,
}

impl Balanced {
    /// A channel to the backend named by `url` (`http(s)://host:port`),
    /// resolved by `resolver` at once and every `options.resolve_every` while
    /// the channel lives (when a Tokio runtime is running). Nothing connects
    /// until the first call; until the first resolution answers, calls go to
    /// the name itself.
    pub fn new(url: &str, resolver: impl Resolve, options: Options) -> anyhow::Result<Balanced> {
        let origin: Uri = url
            .parse()
            .map_err(|e| anyhow::anyhow!("invalid gRPC endpoint {url:?}: {e}"))?;
        if origin.host().is_none() {
            anyhow::bail!("gRPC endpoint {url:?} has no host");
        }
        let pool = Arc::new(Pool {
            origin,
            options: options.clone(),
            members: RwLock::new(Vec::new()),
            next: AtomicUsize::new(0),
        });
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(follow(Arc::downgrade(&pool), resolver, options));
        }
        Ok(Balanced { pool })
    }

    /// A channel resolving `url`'s host through DNS; an IP literal is its
    /// own single instance from the start.
    pub fn dns(url: &str, options: Options) -> anyhow::Result<Balanced> {
        let uri: Uri = url
            .parse()
            .map_err(|e| anyhow::anyhow!("invalid gRPC endpoint {url:?}: {e}"))?;
        let host = uri
            .host()
            .ok_or_else(|| anyhow::anyhow!("gRPC endpoint {url:?} has no host"))?
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        let default_port = if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        };
        let port = uri.port_u16().unwrap_or(default_port);
        if let Ok(ip) = host.parse::<std::net::IpAddr>() {
            let balanced = Balanced::new(url, Fixed(vec![SocketAddr::new(ip, port)]), options)?;
            balanced.pool.update(&[SocketAddr::new(ip, port)]);
            return Ok(balanced);
        }
        Balanced::new(
            url,
            Dns {
                target: format!("{host}:{port}"),
            },
            options,
        )
    }

    /// A channel over exactly `addresses` (resolved once, as given).
    pub fn fixed(
        url: &str,
        addresses: Vec<SocketAddr>,
        options: Options,
    ) -> anyhow::Result<Balanced> {
        let balanced = Balanced::new(url, Fixed(addresses.clone()), options)?;
        balanced.pool.update(&addresses);
        Ok(balanced)
    }

    /// The addresses calls are spread over now.
    pub fn instances(&self) -> Vec<SocketAddr> {
        let members = self.pool.members.read().unwrap_or_else(|p| p.into_inner());
        members.iter().map(|m| m.address).collect()
    }
}

/// Follows the backend while a clone of its channel lives: resolves at once,
/// then every `resolve_every`, and probes ejected instances every
/// `probe_every`.
async fn follow(pool: std::sync::Weak<Pool>, resolver: impl Resolve, options: Options) {
    let mut resolve = tokio::time::interval(options.resolve_every);
    let mut probe = tokio::time::interval(options.probe_every);
    resolve.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    probe.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    probe.tick().await;
    loop {
        // The first resolution tick fires at once.
        let resolving = tokio::select! {
            _ = resolve.tick() => true,
            _ = probe.tick() => false,
        };
        let Some(pool) = pool.upgrade() else {
            return;
        };
        if !resolving {
            pool.probe().await;
            continue;
        }
        match resolver.resolve().await {
            Ok(addresses) => pool.update(&addresses),
            Err(error) => {
                tracing::warn!(backend = %pool.origin, %error, "backend resolution failed");
            }
        }
    }
}

/// Whether `error` is a failure to reach the instance at all (nothing was
/// sent): its connection was refused, reset or timed out.
fn unreachable(error: &tonic::transport::Error) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = source {
        if let Some(io) = current.downcast_ref::<std::io::Error>() {
            return matches!(
                io.kind(),
                std::io::ErrorKind::ConnectionRefused
                    | std::io::ErrorKind::ConnectionReset
                    | std::io::ErrorKind::ConnectionAborted
                    | std::io::ErrorKind::TimedOut
                    | std::io::ErrorKind::NotConnected
                    | std::io::ErrorKind::BrokenPipe
            );
        }
        source = current.source();
    }
    // A transport error without an I/O cause (e.g. the connect timeout
    // elapsed) also means the instance did not answer.
    true
}

impl Service<http::Request<tonic::body::Body>> for Balanced {
    type Response = http::Response<tonic::body::Body>;
    type Error = tonic::transport::Error;
    type Future = BoxFuture<'static, Result<Self::Response, Self::Error>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Readiness is that of the instance chosen per call.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let pool = self.pool.clone();
        Box::pin(async move {
            let member = match pool.pick() {
                Some(member) => member,
                // No address known: a channel to the name itself fails the
                // call with a transport error, as an unreachable one would.
                None => {
                    let channel = Endpoint::from(pool.origin.clone())
                        .connect_timeout(pool.options.connect_timeout)
                        .connect_lazy();
                    return channel.oneshot(request).await;
                }
            };
            let outcome = member.channel.clone().oneshot(request).await;
            if let Err(error) = &outcome
                && unreachable(error)
            {
                tracing::warn!(backend = %pool.origin, address = %member.address, "backend instance ejected");
                member.set_ejected(Some(Instant::now()));
            }
            outcome
        })
    }
}
