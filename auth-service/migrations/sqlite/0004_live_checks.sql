-- Ending every session of a user (the `sessions revoke` command) also ends
-- the user's sign-in sessions of the consent page: look them up by user.
CREATE INDEX browser_sessions_user ON browser_sessions (user_id);
