//! Who may use the public endpoints and how often: bearer-token
//! authentication, the protected-resource metadata that points clients to the
//! authorization server, and the rate limits (per address, per client × user × tool).

pub mod address_limit;
pub mod auth;
pub mod metadata;
pub mod rate_limit;
