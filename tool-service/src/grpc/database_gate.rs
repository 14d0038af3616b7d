//! Fast failure while the database is known down: a tower layer that, once
//! the health probe (`chataigne_common::grpc_health`) has seen the database
//! fail, answers every tool RPC at once with `MCP_DEPENDENCY_UNAVAILABLE`
//! (retryable, with a retry hint) instead of letting it wait on the pool's
//! acquire timeout; the catalogue listing (no database) and the standard
//! services pass. A call already in flight when the probe finds the
//! database down ends then with the same answer if it has not yet been
//! handed a pooled connection (waiting for the pool, or for a connection
//! the pool is opening): it has done nothing yet. A call holding or having
//! held a connection is left to end on its own (its statements are bounded
//! by its deadline), as a write may have taken effect. The first probe that
//! sees the database back lets calls through again.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use chataigne_common::ErrorCode;

use crate::domain::Dependency;
// The one tool-service RPC that needs no database.
use crate::metrics::LIST_TOOLS;

/// Path prefix of the tool-service's own RPCs.
const TOOL_RPCS: &str = "/chataigne.tools.v1.";
/// The retry hint of a refusal: the health probe (every 250 ms) lets calls
/// through within about this of the database's return.
const RETRY_AFTER: Duration = Duration::from_secs(1);

/// Whether the database answered the health probe last (shared with it).
#[derive(Clone, Debug)]
pub struct DatabaseState(Arc<tokio::sync::watch::Sender<bool>>);

impl Default for DatabaseState {
    fn default() -> Self {
        DatabaseState(Arc::new(tokio::sync::watch::Sender::new(true)))
    }
}

impl DatabaseState {
    pub fn set(&self, up: bool) {
        self.0
            .send_if_modified(|was| std::mem::replace(was, up) != up);
    }

    pub fn is_up(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once the database is known down (at once if it is).
    pub async fn down(&self) {
        let mut state = self.0.subscribe();
        // The sender lives as long as `self`: the wait ends only when down.
        let _ = state.wait_for(|up| !up).await;
    }
}

tokio::task_local! {
    /// Whether the call being served has been handed a pooled connection.
    static HANDED: Arc<AtomicBool>;
}

/// Records that the call being served was handed a pooled connection (the
/// pool's hooks call this once the connection is checked and ready); outside
/// a gated call it does nothing.
pub fn connection_handed() {
    let _ = HANDED.try_with(|handed| handed.store(true, Ordering::Release));
}

/// Whether `path` needs the database.
fn gated(path: &str) -> bool {
    path.starts_with(TOOL_RPCS) && path != LIST_TOOLS
}

/// The answer of a tool RPC while the database is known down.
fn refused<R: Default>() -> http::Response<R> {
    crate::metrics::dependency_failed(Dependency::Database);
    let code = ErrorCode::DependencyUnavailable;
    code.to_status(code.default_message(), Some(RETRY_AFTER), &[], &[])
        .into_http()
}

#[derive(Clone)]
pub struct DatabaseGate(pub DatabaseState);

impl<S> tower::Layer<S> for DatabaseGate {
    type Service = Gated<S>;

    fn layer(&self, inner: S) -> Gated<S> {
        Gated {
            inner,
            state: self.0.clone(),
        }
    }
}

#[derive(Clone)]
pub struct Gated<S> {
    inner: S,
    state: DatabaseState,
}

impl<S, B, R> tower::Service<http::Request<B>> for Gated<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
    S::Error: Send + 'static,
    R: Default + Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        if !gated(request.uri().path()) {
            return Box::pin(self.inner.call(request));
        }
        if !self.state.is_up() {
            let refused = refused();
            return Box::pin(async move { Ok(refused) });
        }
        let handed = Arc::new(AtomicBool::new(false));
        let answer = HANDED.scope(handed.clone(), self.inner.call(request));
        let state = self.state.clone();
        Box::pin(async move {
            tokio::pin!(answer);
            tokio::select! {
                biased;
                answered = &mut answer => return answered,
                () = state.down() => {}
            }
            if handed.load(Ordering::Acquire) {
                answer.await
            } else {
                Ok(refused())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chataigne_common::codes::decode_status;
    use std::convert::Infallible;
    use tower::{Layer, ServiceExt};

    /// A tool RPC that waits 30 s, after its store was handed a pooled
    /// connection (`true`) or waiting for one (`false`).
    #[derive(Clone)]
    struct Waiting(bool);

    impl tower::Service<http::Request<()>> for Waiting {
        type Response = http::Response<()>;
        type Error = Infallible;
        type Future = Pin<Box<dyn Future<Output = Result<http::Response<()>, Infallible>> + Send>>;

        fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _request: http::Request<()>) -> Self::Future {
            let handed = self.0;
            Box::pin(async move {
                if handed {
                    connection_handed();
                }
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok(http::Response::new(()))
            })
        }
    }

    fn request(path: &str) -> http::Request<()> {
        http::Request::builder().uri(path).body(()).unwrap()
    }

    const GET_ORDER: &str = "/chataigne.tools.v1.Restaurant/GetOrder";

    fn refusal(answer: &http::Response<()>) -> chataigne_common::codes::DecodedStatus {
        let status = tonic::Status::from_header_map(answer.headers()).expect("a status");
        assert_eq!(status.code(), tonic::Code::Unavailable);
        decode_status(&status)
    }

    #[tokio::test(start_paused = true)]
    async fn calls_waiting_for_a_connection_end_the_moment_the_database_is_found_down() {
        let state = DatabaseState::default();
        let gate = DatabaseGate(state.clone());
        let waiting: Vec<_> = (0..3)
            .map(|_| tokio::spawn(gate.layer(Waiting(false)).oneshot(request(GET_ORDER))))
            .collect();
        let holding = tokio::spawn(gate.layer(Waiting(true)).oneshot(request(GET_ORDER)));
        tokio::time::sleep(Duration::from_secs(2)).await;
        assert!(waiting.iter().all(|call| !call.is_finished()));
        state.set(false);
        let found_down = tokio::time::Instant::now();
        for call in waiting {
            let answer = tokio::time::timeout(Duration::from_millis(100), call)
                .await
                .expect("released within 100 ms")
                .unwrap()
                .unwrap();
            let decoded = refusal(&answer);
            assert_eq!(decoded.code, ErrorCode::DependencyUnavailable);
            assert_eq!(decoded.retry_after, Some(RETRY_AFTER), "with a retry hint");
        }
        assert_eq!(found_down.elapsed(), Duration::ZERO, "at once");
        // A call holding a connection may have written: it ends on its own.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(!holding.is_finished(), "left to end on its own");
        // Known down: refused at once; the listing passes.
        let started = tokio::time::Instant::now();
        let answer = gate
            .layer(Waiting(false))
            .oneshot(request(GET_ORDER))
            .await
            .unwrap();
        assert_eq!(refusal(&answer).retry_after, Some(RETRY_AFTER));
        assert_eq!(started.elapsed(), Duration::ZERO);
        let listing = tokio::spawn(gate.layer(Waiting(false)).oneshot(request(LIST_TOOLS)));
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!listing.is_finished(), "the listing needs no database");
        holding.await.unwrap().unwrap();
        // Back up: calls pass again and are not released.
        state.set(true);
        let passing = tokio::spawn(gate.layer(Waiting(false)).oneshot(request(GET_ORDER)));
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!passing.is_finished());
    }

    #[test]
    fn tool_rpcs_but_the_listing_are_gated() {
        assert!(gated("/chataigne.tools.v1.ToolCatalog/CallTool"));
        assert!(gated("/chataigne.tools.v1.Restaurant/GetOrder"));
        assert!(!gated(LIST_TOOLS));
        assert!(!gated("/grpc.health.v1.Health/Check"));
        assert!(!gated(
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo"
        ));
    }
}
