//! What every request handler shares: configuration, resolved endpoints,
//! backend clients, the tool catalogue cache and the rate-limit and
//! idempotency stores.

use std::sync::Arc;

use crate::backends::Backends;
use crate::catalog::Catalog;
use crate::config::Config;
use crate::counters::Metrics;
use crate::endpoints::Endpoints;
use crate::idempotency::{Hasher, IdempotencyCache};
use crate::rate_limit::RateLimiter;

pub struct AppState {
    pub config: Config,
    pub endpoints: Endpoints,
    pub backends: Backends,
    pub catalog: Catalog,
    /// Rate limits (Redis or in-process).
    pub limiter: RateLimiter,
    /// Idempotency replay cache and in-progress locks (Redis or in-process).
    pub idempotency: IdempotencyCache,
    pub hasher: Hasher,
    pub metrics: Metrics,
}

pub type SharedState = Arc<AppState>;
