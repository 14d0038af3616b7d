-- Search as people type: a folded copy (lower case, accents and ligatures
-- folded, whitespace collapsed) of each searched text, written by the
-- service with the same folding on both backends; rows written before this
-- migration are folded by the service right after it runs.
ALTER TABLE catalog_items ADD COLUMN name_folded TEXT;
ALTER TABLE customers ADD COLUMN name_folded TEXT;
ALTER TABLE conversation_messages ADD COLUMN body_folded TEXT;
