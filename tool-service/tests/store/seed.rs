//! Properties of the generated data sets: the demo tenants with their exact
//! IDs, determinism, unique IDs, plausible orders, statuses and conversations.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{HashMap, HashSet};

use chataigne_common::demo;
use chataigne_tools::store::seed::{DAY_MS, DataSet, SeedSpec};
use chrono::{TimeZone, Timelike};

/// Saturday 14 June 2025, 19:30 UTC.
const NOW_MS: i64 = 1_749_929_400_000;

fn unique<'a>(mut ids: impl Iterator<Item = &'a String>) -> bool {
    let mut seen = HashSet::new();
    ids.all(|id| seen.insert(id.as_str()))
}

#[test]
fn demo_set_has_the_demo_tenants_and_a_year_of_orders() {
    let data = DataSet::generate(&SeedSpec::demo(NOW_MS));
    let orgs: Vec<&str> = data.organizations.iter().map(|o| o.id.as_str()).collect();
    assert_eq!(orgs, [demo::ORG_BISTRO, demo::ORG_HARBOR]);
    assert_eq!(data.locations.len(), demo::LOCATIONS.len());
    for (row, expected) in data.locations.iter().zip(demo::LOCATIONS) {
        assert_eq!(row.id, expected.id);
        assert_eq!(row.organization_id, expected.organization_id);
        assert_eq!(row.name, expected.name);
        assert_eq!(row.timezone, expected.timezone);
        assert_eq!(row.currency, expected.currency);
    }
    assert_eq!(data.customers.len(), 150 * 2);
    for location in &data.locations {
        let items = data
            .items
            .iter()
            .filter(|i| i.location_id == location.id)
            .count();
        assert!(
            (25..=40).contains(&items),
            "{items} items at {}",
            location.id
        );
        let orders = data
            .orders
            .iter()
            .filter(|o| o.location_id == location.id)
            .count();
        let per_day = orders as f64 / 365.0;
        assert!((20.0..30.0).contains(&per_day), "{per_day} orders a day");
        let conversations: Vec<_> = data
            .conversations
            .iter()
            .filter(|c| c.location_id == location.id)
            .collect();
        assert_eq!(conversations.len(), 20);
        let longest = conversations
            .iter()
            .map(|c| {
                data.messages
                    .iter()
                    .filter(|m| m.conversation_id == c.id)
                    .count()
            })
            .max()
            .unwrap();
        assert!(longest > 100);
    }
    assert!(data.orders.iter().all(|o| o.created_at_ms <= NOW_MS));
    assert!(
        data.orders
            .iter()
            .all(|o| o.updated_at_ms >= o.created_at_ms)
    );
    assert!(data.messages.iter().all(|m| m.created_at_ms <= NOW_MS));
    assert!(
        data.orders
            .iter()
            .all(|o| o.created_at_ms > NOW_MS - 366 * DAY_MS)
    );
}

#[test]
fn statuses_are_completed_in_the_past_and_in_progress_now() {
    let data = DataSet::generate(&SeedSpec::demo(NOW_MS));
    let mut by_status: HashMap<&str, usize> = HashMap::new();
    for order in &data.orders {
        *by_status.entry(order.status.as_str()).or_default() += 1;
    }
    let completed = by_status["completed"] as f64 / data.orders.len() as f64;
    assert!(completed > 0.9, "mostly completed: {completed}");
    assert!(by_status["cancelled"] > 0);
    for status in ["received", "accepted", "preparing", "ready"] {
        assert!(by_status.get(status).is_some_and(|n| *n > 0), "{status}");
    }
    let old = NOW_MS - 2 * DAY_MS;
    assert!(
        data.orders
            .iter()
            .filter(|o| o.created_at_ms < old)
            .all(|o| o.status == "completed" || o.status == "cancelled")
    );
    assert!(
        data.orders
            .iter()
            .filter(|o| o.status == "out_for_delivery")
            .all(|o| o.fulfillment == "delivery")
    );
}

#[test]
fn orders_fall_in_service_hours_and_lines_add_up() {
    let data = DataSet::generate(&SeedSpec {
        days: 30,
        ..SeedSpec::demo(NOW_MS)
    });
    let zones: HashMap<&str, chrono_tz::Tz> = data
        .locations
        .iter()
        .map(|l| (l.id.as_str(), l.timezone.parse().unwrap()))
        .collect();
    for order in &data.orders {
        let local = zones[order.location_id.as_str()]
            .timestamp_millis_opt(order.created_at_ms)
            .unwrap();
        let minute = local.hour() * 60 + local.minute();
        assert!(
            (11 * 60 + 30..14 * 60 + 30).contains(&minute)
                || (18 * 60 + 30..22 * 60 + 30).contains(&minute),
            "{} at {local}",
            order.id
        );
    }
    let mut totals: HashMap<&str, (i64, Vec<i64>)> = HashMap::new();
    for line in &data.order_lines {
        let entry = totals.entry(line.order_id.as_str()).or_default();
        entry.0 += line.quantity * line.unit_price_minor;
        entry.1.push(line.line_no);
    }
    for order in &data.orders {
        let (total, line_nos) = &totals[order.id.as_str()];
        assert_eq!(*total, order.total_minor);
        assert!((1..=4).contains(&line_nos.len()));
        assert_eq!(*line_nos, (1..=line_nos.len() as i64).collect::<Vec<_>>());
    }
}

#[test]
fn generation_is_deterministic_with_unique_prefixed_ids() {
    let spec = SeedSpec {
        now_ms: NOW_MS,
        days: 3,
        orders_per_location_per_day: 25,
        extra_locations: 7,
        seed: 9,
    };
    let a = DataSet::generate(&spec);
    let b = DataSet::generate(&spec);
    assert_eq!(a, b);
    let other = DataSet::generate(&SeedSpec { seed: 10, ..spec });
    assert_ne!(a.orders, other.orders);

    assert_eq!(a.locations.len(), 5 + 7);
    let checks: [(&str, Vec<&String>); 7] = [
        ("org_", a.organizations.iter().map(|r| &r.id).collect()),
        ("loc_", a.locations.iter().map(|r| &r.id).collect()),
        ("cus_", a.customers.iter().map(|r| &r.id).collect()),
        ("itm_", a.items.iter().map(|r| &r.id).collect()),
        ("ord_", a.orders.iter().map(|r| &r.id).collect()),
        ("conv_", a.conversations.iter().map(|r| &r.id).collect()),
        ("msg_", a.messages.iter().map(|r| &r.id).collect()),
    ];
    for (prefix, ids) in checks {
        assert!(ids.iter().all(|id| id.starts_with(prefix)), "{prefix}");
        assert!(unique(ids.into_iter()), "{prefix} IDs are unique");
    }
    // Orders of a day keep their IDs and content when generated on a later day.
    let later = DataSet::generate(&SeedSpec {
        now_ms: NOW_MS + DAY_MS,
        ..spec
    });
    let old = a
        .orders
        .iter()
        .rev()
        .find(|o| o.created_at_ms < NOW_MS - DAY_MS)
        .unwrap();
    let same = later.orders.iter().find(|o| o.id == old.id).unwrap();
    assert_eq!(same, old);
}
