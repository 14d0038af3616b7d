-- Search as people type: a folded copy (lower case, accents and ligatures
-- folded, whitespace collapsed) of each searched text, written by the
-- service with the same folding on both backends; rows written before this
-- migration are folded by the service right after it runs.
ALTER TABLE catalog_items ADD COLUMN name_folded TEXT;
ALTER TABLE customers ADD COLUMN name_folded TEXT;
ALTER TABLE conversation_messages ADD COLUMN body_folded TEXT;

-- Substring searches over the large tables (transcripts, customers) use
-- trigram indexes when pg_trgm can be installed (a trusted extension since
-- PostgreSQL 13: the database owner may create it). Without it the searches
-- stay correct, bounded by their location or organization filter.
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS pg_trgm;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'pg_trgm unavailable (%): search runs without trigram indexes', SQLERRM;
END
$$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'pg_trgm') THEN
        CREATE INDEX conversation_messages_body_folded_trgm
            ON conversation_messages USING gin (body_folded gin_trgm_ops);
        CREATE INDEX customers_name_folded_trgm
            ON customers USING gin (name_folded gin_trgm_ops);
    END IF;
END
$$;
