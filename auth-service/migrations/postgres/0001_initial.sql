-- Identity schema of the auth-service (PostgreSQL). Times are Unix milliseconds.

CREATE TABLE users (
    id             TEXT PRIMARY KEY,
    email          TEXT NOT NULL UNIQUE,
    display_name   TEXT NOT NULL,
    password_hash  TEXT,
    status         TEXT NOT NULL CHECK (status IN ('active', 'revoked', 'banned')),
    platform_admin BOOLEAN NOT NULL DEFAULT FALSE,
    created_at     BIGINT NOT NULL
);

CREATE TABLE role_permissions (
    role       TEXT NOT NULL,
    permission TEXT NOT NULL,
    PRIMARY KEY (role, permission)
);

CREATE TABLE memberships (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    organization_id TEXT NOT NULL,
    location_id     TEXT,
    role            TEXT NOT NULL,
    created_at      BIGINT NOT NULL
);
-- One membership per user and target; also serves the live membership lookups.
CREATE UNIQUE INDEX memberships_user_target
    ON memberships (user_id, organization_id, (COALESCE(location_id, '')));

CREATE TABLE oauth_clients (
    client_id     TEXT PRIMARY KEY,
    name          TEXT NOT NULL,
    enabled       BOOLEAN NOT NULL DEFAULT TRUE,
    redirect_uris TEXT NOT NULL DEFAULT '[]',
    created_at    BIGINT NOT NULL
);

CREATE TABLE consents (
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id  TEXT NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
    scopes     TEXT NOT NULL,
    granted_at BIGINT NOT NULL,
    revoked_at BIGINT,
    PRIMARY KEY (user_id, client_id)
);

CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    user_id    TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    client_id  TEXT NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    revoked_at BIGINT
);
CREATE INDEX sessions_user ON sessions (user_id);
CREATE INDEX sessions_client ON sessions (client_id);

CREATE TABLE signing_keys (
    kid        TEXT PRIMARY KEY,
    pkcs8      BYTEA NOT NULL,
    created_at BIGINT NOT NULL,
    retired_at BIGINT
);
