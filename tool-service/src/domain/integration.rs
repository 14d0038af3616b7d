//! Integrations of a location with outside systems: what they connect and
//! their health. Credentials are never part of this model.

use serde::{Deserialize, Serialize};

/// What an integration connects: `pos` (point of sale, the till),
/// `delivery` (a delivery marketplace or courier service), payments,
/// accounting, marketing, reservations or other.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IntegrationKind {
    Pos,
    Delivery,
    Payments,
    Accounting,
    Marketing,
    Reservations,
    Other,
}

impl IntegrationKind {
    pub fn parse(value: &str) -> Option<IntegrationKind> {
        use IntegrationKind::*;
        Some(match value {
            "pos" => Pos,
            "delivery" => Delivery,
            "payments" => Payments,
            "accounting" => Accounting,
            "marketing" => Marketing,
            "reservations" => Reservations,
            "other" => Other,
            _ => return None,
        })
    }
}

/// Health of an integration: `ok`, `degraded` (working with errors or
/// delays) or `down` (failing or disconnected).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IntegrationHealth {
    Ok,
    Degraded,
    Down,
}

impl IntegrationHealth {
    /// Maps the stored health (`healthy`, `degraded`, `failing`, `disconnected`).
    pub fn from_stored(value: &str) -> Option<IntegrationHealth> {
        match value {
            "healthy" => Some(IntegrationHealth::Ok),
            "degraded" => Some(IntegrationHealth::Degraded),
            "failing" | "disconnected" => Some(IntegrationHealth::Down),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Integration {
    /// Integration ID, e.g. "int_01paris11_pos".
    pub id: String,
    /// Display name, e.g. "Dining room till".
    pub name: String,
    /// What the integration connects.
    pub kind: IntegrationKind,
    pub kind_label: String,
    pub health: IntegrationHealth,
    /// The health in the caller's language.
    pub health_label: String,
    /// True when the integration serves every location of the organization.
    pub organization_wide: bool,
    /// Last successful synchronization, ISO 8601 with the location's UTC offset; absent if never synchronized.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_sync_at: Option<String>,
}
