//! The Chataigne auth-service as a library: configuration, the [`AuthApp`]
//! (built from configuration, served on a gRPC and an HTTP listener, with a
//! management API), and the pieces behind it — token signing and
//! verification, live authorization, storage on PostgreSQL or SQLite.

mod admin;
pub mod admin_cli;
mod admin_oauth;
mod admin_smoke;
mod admin_smoke_page;
mod admin_users;
mod app;
mod assertions;
mod config;
mod core;
mod error;
mod grpc;
mod http;
mod http_log;
mod key_encryption;
mod keys;
mod live;
mod metrics;
mod model;
mod oauth;
mod seed;
mod store;
mod tokens;

pub use admin::{IssueTokenRequest, IssuedToken};
pub use admin_oauth::{NewClientRequest, RegisteredClient, migrate};
pub use admin_smoke::{SmokeTestArgs, smoke_test};
pub use admin_users::NewUserRequest;
pub use app::{AuthApp, Listeners, run};
pub use config::{
    ClientTrustConfig, Config, DatabaseConfig, KeysConfig, Limit, LimitStoreConfig, OAuthConfig,
    RateLimitConfig,
};
pub use error::{AuthError, AuthFailure};
pub use grpc::to_status;
pub use http::{
    AUTHORIZE_PATH, JWKS_PATH, METADATA_PATH, OIDC_METADATA_PATH, REGISTER_PATH, REVOKE_PATH,
    TOKEN_PATH,
};
pub use key_encryption::generate_kek;
pub use model::{Access, Authenticated, Principal, UserStatus};
pub use seed::DEMO_REDIRECT_URIS;
pub use store::admin::{MembershipRecord, UserRecord};
pub use store::oauth::{ClientKind, ClientRecord, KeyInfo, Purged};
pub use store::{ClientConsent, StoreError};
pub use tokens::INTERNAL_AUDIENCE;
