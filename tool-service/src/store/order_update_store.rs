//! `OrderUpdateStore`: the guarded order status write, for both backends from
//! one body of SQL. The precondition is part of
//! the `UPDATE` itself, so two concurrent writers from the same observed
//! status cannot both succeed; each step the change passes through is
//! recorded in the order's history, and a move to `completed` also counts the
//! order in its day of the analytics rollup, both in the same transaction.

use std::future::Future;

use super::backend::{Backend, Binds, RowsAffected};
use super::sql_store::SqlStore;
use super::{GuardedWrite, OrderRecord, OrderStatusChangeRecord, Store};
use crate::domain::{DomainError, OrderStatus};

pub trait OrderUpdateStore: Send + Sync {
    /// Sets the order's status to the last of `steps` in one statement, only
    /// while it is `expected`, and records each step (from `expected`
    /// through `steps`) in its history, in the same transaction; answers the
    /// order after the write, or as it currently is. `steps` is not empty.
    fn update_order_status(
        &self,
        order_id: &str,
        expected: OrderStatus,
        steps: &[OrderStatus],
        now_ms: i64,
    ) -> impl Future<Output = Result<GuardedWrite<OrderRecord>, DomainError>> + Send;

    /// The order's status changes, oldest first.
    fn order_status_history(
        &self,
        order_id: &str,
    ) -> impl Future<Output = Result<Vec<OrderStatusChangeRecord>, DomainError>> + Send;
}

const UPDATE_STATUS: &str =
    "UPDATE orders SET status = $1, updated_at_ms = $2 WHERE id = $3 AND status = $4";

const RECORD_STEP: &str = "INSERT INTO order_status_changes \
     (order_id, from_status, to_status, changed_at_ms) VALUES ($1, $2, $3, $4)";

const STATUS_HISTORY: &str = "SELECT from_status, to_status, changed_at_ms \
     FROM order_status_changes WHERE order_id = $1 ORDER BY id";

/// Counts a newly completed order in the rollup row of its local day (when
/// that day has been aggregated; the refresh step covers the others).
const COUNT_COMPLETED: &str = "UPDATE daily_location_metrics \
     SET completed_count = completed_count + 1 \
     WHERE location_id = (SELECT o.location_id FROM orders o WHERE o.id = $1) \
     AND local_date = (SELECT d.local_date FROM location_days d \
     JOIN orders o ON o.location_id = d.location_id \
     WHERE o.id = $2 AND o.created_at_ms >= d.start_ms AND o.created_at_ms < d.end_ms)";

impl<B: Backend> OrderUpdateStore for SqlStore<B> {
    async fn update_order_status(
        &self,
        order_id: &str,
        expected: OrderStatus,
        steps: &[OrderStatus],
        now_ms: i64,
    ) -> Result<GuardedWrite<OrderRecord>, DomainError> {
        let Some(&next) = steps.last() else {
            return Err(DomainError::Internal(
                "an order status change without steps".to_owned(),
            ));
        };
        let write = async {
            let mut tx = self.pool().begin().await?;
            let update = sqlx::query(UPDATE_STATUS)
                .text(next.as_str())
                .int(now_ms)
                .text(order_id)
                .text(expected.as_str());
            let written = B::execute(&mut tx, update).await?.rows_affected();
            if written == 1 {
                let froms = std::iter::once(expected).chain(steps.iter().copied());
                for (from, to) in froms.zip(steps.iter().copied()) {
                    let step = sqlx::query(RECORD_STEP)
                        .text(order_id)
                        .text(from.as_str())
                        .text(to.as_str())
                        .int(now_ms);
                    B::execute(&mut tx, step).await?;
                }
            }
            if written == 1 && next == OrderStatus::Completed {
                let count = sqlx::query(COUNT_COMPLETED).text(order_id).text(order_id);
                B::execute(&mut tx, count).await?;
            }
            tx.commit().await?;
            Ok::<_, sqlx::Error>(written)
        };
        let written = self.guard(write).await?;
        let current = Store::get_order(self, order_id).await?;
        Ok(GuardedWrite::settle(
            written,
            current.map(|(record, _)| record),
        ))
    }

    async fn order_status_history(
        &self,
        order_id: &str,
    ) -> Result<Vec<OrderStatusChangeRecord>, DomainError> {
        self.fetch_all(sqlx::query(STATUS_HISTORY).text(order_id))
            .await
    }
}
