-- An order's history of status changes: one row per step, written in the
-- transaction of the change (a change of several steps, received → ready,
-- writes each step it passed through), in the order the steps were taken.
CREATE TABLE order_status_changes (
    id            INTEGER PRIMARY KEY,
    order_id      TEXT NOT NULL REFERENCES orders (id),
    from_status   TEXT NOT NULL,
    to_status     TEXT NOT NULL,
    changed_at_ms INTEGER NOT NULL
);
CREATE INDEX order_status_changes_order_id ON order_status_changes (order_id, id);
