//! Location settings, one section at a time, each guarded by its own scope.
//! Sections are stored as documents (`settings_sections` holds their shapes);
//! this file names the sections, their scopes and the presented result.

use serde::{Deserialize, Serialize};

use super::settings_sections::{
    AiSettings, DeliverySettings, LoyaltySettings, NotificationSettings, OpeningHours,
    OrderSettings, PaymentMethodSettings, ReferralSettings, StoreSettings,
};

/// The umbrella scope every settings read needs, besides each section's own.
pub const SETTINGS_SCOPE: &str = "settings.read";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SettingsSection {
    Store,
    Order,
    OpeningHours,
    Delivery,
    PaymentMethods,
    Ai,
    Loyalty,
    Referrals,
    Notifications,
}

impl SettingsSection {
    pub const ALL: [SettingsSection; 9] = [
        SettingsSection::Store,
        SettingsSection::Order,
        SettingsSection::OpeningHours,
        SettingsSection::Delivery,
        SettingsSection::PaymentMethods,
        SettingsSection::Ai,
        SettingsSection::Loyalty,
        SettingsSection::Referrals,
        SettingsSection::Notifications,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SettingsSection::Store => "store",
            SettingsSection::Order => "order",
            SettingsSection::OpeningHours => "opening_hours",
            SettingsSection::Delivery => "delivery",
            SettingsSection::PaymentMethods => "payment_methods",
            SettingsSection::Ai => "ai",
            SettingsSection::Loyalty => "loyalty",
            SettingsSection::Referrals => "referrals",
            SettingsSection::Notifications => "notifications",
        }
    }

    pub fn parse(value: &str) -> Option<SettingsSection> {
        SettingsSection::ALL
            .into_iter()
            .find(|s| s.as_str() == value)
    }

    /// The OAuth scope (and role permission) this section needs.
    pub fn scope(self) -> &'static str {
        match self {
            SettingsSection::Store => "storeSettings.read",
            SettingsSection::Order => "orderSettings.read",
            SettingsSection::OpeningHours => "openingHoursSettings.read",
            SettingsSection::Delivery => "deliverySettings.read",
            SettingsSection::PaymentMethods => "paymentMethodSettings.read",
            SettingsSection::Ai => "ai.read",
            SettingsSection::Loyalty => "loyalty.read",
            SettingsSection::Referrals => "referrals.read",
            SettingsSection::Notifications => "notifications.read",
        }
    }
}

/// The requested sections of one location's settings; a section that was
/// not requested (or has never been configured) is absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct LocationSettings {
    /// Location ID, e.g. "loc_01paris11".
    pub location_id: String,
    pub location_name: String,
    /// IANA timezone in which opening hours are expressed, e.g. "Europe/Paris".
    pub timezone: String,
    /// ISO 4217 currency of every amount below.
    pub currency: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<StoreSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<OrderSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opening_hours: Option<OpeningHours>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<DeliverySettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payment_methods: Option<PaymentMethodSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ai: Option<AiSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loyalty: Option<LoyaltySettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub referrals: Option<ReferralSettings>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notifications: Option<NotificationSettings>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_section_has_its_own_known_scope() {
        let mut scopes: Vec<&str> = SettingsSection::ALL.iter().map(|s| s.scope()).collect();
        for scope in &scopes {
            assert!(chataigne_common::scopes::is_known(scope), "{scope}");
        }
        scopes.sort();
        scopes.dedup();
        assert_eq!(scopes.len(), 9);
        for section in SettingsSection::ALL {
            assert_eq!(SettingsSection::parse(section.as_str()), Some(section));
        }
    }
}
