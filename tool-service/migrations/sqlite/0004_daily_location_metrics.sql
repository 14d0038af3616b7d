-- Pre-aggregated analytics (SQLite).
--
-- `location_days` is each location's calendar: the UTC bounds of every local
-- day (midnight to midnight in the location's timezone), so that orders can
-- be assigned to their local day by an index range scan in SQL.
-- `daily_location_metrics` holds one row of sums per location and local day,
-- rebuilt from the orders by the refresh step after every load and kept
-- current by order status changes; analytics buckets (day, week, month) sum
-- these rows with GROUP BY.

CREATE TABLE location_days (
    location_id TEXT NOT NULL REFERENCES locations (id),
    -- ISO 8601 date in the location's timezone, e.g. 2026-03-01.
    local_date  TEXT NOT NULL,
    -- Inclusive start and exclusive end, Unix milliseconds.
    start_ms    INTEGER NOT NULL,
    end_ms      INTEGER NOT NULL,
    PRIMARY KEY (location_id, local_date)
) STRICT, WITHOUT ROWID;

CREATE TABLE daily_location_metrics (
    location_id     TEXT NOT NULL REFERENCES locations (id),
    local_date      TEXT NOT NULL,
    -- Orders placed that day and not cancelled.
    orders_count    INTEGER NOT NULL,
    cancelled_count INTEGER NOT NULL,
    completed_count INTEGER NOT NULL,
    -- Sum of the totals of orders not cancelled, minor units of the location's currency.
    revenue_minor   INTEGER NOT NULL,
    -- Units on the lines of orders not cancelled.
    items_sold      INTEGER NOT NULL,
    -- Customers whose first order (not cancelled) at the location was that day.
    new_customers   INTEGER NOT NULL,
    delivery_count  INTEGER NOT NULL,
    pickup_count    INTEGER NOT NULL,
    dine_in_count   INTEGER NOT NULL,
    PRIMARY KEY (location_id, local_date)
) STRICT, WITHOUT ROWID;
