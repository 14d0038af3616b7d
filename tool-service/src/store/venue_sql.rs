//! The SQL of `VenueStore`, shared by both backends, and the trait's one
//! implementation on [`SqlStore`] from these bodies.
//!
//! Writes guarded by an observed state are one `UPDATE … WHERE id = … AND
//! <state in force> = <expected>`: the check and the change are atomic.

use sqlx::QueryBuilder;

use super::backend::{Backend, Binds, Dialect};
use super::seed::{DiscountRow, IntegrationRow, SettingsRow, VenueData};
use super::sql::push_page_limit;
use super::sql_store::SqlStore;
use super::{
    CatalogItemRecord, DiscountRecord, GuardedWrite, IntegrationRecord, LocationStatusRecord,
    Owner, SettingsRecord, VenueStore,
};
use crate::domain::{
    AvailabilityChange, CatalogFilter, DomainError, PageRequest, SettingsSection, StatusChange,
    contains_pattern,
};

/// The order intake in force at the bound time `?now`: an ended pause is over.
macro_rules! effective_status {
    ($now:literal) => {
        concat!(
            "(CASE WHEN status = 'paused' AND paused_until_ms IS NOT NULL AND paused_until_ms <= ",
            $now,
            " THEN 'accepting' ELSE status END)"
        )
    };
}

/// The availability in force at the bound time: a passed return time means available.
macro_rules! effective_availability {
    ($prefix:literal, $now:literal) => {
        concat!(
            "(CASE WHEN ",
            $prefix,
            "availability = 'sold_out' AND ",
            $prefix,
            "available_again_at_ms IS NOT NULL AND ",
            $prefix,
            "available_again_at_ms <= ",
            $now,
            " THEN 'available' ELSE ",
            $prefix,
            "availability END)"
        )
    };
}

macro_rules! item_select {
    () => {
        "SELECT i.id, i.organization_id, i.location_id, l.name AS location_name, l.timezone, \
         i.category_id, c.name AS category_name, i.name, i.description, i.price_minor, \
         i.currency, i.availability, i.available_again_at_ms, i.updated_at_ms \
         FROM catalog_items i JOIN locations l ON l.id = i.location_id \
         JOIN catalog_categories c ON c.id = i.category_id"
    };
}

pub(crate) const LOCATION_STATUS: &str = "SELECT id AS location_id, name AS location_name, \
     timezone, status, paused_until_ms, pause_reason, updated_at_ms FROM locations WHERE id = $1";

pub(crate) const UPDATE_LOCATION_STATUS: &str = concat!(
    "UPDATE locations SET status = $2, paused_until_ms = $3, pause_reason = $4, \
     updated_at_ms = $5 WHERE id = $1 AND ",
    effective_status!("$6"),
    " = $7"
);

pub(crate) const GET_ITEM: &str = concat!(item_select!(), " WHERE i.id = $1");

pub(crate) const ITEM_OWNER: &str =
    "SELECT organization_id, location_id FROM catalog_items WHERE id = $1";

pub(crate) const UPDATE_ITEM_AVAILABILITY: &str = concat!(
    "UPDATE catalog_items SET availability = $2, available_again_at_ms = $3, \
     updated_at_ms = $4 WHERE id = $1 AND ",
    effective_availability!("", "$5"),
    " = $6"
);

/// A discount applies: enabled and inside its window (start inclusive, end exclusive).
const DISCOUNT_IN_FORCE: (&str, &str, &str) = (
    "(status IN ('active', 'scheduled') AND (starts_at_ms IS NULL OR starts_at_ms <= ",
    ") AND (ends_at_ms IS NULL OR ends_at_ms > ",
    "))",
);

/// `AND (name, id) > (key, id)` after a page position.
fn push_after<DB: Dialect>(qb: &mut QueryBuilder<DB>, column: &str, page: &PageRequest) {
    if let Some(after) = &page.after {
        qb.push(format_args!(" AND ({column}, "));
        qb.push(if column.starts_with("i.") {
            "i.id"
        } else {
            "id"
        });
        qb.push(") > (");
        DB::bind_text(qb, &after.key);
        qb.push(", ");
        DB::bind_text(qb, &after.id);
        qb.push(")");
    }
}

/// The sections of one location; `None` when no section is asked for.
pub(crate) fn settings_query<DB: Dialect>(
    location_id: &str,
    sections: &[SettingsSection],
) -> Option<QueryBuilder<DB>> {
    if sections.is_empty() {
        return None;
    }
    let mut qb = QueryBuilder::new(
        "SELECT section, body, updated_at_ms FROM location_settings WHERE location_id = ",
    );
    DB::bind_text(&mut qb, location_id);
    qb.push(" AND section IN (");
    for (i, section) in sections.iter().enumerate() {
        if i > 0 {
            qb.push(", ");
        }
        DB::bind_text(&mut qb, section.as_str());
    }
    qb.push(") ORDER BY section");
    Some(qb)
}

pub(crate) fn catalog_items_query<DB: Dialect>(
    filter: &CatalogFilter,
    page: &PageRequest,
) -> QueryBuilder<DB> {
    let mut qb = QueryBuilder::new(concat!(item_select!(), " WHERE i.location_id = "));
    DB::bind_text(&mut qb, &filter.location_id);
    if let Some(category_id) = &filter.category_id {
        qb.push(" AND i.category_id = ");
        DB::bind_text(&mut qb, category_id);
    }
    if let Some(availability) = filter.availability {
        qb.push(" AND (CASE WHEN i.availability = 'sold_out' AND i.available_again_at_ms IS NOT NULL AND i.available_again_at_ms <= ");
        DB::bind_int(&mut qb, filter.now_ms);
        qb.push(" THEN 'available' ELSE i.availability END) = ");
        DB::bind_text(&mut qb, availability.as_str());
    }
    if let Some(text) = &filter.name_contains {
        // The folded copy written with the row: the same rows on both backends.
        qb.push(" AND i.name_folded LIKE ");
        DB::bind_text(&mut qb, &contains_pattern(text));
        qb.push(" ESCAPE '\\'");
    }
    push_after(&mut qb, "i.name", page);
    qb.push(" ORDER BY i.name, i.id");
    push_page_limit(&mut qb, page);
    qb
}

/// Rows of the location `location_id` or organization-wide rows of `organization_id`.
fn push_location_or_organization<DB: Dialect>(
    qb: &mut QueryBuilder<DB>,
    organization_id: &str,
    location_id: &str,
) {
    qb.push(" WHERE (location_id = ");
    DB::bind_text(qb, location_id);
    qb.push(" OR (location_id IS NULL AND organization_id = ");
    DB::bind_text(qb, organization_id);
    qb.push("))");
}

pub(crate) fn discounts_query<DB: Dialect>(
    organization_id: &str,
    location_id: &str,
    in_force: Option<bool>,
    now_ms: i64,
    page: &PageRequest,
) -> QueryBuilder<DB> {
    let mut qb = QueryBuilder::new(
        "SELECT id, location_id, name, code, kind, value, status, starts_at_ms, ends_at_ms \
         FROM discounts",
    );
    push_location_or_organization(&mut qb, organization_id, location_id);
    if let Some(in_force) = in_force {
        qb.push(if in_force { " AND " } else { " AND NOT " });
        qb.push(DISCOUNT_IN_FORCE.0);
        DB::bind_int(&mut qb, now_ms);
        qb.push(DISCOUNT_IN_FORCE.1);
        DB::bind_int(&mut qb, now_ms);
        qb.push(DISCOUNT_IN_FORCE.2);
    }
    push_after(&mut qb, "name", page);
    qb.push(" ORDER BY name, id");
    push_page_limit(&mut qb, page);
    qb
}

pub(crate) fn integrations_query<DB: Dialect>(
    organization_id: &str,
    location_id: &str,
    page: &PageRequest,
) -> QueryBuilder<DB> {
    let mut qb = QueryBuilder::new(
        "SELECT id, location_id, name, kind, health, last_sync_at_ms FROM integrations",
    );
    push_location_or_organization(&mut qb, organization_id, location_id);
    push_after(&mut qb, "name", page);
    qb.push(" ORDER BY name, id");
    push_page_limit(&mut qb, page);
    qb
}

/// One bound value of a generated row.
pub(crate) enum Value<'a> {
    Text(&'a str),
    OptText(Option<&'a str>),
    Int(i64),
    OptInt(Option<i64>),
}

/// A generated row written by `load_venue`.
pub(crate) trait VenueRow {
    const TABLE: &'static str;
    const COLUMNS: &'static [&'static str];
    fn values(&self) -> Vec<Value<'_>>;
}

/// Multi-row `INSERT … ON CONFLICT DO NOTHING` statements for `rows`, each
/// within the backend's parameter bound.
pub(crate) fn insert_statements<DB: Backend, R: VenueRow>(rows: &[R]) -> Vec<QueryBuilder<DB>> {
    let per_statement = (DB::MAX_PARAMS / R::COLUMNS.len()).clamp(1, 2_000);
    rows.chunks(per_statement)
        .map(|chunk| {
            let mut qb = QueryBuilder::new(format!(
                "INSERT INTO {} ({}) VALUES ",
                R::TABLE,
                R::COLUMNS.join(", ")
            ));
            for (i, row) in chunk.iter().enumerate() {
                qb.push(if i == 0 { "(" } else { ", (" });
                for (j, value) in row.values().into_iter().enumerate() {
                    if j > 0 {
                        qb.push(", ");
                    }
                    match value {
                        Value::Text(v) => DB::bind_text(&mut qb, v),
                        Value::OptText(v) => DB::bind_opt_text(&mut qb, v),
                        Value::Int(v) => DB::bind_int(&mut qb, v),
                        Value::OptInt(v) => DB::bind_opt_int(&mut qb, v),
                    }
                }
                qb.push(")");
            }
            qb.push(" ON CONFLICT DO NOTHING");
            qb
        })
        .collect()
}

impl<'a> From<&'a String> for Value<'a> {
    fn from(v: &'a String) -> Value<'a> {
        Value::Text(v)
    }
}

impl<'a> From<&'a Option<String>> for Value<'a> {
    fn from(v: &'a Option<String>) -> Value<'a> {
        Value::OptText(v.as_deref())
    }
}

impl From<&i64> for Value<'_> {
    fn from(v: &i64) -> Self {
        Value::Int(*v)
    }
}

impl From<&Option<i64>> for Value<'_> {
    fn from(v: &Option<i64>) -> Self {
        Value::OptInt(*v)
    }
}

/// Implements [`VenueRow`] for a row type written to `table`, whose columns
/// are its fields of the same names, in this order.
macro_rules! venue_row {
    ($row:ty => $table:literal [$($column:ident),* $(,)?]) => {
        impl VenueRow for $row {
            const TABLE: &'static str = $table;
            const COLUMNS: &'static [&'static str] = &[$(stringify!($column)),*];
            fn values(&self) -> Vec<Value<'_>> {
                vec![$(Value::from(&self.$column)),*]
            }
        }
    };
}

venue_row!(SettingsRow => "location_settings" [location_id, section, body, updated_at_ms]);
venue_row!(DiscountRow => "discounts" [
    id, organization_id, location_id, name, code, kind, value, status, starts_at_ms, ends_at_ms,
    created_at_ms,
]);
venue_row!(IntegrationRow => "integrations" [
    id, organization_id, location_id, provider, kind, name, health, last_sync_at_ms, created_at_ms,
]);

impl<B: Backend> VenueStore for SqlStore<B> {
    async fn location_status(
        &self,
        location_id: &str,
    ) -> Result<Option<LocationStatusRecord>, DomainError> {
        self.fetch_optional(sqlx::query(LOCATION_STATUS).text(location_id))
            .await
    }

    async fn update_location_status(
        &self,
        location_id: &str,
        change: &StatusChange,
        now_ms: i64,
    ) -> Result<GuardedWrite<LocationStatusRecord>, DomainError> {
        let update = sqlx::query(UPDATE_LOCATION_STATUS)
            .text(location_id)
            .text(change.status.as_str())
            .opt_int(change.paused_until_ms)
            .opt_text(change.reason.map(|r| r.as_str()))
            .int(now_ms)
            .int(now_ms)
            .text(change.expected.as_str());
        let written = self.execute(update).await?;
        let current = self.location_status(location_id).await?;
        Ok(GuardedWrite::settle(written, current))
    }

    async fn location_settings(
        &self,
        location_id: &str,
        sections: &[SettingsSection],
    ) -> Result<Vec<SettingsRecord>, DomainError> {
        let Some(mut qb) = settings_query::<B>(location_id, sections) else {
            return Ok(Vec::new());
        };
        self.fetch_all(qb.build()).await
    }

    async fn list_catalog_items(
        &self,
        filter: &CatalogFilter,
        page: &PageRequest,
    ) -> Result<Vec<CatalogItemRecord>, DomainError> {
        let mut qb = catalog_items_query::<B>(filter, page);
        self.fetch_all(qb.build()).await
    }

    async fn get_catalog_item(
        &self,
        item_id: &str,
    ) -> Result<Option<CatalogItemRecord>, DomainError> {
        self.fetch_optional(sqlx::query(GET_ITEM).text(item_id))
            .await
    }

    async fn catalog_item_owner(&self, item_id: &str) -> Result<Option<Owner>, DomainError> {
        let row: Option<(String, String)> = self
            .fetch_optional(sqlx::query(ITEM_OWNER).text(item_id))
            .await?;
        Ok(row.map(|(organization_id, location_id)| Owner {
            organization_id,
            location_id: Some(location_id),
        }))
    }

    async fn update_item_availability(
        &self,
        item_id: &str,
        change: &AvailabilityChange,
        now_ms: i64,
    ) -> Result<GuardedWrite<CatalogItemRecord>, DomainError> {
        let update = sqlx::query(UPDATE_ITEM_AVAILABILITY)
            .text(item_id)
            .text(change.availability.as_str())
            .opt_int(change.available_again_at_ms)
            .int(now_ms)
            .int(now_ms)
            .text(change.expected.as_str());
        let written = self.execute(update).await?;
        let current = self.get_catalog_item(item_id).await?;
        Ok(GuardedWrite::settle(written, current))
    }

    async fn list_discounts(
        &self,
        owner: &Owner,
        in_force: Option<bool>,
        now_ms: i64,
        page: &PageRequest,
    ) -> Result<Vec<DiscountRecord>, DomainError> {
        let location_id = owner.location_id.as_deref().unwrap_or_default();
        let mut qb =
            discounts_query::<B>(&owner.organization_id, location_id, in_force, now_ms, page);
        self.fetch_all(qb.build()).await
    }

    async fn list_integrations(
        &self,
        owner: &Owner,
        page: &PageRequest,
    ) -> Result<Vec<IntegrationRecord>, DomainError> {
        let location_id = owner.location_id.as_deref().unwrap_or_default();
        let mut qb = integrations_query::<B>(&owner.organization_id, location_id, page);
        self.fetch_all(qb.build()).await
    }

    async fn load_venue(&self, data: &VenueData) -> Result<(), DomainError> {
        let mut statements = insert_statements::<B, _>(&data.settings);
        statements.extend(insert_statements::<B, _>(&data.discounts));
        statements.extend(insert_statements::<B, _>(&data.integrations));
        let mut tx = self.pool().begin().await?;
        for mut qb in statements {
            B::execute(&mut tx, qb.build().persistent(false)).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::contains_pattern;

    #[test]
    fn like_wildcards_in_the_text_are_literal() {
        assert_eq!(contains_pattern("tarte"), "%tarte%");
        assert_eq!(contains_pattern("50%_off\\"), "%50\\%\\_off\\\\%");
    }
}
