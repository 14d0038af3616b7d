//! The shape of each settings section. Sections without amounts are stored
//! and presented alike; sections with amounts are stored in minor units
//! (`…Stored`) and presented with `Money` in the caller's locale.

use serde::{Deserialize, Serialize};

use super::Money;
use crate::domain::Locale;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct StoreSettings {
    /// Name shown to customers.
    pub public_name: String,
    pub description: String,
    /// Cuisine, e.g. "French bistro".
    pub cuisine: String,
    /// The restaurant's public phone number, E.164.
    pub phone: String,
    /// Languages the restaurant serves customers in, BCP 47 tags, e.g. "fr".
    pub languages: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OrderSettingsStored {
    pub pickup: bool,
    pub delivery: bool,
    pub dine_in: bool,
    pub scheduled_orders: bool,
    pub auto_accept: bool,
    pub preparation_minutes: u32,
    pub minimum_order_minor: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct OrderSettings {
    pub pickup_enabled: bool,
    pub delivery_enabled: bool,
    pub dine_in_enabled: bool,
    /// Whether customers may order for a later time.
    pub scheduled_orders_enabled: bool,
    /// Whether new orders are accepted without staff confirmation.
    pub auto_accept: bool,
    /// Usual preparation time, in minutes.
    pub preparation_time_minutes: u32,
    /// Smallest order total accepted.
    pub minimum_order: Money,
}

impl OrderSettingsStored {
    pub fn present(self, currency: &str, locale: Locale) -> OrderSettings {
        OrderSettings {
            pickup_enabled: self.pickup,
            delivery_enabled: self.delivery,
            dine_in_enabled: self.dine_in,
            scheduled_orders_enabled: self.scheduled_orders,
            auto_accept: self.auto_accept,
            preparation_time_minutes: self.preparation_minutes,
            minimum_order: Money::new(self.minimum_order_minor, currency, locale),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Weekday {
    Monday,
    Tuesday,
    Wednesday,
    Thursday,
    Friday,
    Saturday,
    Sunday,
}

impl Weekday {
    pub const ALL: [Weekday; 7] = [
        Weekday::Monday,
        Weekday::Tuesday,
        Weekday::Wednesday,
        Weekday::Thursday,
        Weekday::Friday,
        Weekday::Saturday,
        Weekday::Sunday,
    ];
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpeningPeriod {
    /// Opening time, local time of the location, "HH:MM" (24-hour).
    pub opens: String,
    /// Closing time, local time of the location, "HH:MM" (24-hour); "00:00" is midnight.
    pub closes: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct DayHours {
    pub weekday: Weekday,
    /// Filled when presented; never stored.
    #[serde(default, skip_deserializing, skip_serializing_if = "String::is_empty")]
    pub weekday_label: String,
    /// True when the restaurant is closed all day.
    pub closed: bool,
    /// Opening periods of the day, in order; empty when closed.
    pub periods: Vec<OpeningPeriod>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct OpeningHours {
    /// One entry per weekday, Monday first, in the location's timezone.
    pub days: Vec<DayHours>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeliverySettingsStored {
    pub enabled: bool,
    pub radius_km: f64,
    pub fee_minor: i64,
    pub free_above_minor: Option<i64>,
    pub estimated_minutes: u32,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct DeliverySettings {
    pub enabled: bool,
    /// Delivery radius around the restaurant, in kilometres.
    pub radius_km: f64,
    /// Delivery fee charged per order.
    pub fee: Money,
    /// Order total from which delivery is free; absent when delivery is never free.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub free_delivery_above: Option<Money>,
    /// Usual delivery time, in minutes.
    pub estimated_delivery_minutes: u32,
}

impl DeliverySettingsStored {
    pub fn present(self, currency: &str, locale: Locale) -> DeliverySettings {
        DeliverySettings {
            enabled: self.enabled,
            radius_km: self.radius_km,
            fee: Money::new(self.fee_minor, currency, locale),
            free_delivery_above: self
                .free_above_minor
                .map(|minor| Money::new(minor, currency, locale)),
            estimated_delivery_minutes: self.estimated_minutes,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PaymentMethod {
    Card,
    Cash,
    MealVoucher,
    MobileWallet,
    OnlineCard,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PaymentMethodSettings {
    /// Accepted payment methods.
    pub methods: Vec<PaymentMethod>,
    /// Filled when presented; never stored.
    #[serde(default, skip_deserializing, skip_serializing_if = "Vec::is_empty")]
    pub method_labels: Vec<String>,
    /// Whether delivery orders may be paid in cash on arrival.
    pub cash_on_delivery: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AiTone {
    Friendly,
    Professional,
    Concise,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct AiSettings {
    /// Whether the assistant answers customers' messages.
    pub assistant_enabled: bool,
    /// Tone of the assistant's replies.
    pub tone: AiTone,
    /// Filled when presented; never stored.
    #[serde(default, skip_deserializing, skip_serializing_if = "String::is_empty")]
    pub tone_label: String,
    /// Languages the assistant replies in, BCP 47 tags.
    pub languages: Vec<String>,
    /// Whether the assistant may take orders in conversations.
    pub takes_orders: bool,
    /// Whether conversations are handed to staff when the assistant cannot help.
    pub handoff_to_staff: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LoyaltySettingsStored {
    pub enabled: bool,
    pub points_per_currency_unit: u32,
    pub reward_threshold_points: u32,
    pub reward_minor: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct LoyaltySettings {
    pub enabled: bool,
    /// Points earned per whole unit of the currency spent (per euro, per dollar).
    pub points_per_currency_unit: u32,
    /// Points needed for one reward.
    pub reward_threshold_points: u32,
    /// Value of one reward, as a credit on a later order.
    pub reward: Money,
}

impl LoyaltySettingsStored {
    pub fn present(self, currency: &str, locale: Locale) -> LoyaltySettings {
        LoyaltySettings {
            enabled: self.enabled,
            points_per_currency_unit: self.points_per_currency_unit,
            reward_threshold_points: self.reward_threshold_points,
            reward: Money::new(self.reward_minor, currency, locale),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReferralSettingsStored {
    pub enabled: bool,
    pub referrer_reward_minor: i64,
    pub referee_reward_minor: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ReferralSettings {
    pub enabled: bool,
    /// Credit given to the customer who refers a friend.
    pub referrer_reward: Money,
    /// Credit given to the referred friend on a first order.
    pub referee_reward: Money,
}

impl ReferralSettingsStored {
    pub fn present(self, currency: &str, locale: Locale) -> ReferralSettings {
        ReferralSettings {
            enabled: self.enabled,
            referrer_reward: Money::new(self.referrer_reward_minor, currency, locale),
            referee_reward: Money::new(self.referee_reward_minor, currency, locale),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum NotificationChannel {
    Email,
    Sms,
    Push,
    Dashboard,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct NotificationSettings {
    /// Channels staff notifications are sent on (recipients are not exposed).
    pub channels: Vec<NotificationChannel>,
    /// Filled when presented; never stored.
    #[serde(default, skip_deserializing, skip_serializing_if = "Vec::is_empty")]
    pub channel_labels: Vec<String>,
    pub new_order_alerts: bool,
    pub daily_summary: bool,
    pub sold_out_alerts: bool,
    pub review_alerts: bool,
}
