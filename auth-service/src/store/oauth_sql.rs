//! The authorization server's SQL, shared by both backends, and the rows it
//! decodes into.

use super::oauth::{ClientKind, ClientRecord, CodeRecord, KeyInfo, RefreshRecord, UserLogin};

macro_rules! client_select {
    () => {
        "SELECT client_id, name, enabled, redirect_uris, kind, secret_hash, allowed_scopes, \
         service_user_id, origin FROM oauth_clients"
    };
}

pub(super) const CLIENT: &str = concat!(client_select!(), " WHERE client_id = $1");
pub(super) const CLIENTS: &str = concat!(client_select!(), " ORDER BY client_id");

pub(super) const UPSERT_CLIENT: &str = "INSERT INTO oauth_clients \
     (client_id, name, enabled, redirect_uris, kind, secret_hash, allowed_scopes, service_user_id, \
      origin, created_at) VALUES ($1, $2, TRUE, $3, $4, $5, $6, $7, $8, $9) \
     ON CONFLICT (client_id) DO UPDATE SET name = excluded.name, \
       redirect_uris = excluded.redirect_uris, kind = excluded.kind, \
       secret_hash = excluded.secret_hash, allowed_scopes = excluded.allowed_scopes, \
       service_user_id = excluded.service_user_id, origin = excluded.origin";

pub(super) const USER_LOGIN: &str =
    "SELECT id, status, password_hash FROM users WHERE lower(email) = lower($1)";
pub(super) const SET_PASSWORD_HASH: &str = "UPDATE users SET password_hash = $2 WHERE id = $1";
pub(super) const USER_HAS_PASSWORD: &str =
    "SELECT COUNT(*) FROM users WHERE id = $1 AND password_hash IS NOT NULL";
pub(super) const INSERT_USER: &str = "INSERT INTO users \
     (id, email, display_name, status, platform_admin, created_at) VALUES ($1, $2, $3, $4, $5, $6) \
     ON CONFLICT (id) DO NOTHING";

pub(super) const INSERT_BROWSER_SESSION: &str = "INSERT INTO browser_sessions \
     (id_hash, user_id, created_at, expires_at) VALUES ($1, $2, $3, $4)";
pub(super) const BROWSER_SESSION_USER: &str = "SELECT b.user_id FROM browser_sessions b \
     JOIN users u ON u.id = b.user_id \
     WHERE b.id_hash = $1 AND b.revoked_at IS NULL AND b.expires_at > $2 AND u.status = 'active'";

pub(super) const REVOKE_BROWSER_SESSION: &str = "UPDATE browser_sessions SET revoked_at = $2 \
     WHERE id_hash = $1 AND revoked_at IS NULL";

pub(super) const INSERT_CODE: &str = "INSERT INTO authorization_codes \
     (code_hash, client_id, user_id, redirect_uri, scopes, resource, code_challenge, created_at, \
      expires_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
pub(super) const CONSUME_CODE: &str = "UPDATE authorization_codes SET used_at = $2 \
     WHERE code_hash = $1 AND used_at IS NULL \
     RETURNING client_id, user_id, redirect_uri, scopes, resource, code_challenge, expires_at";
pub(super) const SPENT_CODE: &str =
    "SELECT session_id FROM authorization_codes WHERE code_hash = $1";
pub(super) const SET_CODE_SESSION: &str =
    "UPDATE authorization_codes SET session_id = $2 WHERE code_hash = $1";

pub(super) const INSERT_REFRESH: &str = "INSERT INTO refresh_tokens \
     (token_hash, session_id, client_id, user_id, scopes, resource, created_at, expires_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
pub(super) const SPEND_REFRESH: &str = "UPDATE refresh_tokens SET used_at = $2 \
     WHERE token_hash = $1 AND used_at IS NULL AND revoked_at IS NULL";
pub(super) const REFRESH: &str = "SELECT session_id, client_id, user_id, scopes, resource, \
     expires_at, used_at, revoked_at FROM refresh_tokens WHERE token_hash = $1";
pub(super) const REVOKE_FAMILY_TOKENS: &str = "UPDATE refresh_tokens \
     SET revoked_at = COALESCE(revoked_at, $2) WHERE session_id = $1";
pub(super) const REVOKE_FAMILY_SESSION: &str =
    "UPDATE sessions SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1";

pub(super) const SIGNING_KEYS_INFO: &str =
    "SELECT kid, created_at, retired_at FROM signing_keys ORDER BY created_at, kid";
pub(super) const RETIRE_SIGNING_KEY: &str =
    "UPDATE signing_keys SET retired_at = $2 WHERE kid = $1 AND retired_at IS NULL";

// Cleanup, one bounded batch per statement: $1 = now, $2 = the retention
// cutoff for revoked (and spent) rows, $3 = the batch size. Spent codes are
// kept until the cutoff so that their reuse still revokes the session.
pub(super) const PURGE_CODES: &str = "DELETE FROM authorization_codes WHERE code_hash IN \
     (SELECT code_hash FROM authorization_codes \
      WHERE expires_at < $1 AND (used_at IS NULL OR expires_at < $2) LIMIT $3)";
pub(super) const PURGE_REFRESH_TOKENS: &str = "DELETE FROM refresh_tokens WHERE token_hash IN \
     (SELECT token_hash FROM refresh_tokens WHERE expires_at < $1 OR revoked_at < $2 LIMIT $3)";
pub(super) const PURGE_BROWSER_SESSIONS: &str = "DELETE FROM browser_sessions WHERE id_hash IN \
     (SELECT id_hash FROM browser_sessions WHERE expires_at < $1 OR revoked_at < $2 LIMIT $3)";
pub(super) const PURGE_SESSIONS: &str = "DELETE FROM sessions WHERE id IN \
     (SELECT id FROM sessions WHERE expires_at < $1 OR revoked_at < $2 LIMIT $3)";

/// One row of the client queries.
#[derive(sqlx::FromRow)]
pub(super) struct ClientRow {
    client_id: String,
    name: String,
    enabled: bool,
    redirect_uris: String,
    kind: String,
    secret_hash: Option<String>,
    allowed_scopes: String,
    service_user_id: Option<String>,
    origin: String,
}

impl From<ClientRow> for ClientRecord {
    fn from(row: ClientRow) -> ClientRecord {
        ClientRecord {
            client_id: row.client_id,
            name: row.name,
            enabled: row.enabled,
            redirect_uris: serde_json::from_str(&row.redirect_uris).unwrap_or_default(),
            // An unknown kind is treated as the most restricted user client.
            kind: ClientKind::parse(&row.kind).unwrap_or(ClientKind::Public),
            secret_hash: row.secret_hash,
            allowed_scopes: row.allowed_scopes,
            service_user_id: row.service_user_id,
            origin: row.origin,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct LoginRow {
    id: String,
    status: String,
    password_hash: Option<String>,
}

impl From<LoginRow> for UserLogin {
    fn from(row: LoginRow) -> UserLogin {
        UserLogin {
            user_id: row.id,
            status: row.status,
            password_hash: row.password_hash,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct CodeRow {
    client_id: String,
    user_id: String,
    redirect_uri: String,
    scopes: String,
    resource: String,
    code_challenge: String,
    expires_at: i64,
}

impl From<CodeRow> for CodeRecord {
    fn from(row: CodeRow) -> CodeRecord {
        CodeRecord {
            client_id: row.client_id,
            user_id: row.user_id,
            redirect_uri: row.redirect_uri,
            scopes: row.scopes,
            resource: row.resource,
            code_challenge: row.code_challenge,
            expires_at_ms: row.expires_at,
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct RefreshRow {
    session_id: String,
    client_id: String,
    user_id: String,
    scopes: String,
    resource: String,
    expires_at: i64,
    used_at: Option<i64>,
    revoked_at: Option<i64>,
}

impl From<RefreshRow> for RefreshRecord {
    fn from(row: RefreshRow) -> RefreshRecord {
        RefreshRecord {
            session_id: row.session_id,
            client_id: row.client_id,
            user_id: row.user_id,
            scopes: row.scopes,
            resource: row.resource,
            expires_at_ms: row.expires_at,
            spent: row.used_at.is_some() || row.revoked_at.is_some(),
        }
    }
}

#[derive(sqlx::FromRow)]
pub(super) struct KeyInfoRow {
    kid: String,
    created_at: i64,
    retired_at: Option<i64>,
}

impl From<KeyInfoRow> for KeyInfo {
    fn from(row: KeyInfoRow) -> KeyInfo {
        KeyInfo {
            kid: row.kid,
            created_at_ms: row.created_at,
            retired_at_ms: row.retired_at,
        }
    }
}
