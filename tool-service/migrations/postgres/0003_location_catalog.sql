-- Locations' discounts and integrations are read per location, and each
-- integration states what it connects (point of sale, delivery, payments, …).
ALTER TABLE integrations ADD COLUMN kind TEXT NOT NULL DEFAULT 'other'
    CHECK (kind IN ('pos', 'delivery', 'payments', 'accounting', 'marketing', 'reservations', 'other'));
CREATE INDEX discounts_location_name_id ON discounts (location_id, name, id);
CREATE INDEX integrations_location_name_id ON integrations (location_id, name, id);
