//! The shared store of the rate limits: Redis configuration and the
//! connection with its breaker.

pub mod redis_conn;
