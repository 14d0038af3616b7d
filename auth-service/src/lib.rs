//! The Chataigne auth-service as a library: configuration, the [`AuthApp`]
//! (built from configuration, served on a gRPC and an HTTP listener, with a
//! management API), and the pieces behind it — token signing and
//! verification, live authorization, storage on PostgreSQL or SQLite.

mod admin;
mod app;
mod config;
mod core;
mod error;
mod grpc;
mod http;
mod keys;
mod live;
mod model;
mod seed;
mod store;
mod tokens;

pub use admin::{IssueTokenRequest, IssuedToken};
pub use app::{AuthApp, Listeners, run};
pub use config::{Config, DatabaseConfig, OAuthConfig};
pub use error::{AuthError, AuthFailure};
pub use grpc::to_status;
pub use http::{JWKS_PATH, METADATA_PATH};
pub use model::{Access, Authenticated, Principal, UserStatus};
pub use seed::DEMO_REDIRECT_URIS;
pub use store::StoreError;
pub use tokens::INTERNAL_AUDIENCE;
