//! A location's order history: lunch and dinner services in the location's
//! timezone, busier at weekends; older orders completed (a few cancelled), the
//! newest ones spread over the active statuses; one to four lines each.

use chrono::{Datelike, Days, NaiveDate, TimeZone};
use chrono_tz::Tz;

use super::rng::Rng;
use super::rows::{CustomerRow, ItemRow, LocationRow, OrderLineRow, OrderRow};
use super::{SeedSpec, tag};

const MINUTE_MS: i64 = 60_000;

/// Orders this recent, or among this many newest, are still in progress.
const ACTIVE_AGE_MS: i64 = 2 * 60 * MINUTE_MS;
const ACTIVE_NEWEST: usize = 6;

/// Statuses of in-progress orders, newest first.
const ACTIVE_STATUSES: [&str; 8] = [
    "received",
    "received",
    "accepted",
    "preparing",
    "preparing",
    "ready",
    "ready",
    "out_for_delivery",
];

/// Relative traffic by weekday, Monday first (averages to 1).
const WEEKDAY_LOAD: [u32; 7] = [85, 90, 95, 100, 115, 120, 95];

pub(super) fn for_location(
    spec: &SeedSpec,
    location: &LocationRow,
    items: &[ItemRow],
    customers: &[CustomerRow],
    orders: &mut Vec<OrderRow>,
    lines: &mut Vec<OrderLineRow>,
) {
    if items.is_empty() || customers.is_empty() {
        return;
    }
    let tz: Tz = location.timezone.parse().unwrap_or(Tz::UTC);
    let Some(today) = tz
        .timestamp_millis_opt(spec.now_ms)
        .single()
        .map(|t| t.date_naive())
    else {
        return;
    };
    let first = orders.len();
    let code = number_prefix(&location.city);
    for back in (0..u64::from(spec.days)).rev() {
        let Some(date) = today.checked_sub_days(Days::new(back)) else {
            continue;
        };
        let day = date.format("%Y%m%d").to_string();
        let mut rng = Rng::derive(spec.seed, &["orders", &location.id, &day]);
        let mut times = service_times(&mut rng, tz, date, spec.orders_per_location_per_day);
        times.sort_unstable();
        for (n, created) in times.into_iter().enumerate() {
            if created > spec.now_ms {
                break;
            }
            let id = format!("ord_{}_{day}_{:03}", tag(&location.id), n + 1);
            let total = add_lines(&mut rng, &id, items, lines);
            let customer = if rng.percent(60) {
                rng.pick(&customers[..customers.len().min(40)])
            } else {
                rng.pick(customers)
            };
            let fulfillment = match rng.below(100) {
                0..35 => "delivery",
                35..80 => "pickup",
                _ => "dine_in",
            };
            let status = if rng.percent(3) {
                "cancelled"
            } else {
                "completed"
            };
            orders.push(OrderRow {
                id,
                number: format!("{code}-{}-{:03}", &day[2..], n + 1),
                organization_id: location.organization_id.clone(),
                location_id: location.id.clone(),
                customer_id: customer.id.clone(),
                status: status.to_owned(),
                fulfillment: fulfillment.to_owned(),
                currency: location.currency.clone(),
                total_minor: total,
                created_at_ms: created,
                updated_at_ms: (created + rng.range(20, 75) * MINUTE_MS).min(spec.now_ms),
            });
        }
    }
    mark_in_progress(spec.now_ms, &mut orders[first..]);
}

/// Creation times of one day's orders: 40 % at lunch (11:30–14:30), the rest
/// at dinner (18:30–22:30), local time.
fn service_times(rng: &mut Rng, tz: Tz, date: NaiveDate, per_day: u32) -> Vec<i64> {
    let load = WEEKDAY_LOAD[date.weekday().num_days_from_monday() as usize];
    let base = u64::from(per_day) * u64::from(load) / 100;
    let count = base * 9 / 10 + rng.below(base / 5 + 1);
    (0..count)
        .filter_map(|_| {
            let minute = if rng.percent(40) {
                rng.range(11 * 60 + 30, 14 * 60 + 30)
            } else {
                rng.range(18 * 60 + 30, 22 * 60 + 30)
            };
            let local = date.and_hms_opt(
                (minute / 60) as u32,
                (minute % 60) as u32,
                rng.below(60) as u32,
            )?;
            tz.from_local_datetime(&local)
                .earliest()
                .map(|t| t.timestamp_millis())
        })
        .collect()
}

/// Adds one to four lines to `order_id`; returns the order total.
fn add_lines(
    rng: &mut Rng,
    order_id: &str,
    items: &[ItemRow],
    lines: &mut Vec<OrderLineRow>,
) -> i64 {
    let count = match rng.below(100) {
        0..35 => 1,
        35..70 => 2,
        70..90 => 3,
        _ => 4,
    };
    let mut total = 0;
    for line_no in 1..=count {
        let item = rng.pick(items);
        let quantity = match rng.below(100) {
            0..75 => 1,
            75..95 => 2,
            _ => 3,
        };
        total += item.price_minor * quantity;
        lines.push(OrderLineRow {
            order_id: order_id.to_owned(),
            line_no,
            item_id: item.id.clone(),
            item_name: item.name.clone(),
            quantity,
            unit_price_minor: item.price_minor,
        });
    }
    total
}

/// Moves the newest orders of one location (oldest first in `orders`) to the
/// in-progress statuses.
fn mark_in_progress(now_ms: i64, orders: &mut [OrderRow]) {
    for (rank, order) in orders.iter_mut().rev().enumerate() {
        if rank >= ACTIVE_NEWEST && now_ms - order.created_at_ms >= ACTIVE_AGE_MS {
            break;
        }
        let mut status = ACTIVE_STATUSES[rank.min(ACTIVE_STATUSES.len() - 1)];
        if status == "out_for_delivery" && order.fulfillment != "delivery" {
            status = "ready";
        }
        order.status = status.to_owned();
        order.updated_at_ms = (order.created_at_ms + (rank as i64 % 8 + 1) * 4 * MINUTE_MS)
            .min(now_ms)
            .max(order.created_at_ms);
    }
}

/// "PAR" for Paris: the first three letters of the city, upper case.
fn number_prefix(city: &str) -> String {
    let letters: String = super::people::ascii_lower(city)
        .chars()
        .filter(char::is_ascii_alphabetic)
        .take(3)
        .collect();
    letters.to_ascii_uppercase()
}
