-- Chataigne tool-service schema (PostgreSQL).
-- Times are Unix milliseconds (BIGINT); money is in minor units (BIGINT).
-- Identifiers and sorted names use the "C" collation so that ordering and
-- keyset comparisons are bytewise, exactly as in the SQLite schema.

CREATE TABLE organizations (
    id            TEXT COLLATE "C" PRIMARY KEY,
    name          TEXT COLLATE "C" NOT NULL,
    status        TEXT NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'suspended')),
    created_at_ms BIGINT NOT NULL,
    updated_at_ms BIGINT NOT NULL
);
CREATE INDEX organizations_name_id ON organizations (name, id);

CREATE TABLE locations (
    id              TEXT COLLATE "C" PRIMARY KEY,
    organization_id TEXT COLLATE "C" NOT NULL REFERENCES organizations (id),
    name            TEXT COLLATE "C" NOT NULL,
    line1           TEXT NOT NULL,
    line2           TEXT,
    city            TEXT NOT NULL,
    postal_code     TEXT NOT NULL,
    region          TEXT,
    country         TEXT NOT NULL,
    phone           TEXT,
    timezone        TEXT NOT NULL,
    currency        TEXT NOT NULL,
    status          TEXT NOT NULL DEFAULT 'accepting' CHECK (status IN ('accepting', 'paused')),
    paused_until_ms BIGINT,
    pause_reason    TEXT,
    created_at_ms   BIGINT NOT NULL,
    updated_at_ms   BIGINT NOT NULL
);
CREATE INDEX locations_organization_name_id ON locations (organization_id, name, id);

-- One JSON document per settings section (store, order, opening_hours, ...).
CREATE TABLE location_settings (
    location_id   TEXT COLLATE "C" NOT NULL REFERENCES locations (id),
    section       TEXT COLLATE "C" NOT NULL,
    body          TEXT NOT NULL,
    updated_at_ms BIGINT NOT NULL,
    PRIMARY KEY (location_id, section)
);

CREATE TABLE customers (
    id              TEXT COLLATE "C" PRIMARY KEY,
    organization_id TEXT COLLATE "C" NOT NULL REFERENCES organizations (id),
    -- NULL: a customer of the whole organization.
    location_id     TEXT COLLATE "C" REFERENCES locations (id),
    display_name    TEXT COLLATE "C" NOT NULL,
    email           TEXT,
    phone           TEXT,
    created_at_ms   BIGINT NOT NULL,
    updated_at_ms   BIGINT NOT NULL
);
CREATE INDEX customers_organization_name_id ON customers (organization_id, display_name, id);
CREATE INDEX customers_location_name_id ON customers (location_id, display_name, id);

CREATE TABLE catalog_categories (
    id              TEXT COLLATE "C" PRIMARY KEY,
    organization_id TEXT COLLATE "C" NOT NULL REFERENCES organizations (id),
    location_id     TEXT COLLATE "C" NOT NULL REFERENCES locations (id),
    name            TEXT COLLATE "C" NOT NULL,
    position        BIGINT NOT NULL,
    created_at_ms   BIGINT NOT NULL
);
CREATE INDEX catalog_categories_location_position ON catalog_categories (location_id, position, id);

CREATE TABLE catalog_items (
    id                    TEXT COLLATE "C" PRIMARY KEY,
    organization_id       TEXT COLLATE "C" NOT NULL REFERENCES organizations (id),
    location_id           TEXT COLLATE "C" NOT NULL REFERENCES locations (id),
    category_id           TEXT COLLATE "C" NOT NULL REFERENCES catalog_categories (id),
    name                  TEXT COLLATE "C" NOT NULL,
    description           TEXT NOT NULL DEFAULT '',
    price_minor           BIGINT NOT NULL,
    currency              TEXT NOT NULL,
    availability          TEXT NOT NULL DEFAULT 'available' CHECK (availability IN ('available', 'sold_out')),
    available_again_at_ms BIGINT,
    created_at_ms         BIGINT NOT NULL,
    updated_at_ms         BIGINT NOT NULL
);
CREATE INDEX catalog_items_location_name_id ON catalog_items (location_id, name, id);
CREATE INDEX catalog_items_category_name_id ON catalog_items (category_id, name, id);

CREATE TABLE orders (
    id              TEXT COLLATE "C" PRIMARY KEY,
    number          TEXT NOT NULL,
    -- Denormalized from the location: owner resolution and tenant filters are one lookup.
    organization_id TEXT COLLATE "C" NOT NULL REFERENCES organizations (id),
    location_id     TEXT COLLATE "C" NOT NULL REFERENCES locations (id),
    customer_id     TEXT COLLATE "C" NOT NULL REFERENCES customers (id),
    status          TEXT NOT NULL CHECK (status IN ('received', 'accepted', 'preparing', 'ready',
                                                    'out_for_delivery', 'completed', 'cancelled')),
    fulfillment     TEXT NOT NULL CHECK (fulfillment IN ('pickup', 'delivery', 'dine_in')),
    currency        TEXT NOT NULL,
    total_minor     BIGINT NOT NULL,
    created_at_ms   BIGINT NOT NULL,
    updated_at_ms   BIGINT NOT NULL
);
CREATE INDEX orders_location_created_id ON orders (location_id, created_at_ms DESC, id DESC);
CREATE INDEX orders_organization_created_id ON orders (organization_id, created_at_ms DESC, id DESC);
CREATE INDEX orders_created_id ON orders (created_at_ms DESC, id DESC);
CREATE INDEX orders_customer_created ON orders (customer_id, created_at_ms DESC);

CREATE TABLE order_lines (
    order_id         TEXT COLLATE "C" NOT NULL REFERENCES orders (id),
    line_no          BIGINT NOT NULL,
    -- No foreign key: the line keeps the item's name and price as ordered.
    item_id          TEXT COLLATE "C" NOT NULL,
    item_name        TEXT NOT NULL,
    quantity         BIGINT NOT NULL CHECK (quantity > 0),
    unit_price_minor BIGINT NOT NULL,
    PRIMARY KEY (order_id, line_no)
);

CREATE TABLE conversations (
    id                 TEXT COLLATE "C" PRIMARY KEY,
    organization_id    TEXT COLLATE "C" NOT NULL REFERENCES organizations (id),
    location_id        TEXT COLLATE "C" NOT NULL REFERENCES locations (id),
    customer_id        TEXT COLLATE "C" NOT NULL REFERENCES customers (id),
    channel            TEXT NOT NULL CHECK (channel IN ('sms', 'whatsapp', 'web_chat', 'email')),
    status             TEXT NOT NULL CHECK (status IN ('open', 'waiting', 'closed')),
    created_at_ms      BIGINT NOT NULL,
    last_message_at_ms BIGINT NOT NULL
);
CREATE INDEX conversations_location_last_id ON conversations (location_id, last_message_at_ms DESC, id DESC);
CREATE INDEX conversations_organization_last_id ON conversations (organization_id, last_message_at_ms DESC, id DESC);

CREATE TABLE conversation_messages (
    id              TEXT COLLATE "C" PRIMARY KEY,
    conversation_id TEXT COLLATE "C" NOT NULL REFERENCES conversations (id),
    sender          TEXT NOT NULL CHECK (sender IN ('customer', 'staff', 'assistant', 'instruction')),
    body            TEXT NOT NULL,
    created_at_ms   BIGINT NOT NULL
);
CREATE INDEX conversation_messages_conversation_created_id
    ON conversation_messages (conversation_id, created_at_ms DESC, id DESC);

CREATE TABLE discounts (
    id              TEXT COLLATE "C" PRIMARY KEY,
    organization_id TEXT COLLATE "C" NOT NULL REFERENCES organizations (id),
    -- NULL: valid in every location of the organization.
    location_id     TEXT COLLATE "C" REFERENCES locations (id),
    name            TEXT COLLATE "C" NOT NULL,
    code            TEXT,
    kind            TEXT NOT NULL CHECK (kind IN ('percent', 'amount')),
    -- Basis points for percent, minor units for amount.
    value           BIGINT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('active', 'scheduled', 'expired', 'disabled')),
    starts_at_ms    BIGINT,
    ends_at_ms      BIGINT,
    created_at_ms   BIGINT NOT NULL
);
CREATE INDEX discounts_organization_name_id ON discounts (organization_id, name, id);

CREATE TABLE integrations (
    id              TEXT COLLATE "C" PRIMARY KEY,
    organization_id TEXT COLLATE "C" NOT NULL REFERENCES organizations (id),
    location_id     TEXT COLLATE "C" REFERENCES locations (id),
    provider        TEXT NOT NULL,
    name            TEXT COLLATE "C" NOT NULL,
    health          TEXT NOT NULL CHECK (health IN ('healthy', 'degraded', 'failing', 'disconnected')),
    last_sync_at_ms BIGINT,
    created_at_ms   BIGINT NOT NULL
);
CREATE INDEX integrations_organization_name_id ON integrations (organization_id, name, id);

-- Idempotent effects: the key's hash is recorded in the same transaction as the effect.
CREATE TABLE idempotency_keys (
    key_hash      TEXT COLLATE "C" PRIMARY KEY,
    tool          TEXT NOT NULL,
    request_hash  TEXT NOT NULL,
    result        TEXT,
    created_at_ms BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at_ms);
