//! The restaurant tools end to end over MCP HTTP and the typed gRPC API, on
//! both backends: the walking skeleton, locations and catalogue, orders,
//! customers, conversations and analytics, and the operator's write switch.
//! One test binary, one module per concern.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod end_to_end;
mod locations_catalog;
mod orders_customers_analytics;
mod write_switch;
