//! What every request handler shares: configuration, resolved endpoints,
//! backend clients, the tool catalogue cache and the rate-limit store (the
//! gateway keeps no idempotency state: see `guard.rs`).

use std::sync::Arc;

use crate::backends::Backends;
use crate::catalog::Catalog;
use crate::config::Config;
use crate::counters::Metrics;
use crate::endpoints::Endpoints;
use crate::rate_limit::RateLimiter;

pub struct AppState {
    pub config: Config,
    pub endpoints: Endpoints,
    pub backends: Backends,
    pub catalog: Catalog,
    /// Rate limits (Redis or in-process).
    pub limiter: RateLimiter,
    pub metrics: Metrics,
}

pub type SharedState = Arc<AppState>;
