//! The network edge: public and internal listeners, TLS, the source-address
//! allowlist, the HTTP middleware stack and the health and readiness routes.

pub mod allowlist;
pub mod health;
pub mod listener;
pub mod stack;
pub mod tls;
pub mod trace;
