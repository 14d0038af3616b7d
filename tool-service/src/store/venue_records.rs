//! Raw rows of a location's status, settings, catalog, discounts and
//! integrations, as both backends read them.

/// A location's stored order intake, with what presenting it needs.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LocationStatusRecord {
    pub location_id: String,
    pub location_name: String,
    pub timezone: String,
    /// `accepting` or `paused` as stored (a pause may have ended since).
    pub status: String,
    pub paused_until_ms: Option<i64>,
    pub pause_reason: Option<String>,
    pub updated_at_ms: i64,
}

/// One settings section of a location: a JSON document.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct SettingsRecord {
    pub section: String,
    pub body: String,
    pub updated_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct CatalogItemRecord {
    pub id: String,
    pub organization_id: String,
    pub location_id: String,
    pub location_name: String,
    pub timezone: String,
    pub category_id: String,
    pub category_name: String,
    pub name: String,
    pub description: String,
    pub price_minor: i64,
    pub currency: String,
    /// `available` or `sold_out` as stored (a return time may have passed since).
    pub availability: String,
    pub available_again_at_ms: Option<i64>,
    pub updated_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct DiscountRecord {
    pub id: String,
    /// `None`: valid in every location of the organization.
    pub location_id: Option<String>,
    pub name: String,
    pub code: Option<String>,
    /// `percent` or `amount`.
    pub kind: String,
    /// Basis points for percent, minor units for amount.
    pub value: i64,
    /// `active`, `scheduled`, `expired` or `disabled`.
    pub status: String,
    pub starts_at_ms: Option<i64>,
    pub ends_at_ms: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct IntegrationRecord {
    pub id: String,
    /// `None`: serves every location of the organization.
    pub location_id: Option<String>,
    pub name: String,
    pub kind: String,
    /// `healthy`, `degraded`, `failing` or `disconnected`.
    pub health: String,
    pub last_sync_at_ms: Option<i64>,
}

/// The result of a write guarded by the observed state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GuardedWrite<R> {
    /// The precondition held; the record after the write.
    Updated(R),
    /// The current state differs from the observed one; nothing was written.
    Mismatch(R),
    /// The target does not exist.
    Missing,
}

impl<R> GuardedWrite<R> {
    /// The outcome of a conditional update that changed `rows_affected` rows,
    /// given the record as read right after it.
    pub fn settle(rows_affected: u64, current: Option<R>) -> GuardedWrite<R> {
        match current {
            None => GuardedWrite::Missing,
            Some(record) if rows_affected == 1 => GuardedWrite::Updated(record),
            Some(record) => GuardedWrite::Mismatch(record),
        }
    }
}
