//! Catalog items: availability (sold out until when), the rules of an
//! availability change, list filters and the item as presented.

use serde::{Deserialize, Serialize};

use super::{DomainError, Money};

/// Longest accepted `text` filter, in characters.
pub const MAX_TEXT_FILTER: usize = 100;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Availability {
    Available,
    SoldOut,
}

impl Availability {
    pub fn as_str(self) -> &'static str {
        match self {
            Availability::Available => "available",
            Availability::SoldOut => "sold_out",
        }
    }

    pub fn parse(value: &str) -> Option<Availability> {
        [Availability::Available, Availability::SoldOut]
            .into_iter()
            .find(|a| a.as_str() == value)
    }

    /// The availability in force at `now_ms`: an item is back once its
    /// announced return time has passed.
    pub fn effective(stored: Availability, again_at_ms: Option<i64>, now_ms: i64) -> Self {
        match (stored, again_at_ms) {
            (Availability::SoldOut, Some(at)) if at <= now_ms => Availability::Available,
            (availability, _) => availability,
        }
    }
}

/// A validated availability change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AvailabilityChange {
    pub availability: Availability,
    pub expected: Availability,
    pub available_again_at_ms: Option<i64>,
}

impl AvailabilityChange {
    /// A return time only with `sold_out`, and in the future.
    pub fn new(
        availability: Availability,
        expected: Availability,
        available_again_at_ms: Option<i64>,
        now_ms: i64,
    ) -> Result<AvailabilityChange, DomainError> {
        if let Some(at) = available_again_at_ms {
            if availability != Availability::SoldOut {
                return Err(DomainError::invalid(
                    "available_again_at",
                    "only allowed with availability sold_out",
                ));
            }
            if at <= now_ms {
                return Err(DomainError::invalid(
                    "available_again_at",
                    "must be in the future",
                ));
            }
        }
        Ok(AvailabilityChange {
            availability,
            expected,
            available_again_at_ms,
        })
    }
}

/// Filters of a catalog listing, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogFilter {
    pub location_id: String,
    pub category_id: Option<String>,
    /// Effective availability at `now_ms`.
    pub availability: Option<Availability>,
    /// Folded text the name contains (`search::fold`).
    pub name_contains: Option<String>,
    pub now_ms: i64,
}

impl CatalogFilter {
    /// Normalizes the text filter: trimmed, at most 100 characters, folded
    /// (case and accents ignored); empty after trimming means no filter.
    pub fn text(value: Option<&str>) -> Result<Option<String>, DomainError> {
        let Some(text) = value.map(str::trim).filter(|t| !t.is_empty()) else {
            return Ok(None);
        };
        if text.chars().count() > MAX_TEXT_FILTER {
            return Err(DomainError::invalid(
                "text",
                format!("must be at most {MAX_TEXT_FILTER} characters"),
            ));
        }
        Ok(Some(super::search::fold(text)))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct CatalogItem {
    /// Item ID, e.g. "itm_01paris11_004".
    pub id: String,
    pub name: String,
    pub description: String,
    pub location_id: String,
    pub location_name: String,
    /// Category ID, e.g. "cat_01paris11_02".
    pub category_id: String,
    pub category_name: String,
    /// Price including taxes.
    pub price: Money,
    /// Availability now: `available` or `sold_out`.
    pub availability: Availability,
    /// The availability in the caller's language.
    pub availability_label: String,
    /// When a sold-out item is expected back, ISO 8601 with the location's
    /// UTC offset; absent when available or when no return time is set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_again_at: Option<String>,
    /// Last change of the item, ISO 8601 with the location's UTC offset.
    pub updated_at: String,
}

#[cfg(test)]
mod tests {
    use super::Availability::*;
    use super::*;

    const NOW: i64 = 1_750_000_000_000;

    #[test]
    fn a_passed_return_time_means_available() {
        assert_eq!(Availability::effective(SoldOut, Some(NOW), NOW), Available);
        assert_eq!(
            Availability::effective(SoldOut, Some(NOW + 1), NOW),
            SoldOut
        );
        assert_eq!(Availability::effective(SoldOut, None, NOW), SoldOut);
    }

    #[test]
    fn return_time_rules() {
        assert!(AvailabilityChange::new(SoldOut, Available, Some(NOW + 1), NOW).is_ok());
        assert!(AvailabilityChange::new(SoldOut, Available, Some(NOW), NOW).is_err());
        assert!(AvailabilityChange::new(Available, SoldOut, Some(NOW + 1), NOW).is_err());
        assert!(AvailabilityChange::new(Available, SoldOut, None, NOW).is_ok());
    }

    #[test]
    fn text_filter_is_trimmed_bounded_and_folded() {
        assert_eq!(
            CatalogFilter::text(Some("  Tarte ")).unwrap(),
            Some("tarte".into())
        );
        assert_eq!(
            CatalogFilter::text(Some("Crème BRÛLÉE")).unwrap(),
            Some("creme brulee".into())
        );
        assert_eq!(CatalogFilter::text(Some("   ")).unwrap(), None);
        assert!(CatalogFilter::text(Some(&"é".repeat(100))).is_ok());
        assert!(CatalogFilter::text(Some(&"é".repeat(101))).is_err());
    }
}
