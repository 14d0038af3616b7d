//! What a method needs about the request being served: shared state, the
//! endpoint, the authenticated principal, the request log, the address limit
//! and the request's headers.

use crate::access::address_limit::AddressLimit;
use crate::access::auth::Principal;
use crate::endpoints::Endpoint;
use crate::mcp::request_log::RequestLog;
use crate::state::AppState;

/// Everything a method needs about the request being served.
pub struct Context<'a> {
    pub state: &'a AppState,
    pub endpoint: &'a Endpoint,
    pub principal: &'a Principal,
    pub log: &'a mut RequestLog,
    /// The per-address limit, counted with the tool limit by `tools/call`.
    pub address: &'a AddressLimit,
    /// The request's headers (revisions that mirror arguments check them).
    pub headers: &'a http::HeaderMap,
}
