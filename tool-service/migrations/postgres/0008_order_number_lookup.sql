-- Orders found by the number staff say, with or without the location's
-- prefix ("PAR-261130-010" or "261130-010"): each order keeps its number
-- without the prefix (everything after the first "-", upper case), written by
-- the service on insert; the rows already there are keyed here.
ALTER TABLE orders ADD COLUMN number_key TEXT;
UPDATE orders SET number_key = upper(substr(number, strpos(number, '-') + 1));
CREATE INDEX orders_number_key_created_id ON orders (number_key, created_at_ms DESC, id DESC);
