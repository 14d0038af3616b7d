//! `AnalyticsStore`: the pre-aggregated daily metrics of each location and
//! their bucketing by day, week or month, for both backends from one body of
//! SQL plus each backend's bucket expressions (`Backend::bucket_start`).
//!
//! How the rollup stays current:
//! - `refresh_daily_metrics` rebuilds it from the orders: it extends each
//!   location's calendar (`location_days`, computed here from the location's
//!   timezone) to cover its orders, then recomputes every
//!   `daily_location_metrics` row with one `INSERT … SELECT … GROUP BY`, in one
//!   transaction. `Store::load` runs it after writing a data set, so demo and
//!   scale data arrive with their rollup.
//! - An order status change to `completed` adds one to its day's
//!   `completed_count` in the same transaction (see `order_update_store`);
//!   no other status change moves a metric (cancellation is not a tool).
//!
//! Queries only ever read the rollup: at most 366 rows per location and
//! query, summed per bucket by the database.

use std::future::Future;
use std::time::Duration;

use sqlx::QueryBuilder;

use super::backend::{Backend, Binds, Decodes, Statement};
use super::local_days::{LocalDay, local_days};
use super::sql_store::SqlStore;
use crate::domain::{Bucket, DomainError, MetricSums};

/// Summed counters of one bucket.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct MetricsBucketRecord {
    /// First local day of the bucket, ISO 8601 date.
    pub bucket_start: String,
    pub orders_count: i64,
    pub cancelled_count: i64,
    pub completed_count: i64,
    pub revenue_minor: i64,
    pub items_sold: i64,
    pub new_customers: i64,
    pub delivery_count: i64,
    pub pickup_count: i64,
}

impl MetricsBucketRecord {
    pub fn sums(&self) -> MetricSums {
        MetricSums {
            orders_count: self.orders_count,
            cancelled_count: self.cancelled_count,
            completed_count: self.completed_count,
            revenue_minor: self.revenue_minor,
            items_sold: self.items_sold,
            new_customers: self.new_customers,
            delivery_count: self.delivery_count,
            pickup_count: self.pickup_count,
        }
    }
}

pub trait AnalyticsStore: Send + Sync {
    /// Rebuilds the daily rollup of every location from its orders.
    fn refresh_daily_metrics(&self) -> impl Future<Output = Result<(), DomainError>> + Send;

    /// Sums of the rollup of one location per bucket, for local dates
    /// `from..=to` (ISO 8601), oldest bucket first; buckets without any
    /// aggregated day are absent. `timeout` (the caller's remaining deadline)
    /// bounds the query in the database too, so an abandoned query stops there.
    fn metrics_buckets(
        &self,
        location_id: &str,
        from: &str,
        to: &str,
        bucket: Bucket,
        timeout: Option<Duration>,
    ) -> impl Future<Output = Result<Vec<MetricsBucketRecord>, DomainError>> + Send;
}

fn buckets_query<B: Backend>(bucket: Bucket) -> String {
    let start = B::bucket_start(bucket);
    format!(
        "SELECT {start} AS bucket_start, \
         CAST(SUM(orders_count) AS BIGINT) AS orders_count, \
         CAST(SUM(cancelled_count) AS BIGINT) AS cancelled_count, \
         CAST(SUM(completed_count) AS BIGINT) AS completed_count, \
         CAST(SUM(revenue_minor) AS BIGINT) AS revenue_minor, \
         CAST(SUM(items_sold) AS BIGINT) AS items_sold, \
         CAST(SUM(new_customers) AS BIGINT) AS new_customers, \
         CAST(SUM(delivery_count) AS BIGINT) AS delivery_count, \
         CAST(SUM(pickup_count) AS BIGINT) AS pickup_count \
         FROM daily_location_metrics \
         WHERE location_id = $1 AND local_date >= $2 AND local_date <= $3 \
         GROUP BY 1 ORDER BY 1"
    )
}

/// First and last order time of each location, with its timezone.
const ORDER_SPANS: &str = "SELECT o.location_id, l.timezone, \
     MIN(o.created_at_ms) AS first_ms, MAX(o.created_at_ms) AS last_ms \
     FROM orders o JOIN locations l ON l.id = o.location_id \
     GROUP BY o.location_id, l.timezone";

const CLEAR_ROLLUP: &str = "DELETE FROM daily_location_metrics";

/// Rebuilds every rollup row in one statement: each order joined to its local
/// day (an index range scan of the orders per calendar day) with its item
/// count, plus each customer's first order (not cancelled) per location,
/// aggregated once and joined to its day; both summed per location and day.
const REBUILD_ROLLUP: &str = "INSERT INTO daily_location_metrics \
     (location_id, local_date, orders_count, cancelled_count, completed_count, revenue_minor, \
     items_sold, new_customers, delivery_count, pickup_count, dine_in_count) \
     SELECT x.location_id, x.local_date, SUM(x.placed), SUM(x.cancelled), SUM(x.completed), \
     SUM(x.revenue), SUM(x.items), SUM(x.new_customer), SUM(x.delivery), SUM(x.pickup), \
     SUM(x.dine_in) FROM (\
     SELECT d.location_id, d.local_date, \
     CASE WHEN o.status <> 'cancelled' THEN 1 ELSE 0 END AS placed, \
     CASE WHEN o.status = 'cancelled' THEN 1 ELSE 0 END AS cancelled, \
     CASE WHEN o.status = 'completed' THEN 1 ELSE 0 END AS completed, \
     CASE WHEN o.status <> 'cancelled' THEN o.total_minor ELSE 0 END AS revenue, \
     CASE WHEN o.status <> 'cancelled' THEN \
     (SELECT COALESCE(SUM(ol.quantity), 0) FROM order_lines ol WHERE ol.order_id = o.id) \
     ELSE 0 END AS items, \
     0 AS new_customer, \
     CASE WHEN o.status <> 'cancelled' AND o.fulfillment = 'delivery' THEN 1 ELSE 0 END \
     AS delivery, \
     CASE WHEN o.status <> 'cancelled' AND o.fulfillment = 'pickup' THEN 1 ELSE 0 END \
     AS pickup, \
     CASE WHEN o.status <> 'cancelled' AND o.fulfillment = 'dine_in' THEN 1 ELSE 0 END \
     AS dine_in \
     FROM location_days d CROSS JOIN orders o \
     WHERE o.location_id = d.location_id AND o.created_at_ms >= d.start_ms \
     AND o.created_at_ms < d.end_ms \
     UNION ALL \
     SELECT d.location_id, d.local_date, 0, 0, 0, 0, 0, 1, 0, 0, 0 \
     FROM (SELECT location_id, customer_id, MIN(created_at_ms) AS first_ms FROM orders \
     WHERE status <> 'cancelled' GROUP BY location_id, customer_id) f \
     CROSS JOIN location_days d \
     WHERE d.location_id = f.location_id AND f.first_ms >= d.start_ms AND f.first_ms < d.end_ms\
     ) x GROUP BY x.location_id, x.local_date";

/// Calendar rows per insert statement (four parameters each).
const DAYS_PER_STATEMENT: usize = 2_000;

/// The calendar rows covering every location's orders.
fn calendar(spans: &[(String, String, i64, i64)]) -> Vec<LocalDay> {
    spans
        .iter()
        .flat_map(|(location_id, timezone, first, last)| {
            local_days(location_id, timezone, *first, *last)
        })
        .collect()
}

/// `INSERT` of calendar rows, skipping those already there.
fn calendar_statement<B: Backend>(days: &[LocalDay]) -> QueryBuilder<B> {
    let mut qb =
        QueryBuilder::new("INSERT INTO location_days (location_id, local_date, start_ms, end_ms) ");
    qb.push("VALUES ");
    for (i, day) in days.iter().enumerate() {
        qb.push(if i == 0 { "(" } else { ", (" });
        B::bind_text(&mut qb, &day.location_id);
        qb.push(", ");
        B::bind_text(&mut qb, &day.local_date);
        qb.push(", ");
        B::bind_int(&mut qb, day.start_ms);
        qb.push(", ");
        B::bind_int(&mut qb, day.end_ms);
        qb.push(")");
    }
    qb.push(" ON CONFLICT DO NOTHING");
    qb
}

impl<B: Backend> AnalyticsStore for SqlStore<B> {
    async fn refresh_daily_metrics(&self) -> Result<(), DomainError> {
        let spans: Vec<(String, String, i64, i64)> =
            self.fetch_all(sqlx::query(ORDER_SPANS)).await?;
        let days = calendar(&spans);
        for chunk in days.chunks(DAYS_PER_STATEMENT) {
            let mut qb = calendar_statement::<B>(chunk);
            self.execute(qb.build().persistent(false)).await?;
        }
        let rebuild = async {
            let mut tx = self.pool().begin().await?;
            B::execute(&mut tx, sqlx::query(CLEAR_ROLLUP)).await?;
            B::execute(&mut tx, sqlx::query(REBUILD_ROLLUP)).await?;
            tx.commit().await
        };
        self.guard(rebuild).await
    }

    async fn metrics_buckets(
        &self,
        location_id: &str,
        from: &str,
        to: &str,
        bucket: Bucket,
        timeout: Option<Duration>,
    ) -> Result<Vec<MetricsBucketRecord>, DomainError> {
        let sql = buckets_query::<B>(bucket);
        let (location_id, from, to) = (location_id.to_owned(), from.to_owned(), to.to_owned());
        self.bounded_read(timeout, move |conn| {
            Box::pin(async move {
                let query: Statement<'_, B> = sqlx::query(sqlx::AssertSqlSafe(sql));
                let query = query.text(&location_id).text(&from).text(&to);
                let rows = B::fetch_rows(conn, query).await?;
                rows.iter()
                    .map(<B as Decodes<MetricsBucketRecord>>::decode)
                    .collect()
            })
        })
        .await
    }
}
