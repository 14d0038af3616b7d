-- Listings filtered by status (e.g. the orders still in progress) walk only
-- the matching rows of a location or organization, newest first.
CREATE INDEX orders_location_status_created_id ON orders (location_id, status, created_at_ms DESC, id DESC);
CREATE INDEX orders_organization_status_created_id ON orders (organization_id, status, created_at_ms DESC, id DESC);
