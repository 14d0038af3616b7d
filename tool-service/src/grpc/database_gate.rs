//! Fast failure while the database is known down: a tower layer that, once
//! the health probe (`chataigne_common::grpc_health`) has seen the database
//! fail, answers every tool RPC at once with `MCP_DEPENDENCY_UNAVAILABLE`
//! instead of letting it wait on the pool's acquire timeout; the catalogue
//! listing (no database) and the standard services pass. The first probe
//! that sees the database back lets calls through again.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use chataigne_common::ErrorCode;

use crate::domain::Dependency;
// The one tool-service RPC that needs no database.
use crate::metrics::LIST_TOOLS;

/// Path prefix of the tool-service's own RPCs.
const TOOL_RPCS: &str = "/chataigne.tools.v1.";

/// Whether the database answered the health probe last (shared with it).
#[derive(Clone, Debug)]
pub struct DatabaseState(Arc<AtomicBool>);

impl Default for DatabaseState {
    fn default() -> Self {
        DatabaseState(Arc::new(AtomicBool::new(true)))
    }
}

impl DatabaseState {
    pub fn set(&self, up: bool) {
        self.0.store(up, Ordering::Release);
    }

    pub fn is_up(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }
}

/// Whether `path` needs the database.
fn gated(path: &str) -> bool {
    path.starts_with(TOOL_RPCS) && path != LIST_TOOLS
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
        if !self.state.is_up() && gated(request.uri().path()) {
            crate::metrics::dependency_failed(Dependency::Database);
            let refused = ErrorCode::DependencyUnavailable.status().into_http();
            return Box::pin(async move { Ok(refused) });
        }
        Box::pin(self.inner.call(request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
