-- OAuth 2.1 authorization server state (PostgreSQL). Times are Unix milliseconds;
-- codes, refresh tokens, browser sessions and client secrets are stored only
-- as SHA-256 hashes (base64url).

-- kind: 'public' (no secret), 'confidential' (secret), 'service' (client
-- credentials only, acting as its own service user).
ALTER TABLE oauth_clients ADD COLUMN kind TEXT NOT NULL DEFAULT 'public'
    CHECK (kind IN ('public', 'confidential', 'service'));
ALTER TABLE oauth_clients ADD COLUMN secret_hash TEXT;
-- Space-separated scopes a service client may request ('' for user clients).
ALTER TABLE oauth_clients ADD COLUMN allowed_scopes TEXT NOT NULL DEFAULT '';
-- The user row a service client acts as (its memberships and roles).
ALTER TABLE oauth_clients ADD COLUMN service_user_id TEXT REFERENCES users (id) ON DELETE CASCADE;
-- 'registered' (admin CLI), 'dynamic' (RFC 7591), 'metadata' (Client ID Metadata Document).
ALTER TABLE oauth_clients ADD COLUMN origin TEXT NOT NULL DEFAULT 'registered';

CREATE TABLE authorization_codes (
    code_hash      TEXT PRIMARY KEY,
    client_id      TEXT NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
    user_id        TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    redirect_uri   TEXT NOT NULL,
    scopes         TEXT NOT NULL,
    resource       TEXT NOT NULL,
    code_challenge TEXT NOT NULL,
    created_at     BIGINT NOT NULL,
    expires_at     BIGINT NOT NULL,
    used_at        BIGINT,
    -- The session created when the code was exchanged (revoked on code reuse).
    session_id     TEXT
);

CREATE TABLE refresh_tokens (
    token_hash TEXT PRIMARY KEY,
    -- The rotation family is the session: reuse of a spent token ends both.
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    client_id  TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    scopes     TEXT NOT NULL,
    resource   TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    used_at    BIGINT,
    revoked_at BIGINT
);
CREATE INDEX refresh_tokens_session ON refresh_tokens (session_id);

-- Signed-in browsers of the authorization server (the sign-in cookie).
CREATE TABLE browser_sessions (
    id_hash    TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT
);
