-- Operator flags: switches an operator flips at run time, read live by every
-- replica (one primary-key read per call they guard). `writes` off refuses
-- every write tool, on the MCP bridge and on the typed RPCs alike, whatever
-- the caller's consent; reads keep working. A missing row means enabled.
CREATE TABLE operator_flags (
    name          TEXT COLLATE "C" PRIMARY KEY CHECK (name IN ('writes')),
    enabled       BOOLEAN NOT NULL,
    reason        TEXT,
    changed_at_ms BIGINT
);
INSERT INTO operator_flags (name, enabled) VALUES ('writes', TRUE);
