//! The SQL both backends share: static queries, builders for the dynamic ones
//! (IN-lists, optional filters, keyset positions), and `Store` for
//! [`SqlStore`] on any backend from these same method bodies.
//!
//! Both backends accept `$n` placeholders in static queries; dynamic queries
//! bind through `QueryBuilder`, which writes each backend's own placeholders.
//! Sorting is bytewise in both (SQLite BINARY, PostgreSQL "C" columns), so the
//! same query returns the same rows in the same order on either backend.

use sqlx::QueryBuilder;

use super::backend::{Backend, Binds, Dialect};
use super::owners::Owned;
use super::sql_store::SqlStore;
use super::{
    LocationRecord, OrderLineRecord, OrderRecord, OrganizationRecord, Owner, Store, VenueStore,
    load, seed,
};
use crate::domain::{DomainError, OrderFilter, OrderStatus, PageRequest, TenantScope};

macro_rules! organization_select {
    () => {
        "SELECT o.id, o.name, \
         (SELECT COUNT(*) FROM locations lc WHERE lc.organization_id = o.id) AS location_count, \
         o.created_at_ms \
         FROM organizations o"
    };
}

macro_rules! location_select {
    () => {
        "SELECT l.id, l.organization_id, o.name AS organization_name, l.name, l.timezone, \
         l.currency, l.line1, l.city, l.postal_code, l.country, l.created_at_ms \
         FROM locations l JOIN organizations o ON o.id = l.organization_id"
    };
}

macro_rules! order_columns {
    () => {
        "SELECT o.id, o.number, o.organization_id, o.location_id, l.name AS location_name, \
         l.timezone, o.currency, o.customer_id, c.display_name AS customer_name, o.status, \
         o.fulfillment, o.total_minor, o.created_at_ms, o.updated_at_ms"
    };
}

macro_rules! order_joins {
    () => {
        " JOIN locations l ON l.id = o.location_id JOIN customers c ON c.id = o.customer_id"
    };
}

pub(crate) const PING: &str = "SELECT 1";

pub(crate) const GET_ORGANIZATION: &str = concat!(organization_select!(), " WHERE o.id = $1");

pub(crate) const GET_LOCATION: &str = concat!(location_select!(), " WHERE l.id = $1");

pub(crate) const GET_ORDER: &str = concat!(
    order_columns!(),
    " FROM orders o",
    order_joins!(),
    " WHERE o.id = $1"
);

pub(crate) const ORDER_LINES: &str = "SELECT order_id, line_no, item_id, item_name, quantity, \
     unit_price_minor FROM order_lines WHERE order_id = $1 ORDER BY line_no";

pub(crate) const ORDER_OWNER: &str =
    "SELECT organization_id, location_id FROM orders WHERE id = $1";

pub(crate) const LOCATION_OWNER: &str = "SELECT organization_id, id FROM locations WHERE id = $1";

/// Above this many location and organization keys, an order listing filters
/// with IN-lists instead of one index-ordered branch per key.
const MAX_BRANCHES: usize = 32;

/// `(v1, v2, ...)`; `values` must not be empty.
fn push_list<DB: Dialect>(qb: &mut QueryBuilder<DB>, values: &[String]) {
    qb.push("(");
    for (i, value) in values.iter().enumerate() {
        if i > 0 {
            qb.push(", ");
        }
        DB::bind_text(qb, value);
    }
    qb.push(")");
}

/// ` LIMIT <page.limit + 1>`, written into the SQL text rather than bound.
///
/// A bound `LIMIT $n` makes PostgreSQL plan the statement again at every
/// execution (its generic plan cannot estimate an unknown limit, so it keeps
/// choosing custom plans) and SQLite re-prepare it; a literal lets both reuse
/// one prepared plan per page size. Page sizes come from a small fixed range
/// (1..=`MAX_LIMIT`), so each list query has at most that many statements.
/// `list_queries_prepare_their_page_size_as_a_literal_on_postgres` (store suite)
/// holds this in place.
pub(crate) fn push_page_limit<DB: Dialect>(qb: &mut QueryBuilder<DB>, page: &PageRequest) {
    push_limit(qb, u64::from(page.limit) + 1);
}

/// ` LIMIT <rows>` as a literal (see [`push_page_limit`]).
pub(crate) fn push_limit<DB: Dialect>(qb: &mut QueryBuilder<DB>, rows: u64) {
    qb.push(format_args!(" LIMIT {rows}"));
}

/// Organizations visible in `scope`, by (name, id); `None` when the scope is empty.
pub(crate) fn organizations_query<DB: Dialect>(
    scope: &TenantScope,
    page: &PageRequest,
) -> Option<QueryBuilder<DB>> {
    if scope.is_empty() {
        return None;
    }
    let mut qb = QueryBuilder::new(concat!(organization_select!(), " WHERE 1 = 1"));
    if !scope.all_tenants {
        qb.push(" AND (");
        if !scope.organization_ids.is_empty() {
            qb.push("o.id IN ");
            push_list(&mut qb, &scope.organization_ids);
        }
        if !scope.location_ids.is_empty() {
            if !scope.organization_ids.is_empty() {
                qb.push(" OR ");
            }
            qb.push("o.id IN (SELECT ls.organization_id FROM locations ls WHERE ls.id IN ");
            push_list(&mut qb, &scope.location_ids);
            qb.push(")");
        }
        qb.push(")");
    }
    if let Some(after) = &page.after {
        qb.push(" AND (o.name, o.id) > (");
        DB::bind_text(&mut qb, &after.key);
        qb.push(", ");
        DB::bind_text(&mut qb, &after.id);
        qb.push(")");
    }
    qb.push(" ORDER BY o.name, o.id");
    push_page_limit(&mut qb, page);
    Some(qb)
}

/// Locations of one organization, by (name, id); `None` when `only` is empty.
pub(crate) fn locations_query<DB: Dialect>(
    organization_id: &str,
    only: Option<&[String]>,
    page: &PageRequest,
) -> Option<QueryBuilder<DB>> {
    let mut qb = QueryBuilder::new(concat!(location_select!(), " WHERE l.organization_id = "));
    DB::bind_text(&mut qb, organization_id);
    if let Some(only) = only {
        if only.is_empty() {
            return None;
        }
        qb.push(" AND l.id IN ");
        push_list(&mut qb, only);
    }
    if let Some(after) = &page.after {
        qb.push(" AND (l.name, l.id) > (");
        DB::bind_text(&mut qb, &after.key);
        qb.push(", ");
        DB::bind_text(&mut qb, &after.id);
        qb.push(")");
    }
    qb.push(" ORDER BY l.name, l.id");
    push_page_limit(&mut qb, page);
    Some(qb)
}

/// Which tenants' orders one branch of a listing reads.
#[derive(Clone, Copy)]
enum Key<'a> {
    /// Every order.
    All,
    Location(&'a str),
    Organization(&'a str),
    /// Orders of these locations or of these organizations (either may be empty).
    Lists(&'a [String], &'a [String]),
}

/// One branch: a tenant key and, when the branch is per status, that status.
struct Branch<'a> {
    key: Key<'a>,
    status: Option<OrderStatus>,
}

/// Orders matching `filter`, newest or oldest first as it says; `None` when
/// the filter matches nothing.
///
/// With a few locations or organizations, each gets its own branch that walks
/// the (key, created_at_ms DESC, id DESC) index (backwards for oldest first)
/// and stops after one page (with a status filter, one branch per key and
/// status, on the (key, status, …) index); the branches are merged with
/// UNION (which also removes overlaps) and cut to one page, then joined to
/// their location and customer. Every branch reads at most one page,
/// whatever the planner's statistics.
pub(crate) fn orders_query<DB: Dialect>(
    filter: &OrderFilter,
    page: &PageRequest,
) -> Result<Option<QueryBuilder<DB>>, DomainError> {
    let after = match &page.after {
        Some(after) => Some((
            after
                .key
                .parse::<i64>()
                .map_err(|_| DomainError::CursorInvalid)?,
            after.id.as_str(),
        )),
        None => None,
    };
    let keys = match (&filter.location_ids, &filter.organization_ids) {
        (None, None) => vec![Key::All],
        (locations, organizations) => {
            let locations = locations.as_deref().unwrap_or_default();
            let organizations = organizations.as_deref().unwrap_or_default();
            let count = locations.len() + organizations.len();
            if count == 0 {
                return Ok(None);
            } else if count > MAX_BRANCHES || filter.number.is_some() {
                // By number, one branch walks the (number_key, …) index: the
                // few orders of that number, whichever their tenant.
                vec![Key::Lists(locations, organizations)]
            } else {
                locations
                    .iter()
                    .map(|id| Key::Location(id))
                    .chain(organizations.iter().map(|id| Key::Organization(id)))
                    .collect()
            }
        }
    };
    let per_status = filter.number.is_none()
        && !filter.statuses.is_empty()
        && keys.len() * filter.statuses.len() <= MAX_BRANCHES
        && keys
            .iter()
            .all(|key| matches!(key, Key::Location(_) | Key::Organization(_)));
    let branches: Vec<Branch<'_>> = if per_status {
        keys.iter()
            .flat_map(|&key| {
                filter.statuses.iter().map(move |&status| Branch {
                    key,
                    status: Some(status),
                })
            })
            .collect()
    } else {
        keys.into_iter()
            .map(|key| Branch { key, status: None })
            .collect()
    };
    let limit = u64::from(page.limit) + 1;
    let mut qb = QueryBuilder::new(concat!(order_columns!(), " FROM ("));
    let merged = branches.len() > 1;
    for (i, branch) in branches.iter().enumerate() {
        if merged {
            qb.push(if i == 0 { "" } else { " UNION " });
            qb.push("SELECT id, created_at_ms FROM (");
        }
        push_branch(&mut qb, branch, filter, after, limit);
        if merged {
            qb.push(format_args!(") AS b{i}"));
        }
    }
    let direction = if filter.sort.oldest_first() {
        "ASC"
    } else {
        "DESC"
    };
    if merged {
        qb.push(format_args!(
            " ORDER BY created_at_ms {direction}, id {direction}"
        ));
        push_limit(&mut qb, limit);
    }
    qb.push(concat!(
        ") AS p JOIN orders o ON o.id = p.id",
        order_joins!()
    ));
    qb.push(format_args!(
        " ORDER BY o.created_at_ms {direction}, o.id {direction}"
    ));
    Ok(Some(qb))
}

fn push_branch<DB: Dialect>(
    qb: &mut QueryBuilder<DB>,
    branch: &Branch<'_>,
    filter: &OrderFilter,
    after: Option<(i64, &str)>,
    limit: u64,
) {
    qb.push("SELECT id, created_at_ms FROM orders WHERE ");
    match branch.key {
        Key::All => {
            qb.push("1 = 1");
        }
        Key::Location(id) => {
            qb.push("location_id = ");
            DB::bind_text(qb, id);
        }
        Key::Organization(id) => {
            qb.push("organization_id = ");
            DB::bind_text(qb, id);
        }
        Key::Lists(locations, organizations) => {
            qb.push("(");
            if !locations.is_empty() {
                qb.push("location_id IN ");
                push_list(qb, locations);
            }
            if !organizations.is_empty() {
                if !locations.is_empty() {
                    qb.push(" OR ");
                }
                qb.push("organization_id IN ");
                push_list(qb, organizations);
            }
            qb.push(")");
        }
    }
    if let Some(status) = branch.status {
        qb.push(" AND status = ");
        DB::bind_text(qb, status.as_str());
    } else if !filter.statuses.is_empty() {
        qb.push(" AND status IN (");
        for (i, status) in filter.statuses.iter().enumerate() {
            if i > 0 {
                qb.push(", ");
            }
            DB::bind_text(qb, status.as_str());
        }
        qb.push(")");
    }
    if let Some(number) = &filter.number {
        qb.push(" AND number_key = ");
        DB::bind_text(qb, number.key());
        if let Some(full) = number.full() {
            qb.push(" AND upper(number) = ");
            DB::bind_text(qb, &full);
        }
    }
    if let Some(from) = filter.created_from_ms {
        qb.push(" AND created_at_ms >= ");
        DB::bind_int(qb, from);
    }
    if let Some(to) = filter.created_to_ms {
        qb.push(" AND created_at_ms < ");
        DB::bind_int(qb, to);
    }
    let oldest_first = filter.sort.oldest_first();
    if let Some((key, id)) = after {
        qb.push(if oldest_first {
            " AND (created_at_ms, id) > ("
        } else {
            " AND (created_at_ms, id) < ("
        });
        DB::bind_int(qb, key);
        qb.push(", ");
        DB::bind_text(qb, id);
        qb.push(")");
    }
    qb.push(if oldest_first {
        " ORDER BY created_at_ms ASC, id ASC"
    } else {
        " ORDER BY created_at_ms DESC, id DESC"
    });
    push_limit(qb, limit);
}

impl<B: Backend> Store for SqlStore<B> {
    async fn migrate(&self) -> Result<(), DomainError> {
        self.run_migrations().await
    }

    async fn ping(&self) -> Result<(), DomainError> {
        self.execute(sqlx::query(PING)).await.map(|_| ())
    }

    async fn list_organizations(
        &self,
        scope: &TenantScope,
        page: &PageRequest,
    ) -> Result<Vec<OrganizationRecord>, DomainError> {
        let Some(mut qb) = organizations_query::<B>(scope, page) else {
            return Ok(Vec::new());
        };
        self.fetch_all(qb.build()).await
    }

    async fn get_organization(
        &self,
        organization_id: &str,
    ) -> Result<Option<OrganizationRecord>, DomainError> {
        self.fetch_optional(sqlx::query(GET_ORGANIZATION).text(organization_id))
            .await
    }

    async fn list_locations(
        &self,
        organization_id: &str,
        only: Option<&[String]>,
        page: &PageRequest,
    ) -> Result<Vec<LocationRecord>, DomainError> {
        let Some(mut qb) = locations_query::<B>(organization_id, only, page) else {
            return Ok(Vec::new());
        };
        self.fetch_all(qb.build()).await
    }

    async fn get_location(&self, location_id: &str) -> Result<Option<LocationRecord>, DomainError> {
        self.fetch_optional(sqlx::query(GET_LOCATION).text(location_id))
            .await
    }

    async fn list_orders(
        &self,
        filter: &OrderFilter,
        page: &PageRequest,
    ) -> Result<Vec<OrderRecord>, DomainError> {
        let Some(mut qb) = orders_query::<B>(filter, page)? else {
            return Ok(Vec::new());
        };
        self.fetch_all(qb.build()).await
    }

    async fn get_order(
        &self,
        order_id: &str,
    ) -> Result<Option<(OrderRecord, Vec<OrderLineRecord>)>, DomainError> {
        let order: Option<OrderRecord> = self
            .fetch_optional(sqlx::query(GET_ORDER).text(order_id))
            .await?;
        let Some(order) = order else {
            return Ok(None);
        };
        let lines = self
            .fetch_all(sqlx::query(ORDER_LINES).text(order_id))
            .await?;
        Ok(Some((order, lines)))
    }

    async fn order_owner(&self, order_id: &str) -> Result<Option<Owner>, DomainError> {
        self.owner(Owned::Order, ORDER_OWNER, order_id).await
    }

    async fn location_owner(&self, location_id: &str) -> Result<Option<Owner>, DomainError> {
        self.owner(Owned::Location, LOCATION_OWNER, location_id)
            .await
    }

    async fn load(&self, data: &seed::DataSet) -> Result<(), DomainError> {
        self.insert_all(&data.organizations).await?;
        self.insert_all(&data.locations).await?;
        self.insert_all(&data.customers).await?;
        self.insert_all(&data.categories).await?;
        self.insert_all(&data.items).await?;
        self.insert_all(&data.orders).await?;
        self.insert_all(&data.order_lines).await?;
        self.insert_all(&data.conversations).await?;
        self.insert_all(&data.messages).await?;
        self.load_venue(&data.venue).await?;
        super::AnalyticsStore::refresh_daily_metrics(self).await?;
        Ok(())
    }
}

impl<B: Backend> SqlStore<B> {
    /// The owner of `id` as `sql` (`$1` the id) reads it, `(organization_id,
    /// location_id)`, or as remembered from an earlier read (see
    /// [`Owners`](super::owners::Owners)).
    async fn owner(
        &self,
        kind: Owned,
        sql: &'static str,
        id: &str,
    ) -> Result<Option<Owner>, DomainError> {
        if let Some(owner) = self.owners.get(kind, id) {
            return Ok(Some(owner));
        }
        let row: Option<(String, String)> = self.fetch_optional(sqlx::query(sql).text(id)).await?;
        let owner = row.map(|(organization_id, location_id)| Owner {
            organization_id,
            location_id: Some(location_id),
        });
        if let Some(owner) = &owner {
            self.owners.remember(kind, id, owner);
        }
        Ok(owner)
    }

    /// Inserts `rows` in multi-row statements sized to the backend's
    /// parameter bound, one transaction per statement; rows whose key
    /// already exists are left as they are.
    async fn insert_all<R: load::Row + Sync>(&self, rows: &[R]) -> Result<(), DomainError> {
        for chunk in rows.chunks(load::rows_per_statement::<B, R>()) {
            let mut qb = load::insert_statement::<B, R>(chunk);
            let mut tx = self.pool().begin().await?;
            B::execute(&mut tx, qb.build().persistent(false)).await?;
            tx.commit().await?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use crate::domain::OrderNumberQuery;
    use crate::store::{PgStore, SqliteStore, StoreOptions};

    const INDEX: &str = "orders_number_key_created_id";

    /// The listing of one order number in two locations, as the store writes
    /// it; bound values: the two locations, the key, the full number.
    fn by_number<DB: Dialect>() -> String {
        let filter = OrderFilter {
            location_ids: Some(vec!["loc_a".to_owned(), "loc_b".to_owned()]),
            number: Some(OrderNumberQuery::parse("number", "par-261130-010").unwrap()),
            ..OrderFilter::default()
        };
        let page = PageRequest {
            limit: 20,
            after: None,
        };
        orders_query::<DB>(&filter, &page)
            .unwrap()
            .unwrap()
            .sql()
            .as_str()
            .to_owned()
    }

    #[tokio::test]
    async fn an_order_number_lookup_walks_the_number_index_on_sqlite() {
        let store = SqliteStore::connect("sqlite::memory:", &StoreOptions::default())
            .await
            .unwrap();
        store.migrate().await.unwrap();
        let sql = format!("EXPLAIN QUERY PLAN {}", by_number::<sqlx::Sqlite>());
        let plan: Vec<(i64, i64, i64, String)> = sqlx::query_as(sqlx::AssertSqlSafe(sql))
            .fetch_all(store.pool())
            .await
            .unwrap();
        assert!(
            plan.iter().any(|(.., detail)| detail.contains(INDEX)),
            "{plan:#?}"
        );
    }

    #[tokio::test]
    async fn an_order_number_lookup_can_walk_the_number_index_on_postgres() {
        let Some(url) = chataigne_common::testing::fresh_postgres_database("numbers").await else {
            assert!(
                !chataigne_common::testing::in_ci(),
                "PostgreSQL is required in CI"
            );
            return;
        };
        let store = PgStore::connect(&url, &StoreOptions::default())
            .await
            .unwrap();
        store.migrate().await.unwrap();
        let mut tx = store.pool().begin().await.unwrap();
        // An empty table reads fastest sequentially: forbid that, so the plan
        // shows which index the lookup can walk.
        sqlx::query("SET LOCAL enable_seqscan = off")
            .execute(&mut *tx)
            .await
            .unwrap();
        let sql = format!("EXPLAIN {}", by_number::<sqlx::Postgres>());
        let plan: Vec<String> = sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
            .bind("loc_a")
            .bind("loc_b")
            .bind("261130-010")
            .bind("PAR-261130-010")
            .fetch_all(&mut *tx)
            .await
            .unwrap();
        assert!(plan.iter().any(|line| line.contains(INDEX)), "{plan:#?}");
    }
}
