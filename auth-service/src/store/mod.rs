//! Storage of users, roles, memberships, clients, consents, sessions and
//! signing keys behind one trait, implemented once by a store generic over
//! its backend (PostgreSQL or SQLite) from the same SQL.

pub mod admin;
mod connect;
mod dialect;
pub mod oauth;
mod oauth_impl;
mod oauth_sql;
mod postgres;
mod sql;
mod sql_store;
mod sqlite;
mod statement;

use futures::future::BoxFuture;

use crate::model::{Grant, LiveState};

pub use admin::AdminStore;
pub use connect::connect;
pub use oauth::OAuthStore;

/// Storage failures, split by what a caller can do about them.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Unreachable, overloaded or timed out: retrying later may work.
    #[error("database unavailable: {0}")]
    Unavailable(String),
    /// Anything else (constraint, decoding, migration): a bug or bad data.
    #[error("database error: {0}")]
    Failed(String),
}

pub type StoreResult<T> = Result<T, StoreError>;
pub type StoreFuture<'a, T> = BoxFuture<'a, StoreResult<T>>;

/// A signing key as stored: `material` is the private key sealed under the
/// key-encryption key (see `key_encryption`), or, in rows written before
/// encryption and on SQLite without a KEK, the plaintext PKCS#8 document.
/// The column keeps its original name, `pkcs8`.
#[derive(Clone, sqlx::FromRow)]
pub struct StoredKey {
    pub kid: String,
    #[sqlx(rename = "pkcs8")]
    pub material: Vec<u8>,
    #[sqlx(rename = "created_at")]
    pub created_at_ms: i64,
}

impl std::fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredKey")
            .field("kid", &self.kid)
            .field("material", &"[redacted]")
            .finish()
    }
}

/// A user to create (seed or admin).
#[derive(Debug, Clone)]
pub struct NewUser {
    pub id: String,
    pub email: String,
    pub display_name: String,
    pub status: String,
    pub platform_admin: bool,
}

/// A membership to create.
#[derive(Debug, Clone)]
pub struct NewMembership {
    pub id: String,
    pub user_id: String,
    pub organization_id: String,
    pub location_id: Option<String>,
    pub role: String,
}

/// An OAuth client to create or update.
#[derive(Debug, Clone)]
pub struct NewClient {
    pub client_id: String,
    pub name: String,
    /// JSON array of redirect URIs.
    pub redirect_uris_json: String,
}

/// A sign-in session to create.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub id: String,
    pub user_id: String,
    pub client_id: String,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
}

/// A consent as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consent {
    pub scopes: String,
    pub revoked: bool,
}

/// A user's consent to one client (administration).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConsent {
    pub client_id: String,
    pub scopes: String,
    pub revoked: bool,
}

/// The signing keys the live pass reports on: the presented token's (`None`
/// when there is none, e.g. at the token endpoint) and this replica's
/// current signing key.
#[derive(Debug, Clone, Copy)]
pub struct KeyCheck<'a> {
    pub token_kid: Option<&'a str>,
    pub signing_kid: &'a str,
}

/// The live state behind a session and the `(membership, permission)` pairs
/// of its user, read together.
pub type LiveMemberships = (LiveState, Vec<(Grant, String)>);

/// Data written by a seed, in one transaction, without overwriting rows that
/// already exist.
#[derive(Debug, Clone, Default)]
pub struct SeedData {
    pub users: Vec<NewUser>,
    pub role_permissions: Vec<(String, String)>,
    pub memberships: Vec<NewMembership>,
    pub clients: Vec<NewClient>,
}

/// Everything the auth-service reads and writes. Methods returning `bool`
/// report whether a row matched.
pub trait Store: OAuthStore + AdminStore + Send + Sync + 'static {
    /// Applies the embedded migrations.
    fn migrate(&self) -> StoreFuture<'_, ()>;

    /// Occupancy of the connection pool (metrics).
    fn pool_stats(&self) -> chataigne_common::metrics::PoolStats;

    /// Session, user, client and consent behind `session_id`, and the state
    /// of the signing keys of `keys`, in one query.
    fn live_state<'a>(
        &'a self,
        session_id: &'a str,
        keys: KeyCheck<'a>,
    ) -> StoreFuture<'a, Option<LiveState>>;

    /// [`Store::live_state`] plus whether a current membership of the
    /// session's user on `organization_id` (organization-level) or on
    /// `location_id` (location-level) has a role granting `permission`, in one query.
    fn live_state_with_grant<'a>(
        &'a self,
        session_id: &'a str,
        permission: &'a str,
        organization_id: &'a str,
        location_id: Option<&'a str>,
        keys: KeyCheck<'a>,
    ) -> StoreFuture<'a, Option<(LiveState, bool)>>;

    /// Memberships of `user_id` whose role grants `permission`.
    fn grants<'a>(&'a self, user_id: &'a str, permission: &'a str) -> StoreFuture<'a, Vec<Grant>>;

    /// [`Store::live_state`] plus every current membership of the session's
    /// user with each permission its role grants, as `(membership,
    /// permission)` ordered by organization, location and permission, in one
    /// query (the live read of `Authenticate`).
    fn live_state_with_memberships<'a>(
        &'a self,
        session_id: &'a str,
        keys: KeyCheck<'a>,
    ) -> StoreFuture<'a, Option<LiveMemberships>>;

    /// Signing keys not retired, oldest first.
    fn active_signing_keys(&self) -> StoreFuture<'_, Vec<StoredKey>>;
    /// Every signing key, retired ones included, oldest first.
    fn all_signing_keys(&self) -> StoreFuture<'_, Vec<StoredKey>>;
    fn insert_signing_key<'a>(&'a self, key: &'a StoredKey) -> StoreFuture<'a, ()>;
    /// Replaces a key's stored material if it is still `expected` (so two
    /// replicas re-sealing at once do not overwrite each other).
    fn replace_signing_key_material<'a>(
        &'a self,
        kid: &'a str,
        expected: &'a [u8],
        material: &'a [u8],
    ) -> StoreFuture<'a, bool>;

    fn user_exists<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, bool>;
    fn client_exists<'a>(&'a self, client_id: &'a str) -> StoreFuture<'a, bool>;
    fn create_session<'a>(&'a self, session: &'a NewSession) -> StoreFuture<'a, ()>;
    fn consent<'a>(
        &'a self,
        user_id: &'a str,
        client_id: &'a str,
    ) -> StoreFuture<'a, Option<Consent>>;
    /// Creates or replaces the consent of (user, client), un-revoking it.
    fn grant_consent<'a>(
        &'a self,
        user_id: &'a str,
        client_id: &'a str,
        scopes: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, ()>;

    fn set_user_status<'a>(&'a self, user_id: &'a str, status: &'a str) -> StoreFuture<'a, bool>;
    fn set_platform_admin<'a>(&'a self, user_id: &'a str, admin: bool) -> StoreFuture<'a, bool>;
    fn revoke_session<'a>(&'a self, session_id: &'a str, now_ms: i64) -> StoreFuture<'a, bool>;
    /// Ends every current session of `user_id` (with `client_id` only, when
    /// given) with their refresh tokens, and, for all clients, the user's
    /// sign-in sessions of the consent page; returns the sessions ended.
    fn revoke_user_sessions<'a>(
        &'a self,
        user_id: &'a str,
        client_id: Option<&'a str>,
        now_ms: i64,
    ) -> StoreFuture<'a, u64>;
    /// Every consent of `user_id`, revoked ones included, by client id.
    fn user_consents<'a>(&'a self, user_id: &'a str) -> StoreFuture<'a, Vec<ClientConsent>>;
    fn set_client_enabled<'a>(&'a self, client_id: &'a str, enabled: bool)
    -> StoreFuture<'a, bool>;
    fn revoke_consent<'a>(
        &'a self,
        user_id: &'a str,
        client_id: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, bool>;
    fn set_consent_scopes<'a>(
        &'a self,
        user_id: &'a str,
        client_id: &'a str,
        scopes: &'a str,
    ) -> StoreFuture<'a, bool>;
    fn remove_membership<'a>(
        &'a self,
        user_id: &'a str,
        organization_id: &'a str,
        location_id: Option<&'a str>,
    ) -> StoreFuture<'a, bool>;
    /// Creates the membership, replacing the role of an existing one on the same target.
    fn put_membership<'a>(
        &'a self,
        membership: &'a NewMembership,
        now_ms: i64,
    ) -> StoreFuture<'a, ()>;
    /// Creates the client or updates its name and redirect URIs.
    fn put_client<'a>(&'a self, client: &'a NewClient, now_ms: i64) -> StoreFuture<'a, ()>;

    /// Writes `seed` in one transaction, keeping rows that already exist.
    fn apply_seed<'a>(&'a self, seed: &'a SeedData, now_ms: i64) -> StoreFuture<'a, ()>;
}
