//! Raw rows as stored: the shared shape both backends read into.

/// The organization and location a target really belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub organization_id: String,
    pub location_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OrganizationRecord {
    pub id: String,
    pub name: String,
    pub location_count: i64,
    pub created_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct LocationRecord {
    pub id: String,
    pub organization_id: String,
    pub organization_name: String,
    pub name: String,
    pub timezone: String,
    pub currency: String,
    pub line1: String,
    pub city: String,
    pub postal_code: String,
    pub country: String,
    pub created_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OrderRecord {
    pub id: String,
    pub number: String,
    pub organization_id: String,
    pub location_id: String,
    pub location_name: String,
    pub timezone: String,
    pub currency: String,
    pub customer_id: String,
    pub customer_name: String,
    /// One of `OrderStatus::as_str`.
    pub status: String,
    /// One of `Fulfillment::as_str`.
    pub fulfillment: String,
    pub total_minor: i64,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

/// One step of an order's status history, as stored.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OrderStatusChangeRecord {
    pub from_status: String,
    pub to_status: String,
    pub changed_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct OrderLineRecord {
    pub order_id: String,
    pub line_no: i64,
    pub item_id: String,
    pub item_name: String,
    pub quantity: i64,
    pub unit_price_minor: i64,
}
