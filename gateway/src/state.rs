//! What every request handler shares: configuration, resolved endpoints,
//! backend clients and the tool catalogue cache.

use std::sync::Arc;

use crate::backends::Backends;
use crate::catalog::Catalog;
use crate::config::Config;
use crate::endpoints::Endpoints;

pub struct AppState {
    pub config: Config,
    pub endpoints: Endpoints,
    pub backends: Backends,
    pub catalog: Catalog,
}

pub type SharedState = Arc<AppState>;
