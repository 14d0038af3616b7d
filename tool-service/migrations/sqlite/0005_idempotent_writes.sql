-- Idempotent writes: customer messages wait in an outbox for the channel
-- delivery worker; the idempotency record of each effect is written in the
-- same transaction (idempotency_keys, 0001). Expired records are swept by
-- their expiry index; a reused key whose record expired starts afresh.
CREATE TABLE outbound_messages (
    message_id      TEXT PRIMARY KEY REFERENCES conversation_messages (id),
    conversation_id TEXT NOT NULL REFERENCES conversations (id),
    channel         TEXT NOT NULL CHECK (channel IN ('sms', 'whatsapp', 'web_chat', 'email')),
    status          TEXT NOT NULL DEFAULT 'queued' CHECK (status IN ('queued', 'sent', 'failed')),
    created_at_ms   INTEGER NOT NULL
) STRICT;
CREATE INDEX outbound_messages_status_created ON outbound_messages (status, created_at_ms);
