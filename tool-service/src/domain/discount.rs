//! Discounts: percent or fixed amount, their validity window and whether one
//! is in force at a given time.

use serde::{Deserialize, Serialize};

use super::Money;
use crate::domain::Locale;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DiscountKind {
    /// A percentage off the order.
    Percent,
    /// A fixed amount off the order.
    Amount,
}

impl DiscountKind {
    pub fn parse(value: &str) -> Option<DiscountKind> {
        match value {
            "percent" => Some(DiscountKind::Percent),
            "amount" => Some(DiscountKind::Amount),
            _ => None,
        }
    }
}

/// The lifecycle state an operator set on a discount.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DiscountStatus {
    Active,
    Scheduled,
    Expired,
    Disabled,
}

impl DiscountStatus {
    pub fn parse(value: &str) -> Option<DiscountStatus> {
        match value {
            "active" => Some(DiscountStatus::Active),
            "scheduled" => Some(DiscountStatus::Scheduled),
            "expired" => Some(DiscountStatus::Expired),
            "disabled" => Some(DiscountStatus::Disabled),
            _ => None,
        }
    }
}

/// Whether a discount applies at `now_ms`: enabled and inside its window
/// (start inclusive, end exclusive).
pub fn in_force(
    status: DiscountStatus,
    starts_at_ms: Option<i64>,
    ends_at_ms: Option<i64>,
    now_ms: i64,
) -> bool {
    matches!(status, DiscountStatus::Active | DiscountStatus::Scheduled)
        && starts_at_ms.is_none_or(|s| s <= now_ms)
        && ends_at_ms.is_none_or(|e| e > now_ms)
}

/// Formats basis points as a percentage for `locale`, e.g. "12,5 %" or "12.5%".
pub fn percent_display(basis_points: i64, locale: Locale) -> String {
    let whole = basis_points / 100;
    let fraction = (basis_points % 100).abs();
    let number = if fraction == 0 {
        whole.to_string()
    } else if fraction % 10 == 0 {
        format!("{whole}.{}", fraction / 10)
    } else {
        format!("{whole}.{fraction:02}")
    };
    if locale == Locale::Fr {
        format!("{} %", number.replace('.', ","))
    } else {
        format!("{number}%")
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Discount {
    /// Discount ID, e.g. "dsc_01paris11_01".
    pub id: String,
    pub name: String,
    /// Code customers enter at checkout; absent for discounts applied automatically.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// `percent` or `amount`.
    pub kind: DiscountKind,
    pub kind_label: String,
    /// Percentage off in basis points (hundredths of a percent), e.g. 1500 for 15 %; percent discounts only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percent_basis_points: Option<i64>,
    /// Amount off the order; amount discounts only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount_off: Option<Money>,
    /// The value for people, e.g. "15 %" or "5,00 €".
    pub value_display: String,
    /// State set by the restaurant: `active`, `scheduled`, `expired` or `disabled`.
    pub status: DiscountStatus,
    pub status_label: String,
    /// True when the discount applies right now (enabled and inside its window).
    pub in_force: bool,
    /// True when the discount is valid in every location of the organization.
    pub organization_wide: bool,
    /// Start of validity, ISO 8601 with the location's UTC offset; absent: no start bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starts_at: Option<String>,
    /// End of validity (exclusive), ISO 8601 with the location's UTC offset; absent: no end bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ends_at: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_and_status_decide_whether_in_force() {
        let now = 1_000;
        assert!(in_force(DiscountStatus::Active, None, None, now));
        assert!(in_force(
            DiscountStatus::Active,
            Some(now),
            Some(now + 1),
            now
        ));
        assert!(!in_force(DiscountStatus::Active, Some(now + 1), None, now));
        assert!(!in_force(DiscountStatus::Active, None, Some(now), now));
        assert!(!in_force(DiscountStatus::Disabled, None, None, now));
        assert!(in_force(
            DiscountStatus::Scheduled,
            Some(now - 1),
            None,
            now
        ));
    }

    #[test]
    fn percentages_by_locale() {
        assert_eq!(percent_display(1500, Locale::Fr), "15 %");
        assert_eq!(percent_display(1250, Locale::En), "12.5%");
        assert_eq!(percent_display(1205, Locale::Fr), "12,05 %");
    }
}
