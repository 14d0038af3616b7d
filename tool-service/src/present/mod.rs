//! Presentation of stored records, in one place for every tool: times as
//! ISO 8601 with the location's UTC offset, money with a display string in
//! the caller's locale, statuses parsed and labelled. This module holds
//! times, tenants and orders; `venue` a location's intake, settings, catalog,
//! discounts and integrations; `customer` customers and conversations.

mod compact;
mod customer;
mod venue;

pub use compact::compact;
pub use customer::{conversation, customer, listed_conversation, message};
pub use venue::{catalog_item, discount, integration, location_status, opening_now, settings};

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use chrono_tz::Tz;

use crate::domain::{
    Address, DomainError, Fulfillment, Locale, Location, Money, Order, OrderLine, OrderStatus,
    Organization,
};
use crate::store::{LocationRecord, OrderLineRecord, OrderRecord, OrganizationRecord};

/// `ms` as ISO 8601 in `timezone` (UTC when the zone is unknown).
pub fn timestamp(ms: i64, timezone: &str) -> String {
    let utc = DateTime::<Utc>::from_timestamp_millis(ms).unwrap_or_default();
    match timezone.parse::<Tz>() {
        Ok(tz) => tz
            .from_utc_datetime(&utc.naive_utc())
            .to_rfc3339_opts(SecondsFormat::Secs, false),
        Err(_) => utc.to_rfc3339_opts(SecondsFormat::Secs, false),
    }
}

/// Parses an ISO 8601 timestamp with offset into Unix milliseconds.
pub fn parse_timestamp(field: &str, value: &str) -> Result<i64, DomainError> {
    DateTime::parse_from_rfc3339(value)
        .map(|t| t.timestamp_millis())
        .map_err(|_| {
            DomainError::invalid(
                field,
                "expected an ISO 8601 date-time with offset, e.g. 2026-03-01T00:00:00+01:00",
            )
        })
}

pub fn organization(record: OrganizationRecord) -> Organization {
    Organization {
        created_at: timestamp(record.created_at_ms, "UTC"),
        location_count: u32::try_from(record.location_count).unwrap_or(u32::MAX),
        id: record.id,
        name: record.name,
    }
}

pub fn location(record: LocationRecord) -> Location {
    Location {
        created_at: timestamp(record.created_at_ms, &record.timezone),
        address: Address {
            line1: record.line1,
            city: record.city,
            postal_code: record.postal_code,
            country: record.country,
        },
        id: record.id,
        name: record.name,
        organization_id: record.organization_id,
        organization_name: record.organization_name,
        timezone: record.timezone,
        currency: record.currency,
    }
}

pub fn order(
    record: OrderRecord,
    lines: Vec<OrderLineRecord>,
    locale: Locale,
) -> Result<Order, DomainError> {
    let status = OrderStatus::parse(&record.status)
        .ok_or_else(|| DomainError::Internal(format!("unknown order status {}", record.status)))?;
    let fulfillment = Fulfillment::parse(&record.fulfillment).ok_or_else(|| {
        DomainError::Internal(format!("unknown fulfillment {}", record.fulfillment))
    })?;
    let currency = record.currency.as_str();
    let lines = lines
        .into_iter()
        .map(|line| OrderLine {
            quantity: u32::try_from(line.quantity).unwrap_or(0),
            unit_price: Money::new(line.unit_price_minor, currency, locale),
            line_total: Money::new(line.unit_price_minor * line.quantity, currency, locale),
            item_id: line.item_id,
            item_name: line.item_name,
        })
        .collect();
    Ok(Order {
        status_label: status.label(locale).to_owned(),
        fulfillment_label: fulfillment.label(locale).to_owned(),
        total: Money::new(record.total_minor, currency, locale),
        created_at: timestamp(record.created_at_ms, &record.timezone),
        updated_at: timestamp(record.updated_at_ms, &record.timezone),
        lines,
        status,
        fulfillment,
        id: record.id,
        number: record.number,
        location_id: record.location_id,
        location_name: record.location_name,
        customer_id: record.customer_id,
        customer_name: record.customer_name,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_carry_the_location_offset() {
        // 2026-07-01T12:00:00Z
        let ms = 1_782_907_200_000;
        assert_eq!(timestamp(ms, "Europe/Paris"), "2026-07-01T14:00:00+02:00");
        assert_eq!(
            timestamp(ms, "America/New_York"),
            "2026-07-01T08:00:00-04:00"
        );
        assert_eq!(timestamp(ms, "Not/AZone"), "2026-07-01T12:00:00+00:00");
        assert_eq!(
            parse_timestamp("f", "2026-07-01T14:00:00+02:00").unwrap(),
            ms
        );
        assert!(parse_timestamp("f", "2026-07-01").is_err());
    }
}
