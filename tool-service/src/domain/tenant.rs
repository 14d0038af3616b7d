//! Organizations (the tenants) and their locations (restaurants).

use serde::Serialize;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Organization {
    /// Organization ID, e.g. "org_01bistrochataigne".
    pub id: String,
    pub name: String,
    /// Number of locations the organization owns.
    pub location_count: u32,
    /// Creation time, ISO 8601 in UTC.
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Address {
    pub line1: String,
    pub city: String,
    pub postal_code: String,
    /// ISO 3166-1 alpha-2 country code.
    pub country: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Location {
    /// Location ID, e.g. "loc_01paris11".
    pub id: String,
    pub name: String,
    pub organization_id: String,
    pub organization_name: String,
    /// IANA timezone, e.g. "Europe/Paris".
    pub timezone: String,
    /// ISO 4217 currency of the location's prices.
    pub currency: String,
    pub address: Address,
    /// Creation time, ISO 8601 with the location's UTC offset.
    pub created_at: String,
}
