//! Who may do what, checked through the real stack: the authorization matrix
//! of every principal and tool, revocations and idempotency keys read live at
//! the next request, and service accounts on the typed API. One test binary,
//! one module per concern.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod assertions;
mod live_idempotency;
mod live_revocation;
mod matrix;
mod service_accounts;
