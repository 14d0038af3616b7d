//! What every request handler shares: configuration, resolved endpoints,
//! backend clients, the tool catalogue cache and the rate-limit store (the
//! gateway keeps no idempotency state: see `mcp/guard.rs`).

use std::sync::Arc;

use crate::access::auth::Authenticator;
use crate::access::rate_limit::RateLimiter;
use crate::backends::Backends;
use crate::backends::catalog::Catalog;
use crate::config::Config;
use crate::endpoints::Endpoints;
use crate::ops::counters::Metrics;

pub struct AppState {
    pub config: Config,
    pub endpoints: Endpoints,
    pub backends: Backends,
    /// The token check of each request (the auth-service's client).
    pub authenticator: Authenticator,
    pub catalog: Catalog,
    /// Rate limits (Redis or in-process).
    pub limiter: RateLimiter,
    pub metrics: Arc<Metrics>,
}

pub type SharedState = Arc<AppState>;
