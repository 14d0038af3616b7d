//! `CustomerStore`: customers of an organization with their order counts,
//! for both backends from one body of SQL.

use std::future::Future;

use sqlx::QueryBuilder;

use super::backend::{Backend, Binds, Dialect};
use super::sql::push_page_limit;
use super::sql_store::SqlStore;
use super::{OrderRecord, Owner};
use crate::domain::{CustomerFilter, DomainError, PageRequest};

/// A customer as stored, with its order count and last order (at the
/// filtered location when the listing is narrowed to one).
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CustomerRecord {
    pub id: String,
    pub organization_id: String,
    pub organization_name: String,
    pub location_id: Option<String>,
    pub display_name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub created_at_ms: i64,
    pub order_count: i64,
    pub last_order_at_ms: Option<i64>,
    /// Timezone of the location of the last order.
    pub last_order_timezone: Option<String>,
}

pub trait CustomerStore: Send + Sync {
    /// Customers matching `filter`, by (display_name, id).
    fn list_customers(
        &self,
        filter: &CustomerFilter,
        page: &PageRequest,
    ) -> impl Future<Output = Result<Vec<CustomerRecord>, DomainError>> + Send;

    fn get_customer(
        &self,
        customer_id: &str,
    ) -> impl Future<Output = Result<Option<CustomerRecord>, DomainError>> + Send;

    /// The real owner of a customer: its organization and, for a customer of
    /// one location, that location.
    fn customer_owner(
        &self,
        customer_id: &str,
    ) -> impl Future<Output = Result<Option<Owner>, DomainError>> + Send;

    /// The `limit` newest orders of a customer, without lines.
    fn customer_recent_orders(
        &self,
        customer_id: &str,
        limit: u32,
    ) -> impl Future<Output = Result<Vec<OrderRecord>, DomainError>> + Send;
}

const CUSTOMER_OWNER: &str = "SELECT organization_id, location_id FROM customers WHERE id = $1";

const RECENT_ORDERS: &str = "SELECT o.id, o.number, o.organization_id, o.location_id, \
     l.name AS location_name, l.timezone, o.currency, o.customer_id, \
     c.display_name AS customer_name, o.status, o.fulfillment, o.total_minor, \
     o.created_at_ms, o.updated_at_ms \
     FROM orders o JOIN locations l ON l.id = o.location_id \
     JOIN customers c ON c.id = o.customer_id \
     WHERE o.customer_id = $1 ORDER BY o.created_at_ms DESC, o.id DESC LIMIT ";

/// ` AND o.location_id = <location>` when narrowed to a location.
fn push_order_location<DB: Dialect>(qb: &mut QueryBuilder<DB>, location_id: Option<&str>) {
    if let Some(location_id) = location_id {
        qb.push(" AND o.location_id = ");
        DB::bind_text(qb, location_id);
    }
}

/// The customer columns with order statistics, restricted to the orders of
/// `location_id` when given.
fn customer_select<DB: Dialect>(location_id: Option<&str>) -> QueryBuilder<DB> {
    let mut qb = QueryBuilder::new(
        "SELECT c.id, c.organization_id, g.name AS organization_name, c.location_id, \
         c.display_name, c.email, c.phone, c.created_at_ms, \
         (SELECT COUNT(*) FROM orders o WHERE o.customer_id = c.id",
    );
    push_order_location(&mut qb, location_id);
    qb.push(
        ") AS order_count, \
         (SELECT MAX(o.created_at_ms) FROM orders o WHERE o.customer_id = c.id",
    );
    push_order_location(&mut qb, location_id);
    qb.push(
        ") AS last_order_at_ms, \
         (SELECT l.timezone FROM orders o JOIN locations l ON l.id = o.location_id \
         WHERE o.customer_id = c.id",
    );
    push_order_location(&mut qb, location_id);
    qb.push(
        " ORDER BY o.created_at_ms DESC, o.id DESC LIMIT 1) AS last_order_timezone \
         FROM customers c JOIN organizations g ON g.id = c.organization_id WHERE ",
    );
    qb
}

pub(crate) fn customers_query<DB: Dialect>(
    filter: &CustomerFilter,
    page: &PageRequest,
) -> QueryBuilder<DB> {
    let location = filter.location_id.as_deref();
    let mut qb = customer_select::<DB>(location);
    qb.push("c.organization_id = ");
    DB::bind_text(&mut qb, &filter.organization_id);
    if let Some(location_id) = location {
        qb.push(" AND (c.location_id = ");
        DB::bind_text(&mut qb, location_id);
        qb.push(
            " OR EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id \
             AND o.location_id = ",
        );
        DB::bind_text(&mut qb, location_id);
        qb.push("))");
    }
    if let Some(pattern) = &filter.name_pattern {
        qb.push(" AND c.name_folded LIKE ");
        DB::bind_text(&mut qb, pattern);
        qb.push(" ESCAPE '\\'");
    }
    if let Some(after) = &page.after {
        qb.push(" AND (c.display_name > ");
        DB::bind_text(&mut qb, &after.key);
        qb.push(" OR (c.display_name = ");
        DB::bind_text(&mut qb, &after.key);
        qb.push(" AND c.id > ");
        DB::bind_text(&mut qb, &after.id);
        qb.push("))");
    }
    qb.push(" ORDER BY c.display_name, c.id");
    push_page_limit(&mut qb, page);
    qb
}

pub(crate) fn customer_query<DB: Dialect>(customer_id: &str) -> QueryBuilder<DB> {
    let mut qb = customer_select::<DB>(None);
    qb.push("c.id = ");
    DB::bind_text(&mut qb, customer_id);
    qb
}

impl<B: Backend> CustomerStore for SqlStore<B> {
    async fn list_customers(
        &self,
        filter: &CustomerFilter,
        page: &PageRequest,
    ) -> Result<Vec<CustomerRecord>, DomainError> {
        let mut qb = customers_query::<B>(filter, page);
        self.fetch_all(qb.build()).await
    }

    async fn get_customer(&self, customer_id: &str) -> Result<Option<CustomerRecord>, DomainError> {
        let mut qb = customer_query::<B>(customer_id);
        self.fetch_optional(qb.build()).await
    }

    async fn customer_owner(&self, customer_id: &str) -> Result<Option<Owner>, DomainError> {
        let row: Option<(String, Option<String>)> = self
            .fetch_optional(sqlx::query(CUSTOMER_OWNER).text(customer_id))
            .await?;
        Ok(row.map(|(organization_id, location_id)| Owner {
            organization_id,
            location_id,
        }))
    }

    async fn customer_recent_orders(
        &self,
        customer_id: &str,
        limit: u32,
    ) -> Result<Vec<OrderRecord>, DomainError> {
        // The limit is written into the text, not bound (see
        // `sql::push_page_limit`); it is a number.
        let sql = format!("{RECENT_ORDERS}{limit}");
        self.fetch_all(sqlx::query(sqlx::AssertSqlSafe(sql)).text(customer_id))
            .await
    }
}
