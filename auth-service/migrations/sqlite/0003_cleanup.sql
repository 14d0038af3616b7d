-- Indexes for the periodic cleanup of expired authorization state (codes,
-- refresh tokens, browser sessions, sessions), deleted in bounded batches.
CREATE INDEX authorization_codes_expires ON authorization_codes (expires_at);
CREATE INDEX refresh_tokens_expires ON refresh_tokens (expires_at);
CREATE INDEX browser_sessions_expires ON browser_sessions (expires_at);
CREATE INDEX sessions_expires ON sessions (expires_at);
