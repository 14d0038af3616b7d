-- Pre-aggregated analytics (PostgreSQL).
--
-- `location_days` is each location's calendar: the UTC bounds of every local
-- day (midnight to midnight in the location's timezone), so that orders can
-- be assigned to their local day by an index range scan in SQL.
-- `daily_location_metrics` holds one row of sums per location and local day,
-- rebuilt from the orders by the refresh step after every load and kept
-- current by order status changes; analytics buckets (day, week, month) sum
-- these rows with GROUP BY.

CREATE TABLE location_days (
    location_id TEXT COLLATE "C" NOT NULL REFERENCES locations (id),
    -- ISO 8601 date in the location's timezone, e.g. 2026-03-01.
    local_date  TEXT COLLATE "C" NOT NULL,
    -- Inclusive start and exclusive end, Unix milliseconds.
    start_ms    BIGINT NOT NULL,
    end_ms      BIGINT NOT NULL,
    PRIMARY KEY (location_id, local_date)
);

CREATE TABLE daily_location_metrics (
    location_id     TEXT COLLATE "C" NOT NULL REFERENCES locations (id),
    local_date      TEXT COLLATE "C" NOT NULL,
    -- Orders placed that day and not cancelled.
    orders_count    BIGINT NOT NULL,
    cancelled_count BIGINT NOT NULL,
    completed_count BIGINT NOT NULL,
    -- Sum of the totals of orders not cancelled, minor units of the location's currency.
    revenue_minor   BIGINT NOT NULL,
    -- Units on the lines of orders not cancelled.
    items_sold      BIGINT NOT NULL,
    -- Customers whose first order (not cancelled) at the location was that day.
    new_customers   BIGINT NOT NULL,
    delivery_count  BIGINT NOT NULL,
    pickup_count    BIGINT NOT NULL,
    dine_in_count   BIGINT NOT NULL,
    PRIMARY KEY (location_id, local_date)
);
