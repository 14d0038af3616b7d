//! Plain rows of a generated data set, one struct per table, as `load` writes them.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrganizationRow {
    pub id: String,
    pub name: String,
    pub created_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocationRow {
    pub id: String,
    pub organization_id: String,
    pub name: String,
    pub line1: String,
    pub city: String,
    pub postal_code: String,
    pub country: String,
    pub phone: Option<String>,
    pub timezone: String,
    pub currency: String,
    /// `accepting` or `paused`.
    pub status: String,
    pub paused_until_ms: Option<i64>,
    pub pause_reason: Option<String>,
    pub created_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CustomerRow {
    pub id: String,
    pub organization_id: String,
    /// `None`: a customer of the whole organization.
    pub location_id: Option<String>,
    pub display_name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub created_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CategoryRow {
    pub id: String,
    pub organization_id: String,
    pub location_id: String,
    pub name: String,
    pub position: i64,
    pub created_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemRow {
    pub id: String,
    pub organization_id: String,
    pub location_id: String,
    pub category_id: String,
    pub name: String,
    pub description: String,
    pub price_minor: i64,
    pub currency: String,
    /// `available` or `sold_out`.
    pub availability: String,
    pub available_again_at_ms: Option<i64>,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderRow {
    pub id: String,
    pub number: String,
    pub organization_id: String,
    pub location_id: String,
    pub customer_id: String,
    /// One of `OrderStatus::as_str`.
    pub status: String,
    /// One of `Fulfillment::as_str`.
    pub fulfillment: String,
    pub currency: String,
    pub total_minor: i64,
    pub created_at_ms: i64,
    pub updated_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderLineRow {
    pub order_id: String,
    /// 1-based position in the order.
    pub line_no: i64,
    pub item_id: String,
    pub item_name: String,
    pub quantity: i64,
    pub unit_price_minor: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationRow {
    pub id: String,
    pub organization_id: String,
    pub location_id: String,
    pub customer_id: String,
    /// `sms`, `whatsapp`, `web_chat` or `email`.
    pub channel: String,
    /// `open`, `waiting` or `closed`.
    pub status: String,
    pub created_at_ms: i64,
    pub last_message_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MessageRow {
    pub id: String,
    pub conversation_id: String,
    /// `customer`, `staff`, `assistant` or `instruction`.
    pub sender: String,
    pub body: String,
    pub created_at_ms: i64,
}
