//! The declared stack of every Chataigne gRPC server (auth-service,
//! tool-service), in one function: [`builder`]. Each service adds its own
//! layers after it (trace span, metrics) and its services.
//!
//! Outermost first, per request:
//!
//! 1. the time bound ([`crate::grpc_deadline`]): the shorter of the
//!    caller's `grpc-timeout` and `max_request_ms`, handed to the service,
//!    which stops its work just before it; past it the RPC answers
//!    DEADLINE_EXCEEDED with the ErrorInfo of the code table, never tonic's
//!    CANCELLED without details;
//! 2. load shedding in front of a concurrency limit shared by all
//!    connections ([`Guarded`]): past `max_concurrent_requests` RPCs in
//!    flight an RPC is refused at once with RESOURCE_EXHAUSTED
//!    (`MCP_OVERLOADED` with a retry hint; the gateway answers -32501 on the
//!    Connected Apps profile) instead of queueing behind the others. The
//!    standard health service is exempt, so an overloaded replica is not
//!    restarted by its liveness probe; server reflection
//!    ([`crate::grpc_reflection`]) is not, a refused listing being cheap to
//!    retry.
//!
//! The HTTP/2 settings bound each connection: concurrent streams,
//! streams reset before being accepted (rapid-reset floods) and keep-alive
//! pings that find dead peers. A server is served on a [`GrpcListener`]:
//! plain HTTP/2, or TLS (optionally mTLS) with reloading certificates.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::Semaphore;
use tonic::transport::Server;
use tower::layer::util::{Identity, Stack};
use tower::limit::ConcurrencyLimit;
use tower::load_shed::LoadShed;
use tower::load_shed::error::Overloaded;
use tower::{BoxError, Layer, Service, ServiceExt};

use crate::ErrorCode;

/// Limits of a gRPC server.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct GrpcServerLimits {
    /// RPCs in flight at once, all connections together; past it an RPC is
    /// refused at once with RESOURCE_EXHAUSTED (health checks excepted).
    pub max_concurrent_requests: usize,
    /// Longest an RPC runs when its caller sets no shorter `grpc-timeout`.
    pub max_request_ms: u64,
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` of each HTTP/2 connection.
    pub max_concurrent_streams: u32,
    /// Streams a peer may open and reset before they are accepted; past it
    /// the connection ends (rapid-reset floods).
    pub max_pending_accept_reset_streams: usize,
    /// Interval of the server's keep-alive pings.
    pub keep_alive_interval_secs: u64,
    /// How long a ping may stay unanswered before the connection is closed.
    pub keep_alive_timeout_secs: u64,
}

impl Default for GrpcServerLimits {
    fn default() -> Self {
        GrpcServerLimits {
            max_concurrent_requests: 512,
            max_request_ms: 60_000,
            max_concurrent_streams: 1_024,
            max_pending_accept_reset_streams: 20,
            keep_alive_interval_secs: 30,
            keep_alive_timeout_secs: 10,
        }
    }
}

impl GrpcServerLimits {
    /// Checks every bound; the error names the field under `section`.
    pub fn validate(&self, section: &str) -> Result<(), String> {
        let positive = [
            (
                "max_concurrent_requests",
                self.max_concurrent_requests as u64,
            ),
            ("max_request_ms", self.max_request_ms),
            (
                "max_concurrent_streams",
                u64::from(self.max_concurrent_streams),
            ),
            (
                "max_pending_accept_reset_streams",
                self.max_pending_accept_reset_streams as u64,
            ),
            ("keep_alive_interval_secs", self.keep_alive_interval_secs),
            ("keep_alive_timeout_secs", self.keep_alive_timeout_secs),
        ];
        for (name, value) in positive {
            if value == 0 {
                return Err(format!("{section}.{name} must be greater than zero"));
            }
        }
        Ok(())
    }
}

/// Suggested wait after a load-shed refusal.
const OVERLOADED_RETRY: Duration = Duration::from_secs(1);
/// Path prefix of the standard health service, never shed.
const HEALTH_PREFIX: &str = "/grpc.health.v1.Health/";

/// The server builder with the layers every Chataigne gRPC server shares.
pub type GrpcServer =
    Server<Stack<GuardLayer, Stack<crate::grpc_deadline::DeadlineLayer, Identity>>>;

/// The declared stack of a gRPC server, outermost first (see the module doc).
pub fn builder(limits: &GrpcServerLimits) -> GrpcServer {
    Server::builder()
        // HTTP/2: bounded streams per connection, rapid-reset floods end the
        // connection, pings find peers that vanished without closing.
        .max_concurrent_streams(limits.max_concurrent_streams)
        .http2_max_pending_accept_reset_streams(Some(limits.max_pending_accept_reset_streams))
        .http2_keepalive_interval(Some(Duration::from_secs(limits.keep_alive_interval_secs)))
        .http2_keepalive_timeout(Some(Duration::from_secs(limits.keep_alive_timeout_secs)))
        // Every RPC ends by the caller's deadline or the server's cap, so no
        // work outlives the caller that asked for it, with DEADLINE_EXCEEDED.
        .layer(crate::grpc_deadline::DeadlineLayer {
            cap: Duration::from_millis(limits.max_request_ms),
        })
        // Past the concurrency limit an RPC is refused at once with
        // RESOURCE_EXHAUSTED rather than queued; health checks pass.
        .layer(GuardLayer::new(limits.max_concurrent_requests))
}

/// The listener of a gRPC server and, when configured, its TLS (see
/// [`crate::tls`]: certificates re-read when their files change, client
/// certificates required with a client CA). A bare `TcpListener` is plain.
pub struct GrpcListener {
    pub tcp: tokio::net::TcpListener,
    pub tls: Option<crate::tls::Acceptor>,
}

impl From<tokio::net::TcpListener> for GrpcListener {
    fn from(tcp: tokio::net::TcpListener) -> GrpcListener {
        GrpcListener { tcp, tls: None }
    }
}

impl From<(tokio::net::TcpListener, Option<crate::tls::Acceptor>)> for GrpcListener {
    fn from((tcp, tls): (tokio::net::TcpListener, Option<crate::tls::Acceptor>)) -> GrpcListener {
        GrpcListener { tcp, tls }
    }
}

impl GrpcListener {
    /// The accepted connections for `serve_with_incoming_shutdown`: plain, or
    /// TLS after a bounded handshake (a failed one closes that connection
    /// only); `TCP_NODELAY` on each.
    pub fn incoming(self) -> impl futures::Stream<Item = std::io::Result<crate::tls::Conn>> + Send {
        crate::tls::incoming(self.tcp, self.tls)
    }
}

/// Load shedding in front of a concurrency limit shared by every connection.
#[derive(Clone)]
pub struct GuardLayer {
    semaphore: Arc<Semaphore>,
}

impl GuardLayer {
    pub fn new(max_concurrent_requests: usize) -> GuardLayer {
        GuardLayer {
            semaphore: Arc::new(Semaphore::new(max_concurrent_requests)),
        }
    }
}

impl<S: Clone> Layer<S> for GuardLayer {
    type Service = Guarded<S>;

    fn layer(&self, inner: S) -> Guarded<S> {
        Guarded {
            limited: LoadShed::new(ConcurrencyLimit::with_semaphore(
                inner.clone(),
                self.semaphore.clone(),
            )),
            inner,
        }
    }
}

/// See [`GuardLayer`].
#[derive(Clone)]
pub struct Guarded<S> {
    inner: S,
    limited: LoadShed<ConcurrencyLimit<S>>,
}

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

impl<S, B, R> Service<http::Request<B>> for Guarded<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Send + 'static,
    R: Send + 'static,
{
    type Response = http::Response<R>;
    type Error = BoxError;
    type Future = BoxFuture<Result<http::Response<R>, BoxError>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if request.uri().path().starts_with(HEALTH_PREFIX) {
            let answer = self.inner.call(request);
            return Box::pin(async move { answer.await.map_err(Into::into) });
        }
        let limited = self.limited.clone();
        Box::pin(async move { limited.oneshot(request).await.map_err(overloaded) })
    }
}

/// A load-shed refusal becomes `MCP_OVERLOADED` (RESOURCE_EXHAUSTED with a
/// retry hint), which tonic answers as the RPC's status.
fn overloaded(error: BoxError) -> BoxError {
    if error.is::<Overloaded>() {
        tracing::debug!("rpc refused: too many in flight");
        let code = ErrorCode::Overloaded;
        return Box::new(code.to_status(code.default_message(), Some(OVERLOADED_RETRY), &[], &[]));
    }
    error
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codes::decode_status;
    use std::convert::Infallible;

    #[derive(Clone)]
    struct Slow;

    impl Service<http::Request<()>> for Slow {
        type Response = http::Response<()>;
        type Error = Infallible;
        type Future = BoxFuture<Result<http::Response<()>, Infallible>>;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _request: http::Request<()>) -> Self::Future {
            Box::pin(async {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Ok(http::Response::new(()))
            })
        }
    }

    fn request(path: &str) -> http::Request<()> {
        http::Request::builder().uri(path).body(()).unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn past_the_limit_rpcs_are_refused_at_once_and_health_checks_pass() {
        let service = GuardLayer::new(2).layer(Slow);
        let first = tokio::spawn(service.clone().oneshot(request("/a.A/One")));
        let second = tokio::spawn(service.clone().oneshot(request("/a.A/Two")));
        tokio::task::yield_now().await;
        let started = tokio::time::Instant::now();
        let refused = service
            .clone()
            .oneshot(request("/a.A/Three"))
            .await
            .expect_err("over the limit");
        assert_eq!(started.elapsed(), Duration::ZERO, "refused without waiting");
        let status = refused.downcast::<tonic::Status>().expect("a status");
        assert_eq!(status.code(), tonic::Code::ResourceExhausted);
        let decoded = decode_status(&status);
        assert_eq!(decoded.code, ErrorCode::Overloaded);
        assert_eq!(decoded.retry_after, Some(OVERLOADED_RETRY));
        // The health service is never shed.
        let health = service
            .clone()
            .oneshot(request("/grpc.health.v1.Health/Check"))
            .await;
        assert!(health.is_ok());
        first.await.unwrap().unwrap();
        second.await.unwrap().unwrap();
        // Capacity is back once the first two are answered.
        assert!(service.oneshot(request("/a.A/Four")).await.is_ok());
    }

    #[test]
    fn defaults_are_valid() {
        GrpcServerLimits::default().validate("grpc_server").unwrap();
        let bad = GrpcServerLimits {
            max_concurrent_requests: 0,
            ..GrpcServerLimits::default()
        };
        assert!(
            bad.validate("grpc_server")
                .unwrap_err()
                .contains("grpc_server.max_concurrent_requests")
        );
    }
}
