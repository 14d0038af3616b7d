//! The storage port of the authorization server: clients with their kind and
//! secret, password logins, browser sessions, authorization codes, rotating
//! refresh tokens and signing-key administration. Secrets are handed to the
//! store already hashed.

use super::StoreFuture;

/// Kind of OAuth client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientKind {
    /// No secret (native and browser apps); PKCE protects the code.
    Public,
    /// Authenticates at the token endpoint with a secret.
    Confidential,
    /// An internal caller: `client_credentials` only, acting as its service user.
    Service,
}

impl ClientKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientKind::Public => "public",
            ClientKind::Confidential => "confidential",
            ClientKind::Service => "service",
        }
    }

    pub fn parse(value: &str) -> Option<ClientKind> {
        match value {
            "public" => Some(ClientKind::Public),
            "confidential" => Some(ClientKind::Confidential),
            "service" => Some(ClientKind::Service),
            _ => None,
        }
    }
}

/// An OAuth client as stored.
#[derive(Clone, PartialEq, Eq)]
pub struct ClientRecord {
    pub client_id: String,
    pub name: String,
    pub enabled: bool,
    pub redirect_uris: Vec<String>,
    pub kind: ClientKind,
    /// SHA-256 (base64url) of the secret, for confidential and service clients.
    pub secret_hash: Option<String>,
    /// Scopes a service client may request; empty for user clients.
    pub allowed_scopes: String,
    /// The user a service client acts as.
    pub service_user_id: Option<String>,
    /// `registered`, `dynamic` or `metadata`.
    pub origin: String,
}

impl std::fmt::Debug for ClientRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientRecord")
            .field("client_id", &self.client_id)
            .field("name", &self.name)
            .field("enabled", &self.enabled)
            .field("kind", &self.kind)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

/// A user's sign-in record.
#[derive(Clone)]
pub struct UserLogin {
    pub user_id: String,
    pub status: String,
    /// PHC string (Argon2id); `None` when no password was ever set.
    pub password_hash: Option<String>,
}

/// An authorization code to store.
#[derive(Debug, Clone)]
pub struct NewCode {
    pub code_hash: String,
    pub client_id: String,
    pub user_id: String,
    pub redirect_uri: String,
    pub scopes: String,
    pub resource: String,
    pub code_challenge: String,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
}

/// A code as read back when it is consumed.
#[derive(Debug, Clone)]
pub struct CodeRecord {
    pub client_id: String,
    pub user_id: String,
    pub redirect_uri: String,
    pub scopes: String,
    pub resource: String,
    pub code_challenge: String,
    pub expires_at_ms: i64,
}

/// Outcome of consuming a one-time secret (code or refresh token).
#[derive(Debug, Clone)]
pub enum Consumed<T> {
    /// First use: the record, now marked used.
    Fresh(T),
    /// Already used (or revoked): the session it led to, if any.
    Reused {
        session_id: Option<String>,
    },
    Missing,
}

/// A refresh token to store.
#[derive(Debug, Clone)]
pub struct NewRefresh {
    pub token_hash: String,
    pub session_id: String,
    pub client_id: String,
    pub user_id: String,
    pub scopes: String,
    pub resource: String,
    pub created_at_ms: i64,
    pub expires_at_ms: i64,
}

/// A refresh token as read back.
#[derive(Debug, Clone)]
pub struct RefreshRecord {
    pub session_id: String,
    pub client_id: String,
    pub user_id: String,
    pub scopes: String,
    pub resource: String,
    pub expires_at_ms: i64,
    /// Already rotated (used) or revoked: presenting it again is reuse.
    pub spent: bool,
}

/// A signing key's public facts (administration).
#[derive(Debug, Clone)]
pub struct KeyInfo {
    pub kid: String,
    pub created_at_ms: i64,
    pub retired_at_ms: Option<i64>,
}

/// Rows deleted by one cleanup batch, per table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Purged {
    pub codes: u64,
    pub refresh_tokens: u64,
    pub browser_sessions: u64,
    pub sessions: u64,
}

impl Purged {
    pub fn total(&self) -> u64 {
        self.codes + self.refresh_tokens + self.browser_sessions + self.sessions
    }

    /// Whether some table may hold more rows to delete (a full batch went).
    pub fn maybe_more(&self, batch: u64) -> bool {
        [
            self.codes,
            self.refresh_tokens,
            self.browser_sessions,
            self.sessions,
        ]
        .iter()
        .any(|deleted| *deleted >= batch)
    }
}

/// What the authorization server reads and writes.
pub trait OAuthStore: Send + Sync + 'static {
    fn client<'a>(&'a self, client_id: &'a str) -> StoreFuture<'a, Option<ClientRecord>>;
    fn clients(&self) -> StoreFuture<'_, Vec<ClientRecord>>;
    /// Creates the client or replaces everything but its enabled flag.
    fn upsert_client<'a>(&'a self, client: &'a ClientRecord, now_ms: i64) -> StoreFuture<'a, ()>;

    fn user_login<'a>(&'a self, email: &'a str) -> StoreFuture<'a, Option<UserLogin>>;
    fn set_password_hash<'a>(&'a self, user_id: &'a str, hash: &'a str) -> StoreFuture<'a, bool>;
    /// Users among `user_ids` without a password hash.
    fn users_without_password<'a>(&'a self, user_ids: &'a [String])
    -> StoreFuture<'a, Vec<String>>;
    /// Creates a user (no-op when the id exists).
    fn insert_user<'a>(&'a self, user: &'a super::NewUser, now_ms: i64) -> StoreFuture<'a, ()>;

    fn create_browser_session<'a>(
        &'a self,
        id_hash: &'a str,
        user_id: &'a str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> StoreFuture<'a, ()>;
    /// The active user signed in with this browser session, if still valid.
    fn browser_session_user<'a>(
        &'a self,
        id_hash: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, Option<String>>;
    /// Ends a browser session (sign-out, switching account).
    fn revoke_browser_session<'a>(&'a self, id_hash: &'a str, now_ms: i64) -> StoreFuture<'a, ()>;

    fn insert_code<'a>(&'a self, code: &'a NewCode) -> StoreFuture<'a, ()>;
    fn consume_code<'a>(
        &'a self,
        code_hash: &'a str,
        now_ms: i64,
    ) -> StoreFuture<'a, Consumed<CodeRecord>>;
    fn set_code_session<'a>(
        &'a self,
        code_hash: &'a str,
        session_id: &'a str,
    ) -> StoreFuture<'a, ()>;

    fn insert_refresh<'a>(&'a self, refresh: &'a NewRefresh) -> StoreFuture<'a, ()>;
    /// Rotation, in one transaction: marks `token_hash` used if it is still
    /// neither used nor revoked, and stores `next` in its place. `false`
    /// (nothing written) when the token was spent meanwhile.
    fn rotate_refresh<'a>(
        &'a self,
        token_hash: &'a str,
        now_ms: i64,
        next: &'a NewRefresh,
    ) -> StoreFuture<'a, bool>;
    /// The refresh token stored under `token_hash`, spent or not.
    fn refresh<'a>(&'a self, token_hash: &'a str) -> StoreFuture<'a, Option<RefreshRecord>>;
    /// Revokes the session and every refresh token of its family, atomically.
    fn revoke_family<'a>(&'a self, session_id: &'a str, now_ms: i64) -> StoreFuture<'a, ()>;

    /// Deletes one batch (at most `batch` rows per table) of expired codes,
    /// refresh tokens, browser sessions and sessions, and of those revoked
    /// (spent, for codes) before `revoked_before_ms`.
    fn purge_expired(
        &self,
        now_ms: i64,
        revoked_before_ms: i64,
        batch: i64,
    ) -> StoreFuture<'_, Purged>;

    fn signing_keys_info(&self) -> StoreFuture<'_, Vec<KeyInfo>>;
    fn retire_signing_key<'a>(&'a self, kid: &'a str, now_ms: i64) -> StoreFuture<'a, bool>;
}
