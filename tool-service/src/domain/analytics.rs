//! Analytics over a location's pre-aggregated daily metrics: the metric and
//! bucket vocabularies, the date-range rules (at most 366 days), bucket starts
//! in the location's calendar, and metric values derived from summed counters.

use chrono::{Datelike, Days, Months, NaiveDate};
use serde::{Deserialize, Serialize};

use super::{DomainError, Money};
use crate::domain::Locale;

/// At most this many metrics per query (seed 001).
pub const MAX_METRICS: usize = 8;
/// At most this many days, both ends included, per query (seed 001).
pub const MAX_RANGE_DAYS: i64 = 366;

/// A metric of the analytics query: orders_count (orders placed and not
/// cancelled), revenue (sum of their totals, money), average_order_value
/// (revenue / orders_count, money), cancelled_count, completed_count (orders),
/// items_sold (units on the lines of orders not cancelled), new_customers
/// (customers whose first order at the location falls in the bucket),
/// delivery_share and pickup_share (percent of orders not cancelled).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Metric {
    OrdersCount,
    Revenue,
    AverageOrderValue,
    CancelledCount,
    CompletedCount,
    ItemsSold,
    NewCustomers,
    DeliveryShare,
    PickupShare,
}

/// The width of a result bucket in the location's calendar: a day, an ISO
/// week (Monday to Sunday) or a calendar month.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Bucket {
    Day,
    Week,
    Month,
}

impl Bucket {
    pub fn as_str(self) -> &'static str {
        match self {
            Bucket::Day => "day",
            Bucket::Week => "week",
            Bucket::Month => "month",
        }
    }

    /// First day of the bucket containing `date`.
    pub fn start_of(self, date: NaiveDate) -> NaiveDate {
        match self {
            Bucket::Day => date,
            Bucket::Week => date - Days::new(u64::from(date.weekday().num_days_from_monday())),
            Bucket::Month => date.with_day(1).unwrap_or(date),
        }
    }

    fn next(self, start: NaiveDate) -> Option<NaiveDate> {
        match self {
            Bucket::Day => start.checked_add_days(Days::new(1)),
            Bucket::Week => start.checked_add_days(Days::new(7)),
            Bucket::Month => start.checked_add_months(Months::new(1)),
        }
    }

    /// Starts of every bucket overlapping `from..=to`, oldest first.
    pub fn starts(self, from: NaiveDate, to: NaiveDate) -> Vec<NaiveDate> {
        let mut starts = Vec::new();
        let mut current = Some(self.start_of(from));
        while let Some(start) = current.filter(|s| *s <= to) {
            starts.push(start);
            current = self.next(start);
        }
        starts
    }
}

/// A validated date range, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateRange {
    pub from: NaiveDate,
    pub to: NaiveDate,
}

impl DateRange {
    /// Parses ISO 8601 dates and checks order and length.
    pub fn parse(from: &str, to: &str) -> Result<DateRange, DomainError> {
        let parse = |field: &str, value: &str| {
            // Exactly YYYY-MM-DD: chrono alone would also take "2026-3-1".
            let strict =
                value.len() == 10 && value.as_bytes()[4] == b'-' && value.as_bytes()[7] == b'-';
            strict
                .then(|| NaiveDate::parse_from_str(value, "%Y-%m-%d").ok())
                .flatten()
                .ok_or_else(|| {
                    DomainError::invalid(field, "expected an ISO 8601 date, e.g. 2026-03-01")
                })
        };
        let range = DateRange {
            from: parse("date_from", from)?,
            to: parse("date_to", to)?,
        };
        if range.to < range.from {
            return Err(DomainError::invalid(
                "date_to",
                "must not be before date_from",
            ));
        }
        if range.days() > MAX_RANGE_DAYS {
            return Err(DomainError::invalid(
                "date_to",
                format!("the range covers at most {MAX_RANGE_DAYS} days"),
            ));
        }
        Ok(range)
    }

    /// Days in the range, both ends included.
    pub fn days(&self) -> i64 {
        (self.to - self.from).num_days() + 1
    }

    /// Refuses a range reaching past `today` (the location's calendar day in
    /// `timezone`), stating the range allowed: figures of days to come would
    /// read as silent zeros.
    pub fn check_not_after(&self, today: NaiveDate, timezone: &str) -> Result<(), DomainError> {
        let field = if self.from > today {
            "date_from"
        } else if self.to > today {
            "date_to"
        } else {
            return Ok(());
        };
        let earliest = today
            .checked_sub_days(Days::new(MAX_RANGE_DAYS as u64 - 1))
            .unwrap_or(today);
        Err(DomainError::invalid(
            field,
            format!(
                "must not be after today, {today} in the location's timezone ({timezone}); \
                 dates up to {today} are allowed, e.g. date_from {earliest} to date_to {today} \
                 at most"
            ),
        ))
    }

    /// The period of the same length just before this one.
    pub fn previous(&self) -> Option<DateRange> {
        let days = u64::try_from(self.days()).ok()?;
        Some(DateRange {
            from: self.from.checked_sub_days(Days::new(days))?,
            to: self.from.checked_sub_days(Days::new(1))?,
        })
    }
}

/// The change of one metric against the previous period of the same length.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MetricChange {
    /// The metric; the output lists changes in the order of `metrics`.
    #[serde(skip)]
    #[schemars(skip)]
    pub metric: Metric,
    #[serde(skip)]
    #[schemars(skip)]
    pub metric_label: String,
    /// The value over the period minus the previous one (`totals`, `previous_totals`): a count, money in minor units, or percentage points for shares.
    pub absolute: f64,
    /// The change in percent of the previous value, one decimal; null when the previous value is 0.
    pub percent: Option<f64>,
    /// The change for people, e.g. "+12 (+8.5%)", "-€40.00 (-3.1%)", "+2.5 pts":
    /// in the text and the typed API.
    #[serde(skip)]
    #[schemars(skip)]
    pub display: String,
}

/// The change of each of `metrics` from `previous` to `current` (money in
/// `currency`, displayed for `locale`).
pub fn changes(
    metrics: &[Metric],
    current: &MetricValues,
    previous: &MetricValues,
    currency: &str,
    locale: Locale,
) -> Vec<MetricChange> {
    metrics
        .iter()
        .filter_map(|&metric| {
            let (now, before) = (current.number(metric)?, previous.number(metric)?);
            let absolute = ((now - before) * 10.0).round() / 10.0;
            let percent =
                (before != 0.0).then(|| ((now - before) * 1000.0 / before).round() / 10.0);
            let sign = |v: f64| if v > 0.0 { "+" } else { "" };
            let amount = match metric {
                Metric::Revenue | Metric::AverageOrderValue => {
                    let money = Money::new(absolute as i64, currency, locale);
                    format!("{}{}", sign(absolute), money.display)
                }
                Metric::DeliveryShare | Metric::PickupShare => {
                    format!("{}{absolute} pts", sign(absolute))
                }
                _ => format!("{}{absolute}", sign(absolute)),
            };
            let display = match percent {
                Some(p) => format!("{amount} ({}{p}%)", sign(p)),
                None => amount,
            };
            Some(MetricChange {
                metric,
                metric_label: metric.label(locale).to_owned(),
                absolute,
                percent,
                display,
            })
        })
        .collect()
}

/// Checks the metric list: 1 to 8 metrics, each once.
pub fn check_metrics(metrics: &[Metric]) -> Result<(), DomainError> {
    if metrics.is_empty() || metrics.len() > MAX_METRICS {
        return Err(DomainError::invalid(
            "metrics",
            format!("between 1 and {MAX_METRICS} metrics"),
        ));
    }
    for (i, metric) in metrics.iter().enumerate() {
        if metrics[..i].contains(metric) {
            return Err(DomainError::invalid("metrics", "each metric at most once"));
        }
    }
    Ok(())
}

/// Counters summed over a bucket, as the daily rollup stores them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetricSums {
    pub orders_count: i64,
    pub cancelled_count: i64,
    pub completed_count: i64,
    pub revenue_minor: i64,
    pub items_sold: i64,
    pub new_customers: i64,
    pub delivery_count: i64,
    pub pickup_count: i64,
}

impl std::ops::AddAssign for MetricSums {
    fn add_assign(&mut self, other: MetricSums) {
        self.orders_count += other.orders_count;
        self.cancelled_count += other.cancelled_count;
        self.completed_count += other.completed_count;
        self.revenue_minor += other.revenue_minor;
        self.items_sold += other.items_sold;
        self.new_customers += other.new_customers;
        self.delivery_count += other.delivery_count;
        self.pickup_count += other.pickup_count;
    }
}

/// The requested metrics of one bucket; metrics not requested are absent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, schemars::JsonSchema)]
pub struct MetricValues {
    /// Orders placed and not cancelled, a count of orders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub orders_count: Option<u64>,
    /// Sum of the totals of orders not cancelled, in the location's currency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub revenue: Option<Money>,
    /// Revenue divided by orders_count, rounded to the minor unit; zero without orders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub average_order_value: Option<Money>,
    /// Orders cancelled, a count of orders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cancelled_count: Option<u64>,
    /// Orders now completed, a count of orders.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_count: Option<u64>,
    /// Units on the lines of orders not cancelled, a count of items.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items_sold: Option<u64>,
    /// Customers whose first order at the location falls in the bucket, a count of customers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new_customers: Option<u64>,
    /// Delivery orders among orders not cancelled, percent from 0 to 100 with one decimal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delivery_share: Option<f64>,
    /// Pickup orders among orders not cancelled, percent from 0 to 100 with one decimal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pickup_share: Option<f64>,
}

impl MetricValues {
    /// The values of `metrics` from `sums`, money in `currency` for `locale`.
    pub fn from_sums(
        metrics: &[Metric],
        sums: &MetricSums,
        currency: &str,
        locale: Locale,
    ) -> MetricValues {
        let count = |n: i64| Some(u64::try_from(n).unwrap_or(0));
        let share = |part: i64| {
            let percent = if sums.orders_count > 0 {
                part as f64 * 100.0 / sums.orders_count as f64
            } else {
                0.0
            };
            Some((percent * 10.0).round() / 10.0)
        };
        let mut values = MetricValues::default();
        for metric in metrics {
            match metric {
                Metric::OrdersCount => values.orders_count = count(sums.orders_count),
                Metric::Revenue => {
                    values.revenue = Some(Money::new(sums.revenue_minor, currency, locale));
                }
                Metric::AverageOrderValue => {
                    let average = if sums.orders_count > 0 {
                        (sums.revenue_minor as f64 / sums.orders_count as f64).round() as i64
                    } else {
                        0
                    };
                    values.average_order_value = Some(Money::new(average, currency, locale));
                }
                Metric::CancelledCount => values.cancelled_count = count(sums.cancelled_count),
                Metric::CompletedCount => values.completed_count = count(sums.completed_count),
                Metric::ItemsSold => values.items_sold = count(sums.items_sold),
                Metric::NewCustomers => values.new_customers = count(sums.new_customers),
                Metric::DeliveryShare => values.delivery_share = share(sums.delivery_count),
                Metric::PickupShare => values.pickup_share = share(sums.pickup_count),
            }
        }
        values
    }

    /// The value of `metric` for people ("1 234", "12,50 €", "33.3 %"), when
    /// it was requested.
    pub fn display(&self, metric: Metric, locale: Locale) -> Option<String> {
        let fr = locale == Locale::Fr;
        let count = |n: u64| {
            let digits = n.to_string();
            let mut grouped = String::new();
            for (i, c) in digits.chars().enumerate() {
                if i > 0 && (digits.len() - i).is_multiple_of(3) {
                    grouped.push(if fr { '\u{202f}' } else { ',' });
                }
                grouped.push(c);
            }
            grouped
        };
        let percent = |p: f64| {
            if fr {
                format!("{} %", p.to_string().replace('.', ","))
            } else {
                format!("{p}%")
            }
        };
        match metric {
            Metric::OrdersCount => self.orders_count.map(count),
            Metric::Revenue => self.revenue.as_ref().map(|m| m.display.clone()),
            Metric::AverageOrderValue => {
                self.average_order_value.as_ref().map(|m| m.display.clone())
            }
            Metric::CancelledCount => self.cancelled_count.map(count),
            Metric::CompletedCount => self.completed_count.map(count),
            Metric::ItemsSold => self.items_sold.map(count),
            Metric::NewCustomers => self.new_customers.map(count),
            Metric::DeliveryShare => self.delivery_share.map(percent),
            Metric::PickupShare => self.pickup_share.map(percent),
        }
    }

    /// The value of `metric` as a number, when it was requested: a count,
    /// money in minor units, or a percent.
    pub fn number(&self, metric: Metric) -> Option<f64> {
        let count = |n: Option<u64>| n.map(|n| n as f64);
        match metric {
            Metric::OrdersCount => count(self.orders_count),
            Metric::Revenue => self.revenue.as_ref().map(|m| m.amount_minor as f64),
            Metric::AverageOrderValue => self
                .average_order_value
                .as_ref()
                .map(|m| m.amount_minor as f64),
            Metric::CancelledCount => count(self.cancelled_count),
            Metric::CompletedCount => count(self.completed_count),
            Metric::ItemsSold => count(self.items_sold),
            Metric::NewCustomers => count(self.new_customers),
            Metric::DeliveryShare => self.delivery_share,
            Metric::PickupShare => self.pickup_share,
        }
    }

    /// "orders 1,234 · revenue €12.50" for `metrics`, in their order.
    pub fn line(&self, metrics: &[Metric], locale: Locale) -> String {
        let separator = locale.pick(" : ", " ");
        metrics
            .iter()
            .filter_map(|&metric| {
                self.display(metric, locale)
                    .map(|value| format!("{}{separator}{value}", metric.label(locale)))
            })
            .collect::<Vec<_>>()
            .join(" · ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn date(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap()
    }

    #[test]
    fn a_range_after_today_in_the_locations_calendar_is_refused_with_the_range_allowed() {
        let today = NaiveDate::from_ymd_opt(2026, 12, 7).unwrap();
        let range = DateRange::parse("2026-12-01", "2026-12-08").unwrap();
        let Err(DomainError::InvalidArguments(violations)) =
            range.check_not_after(today, "Europe/Paris")
        else {
            panic!("tomorrow is refused")
        };
        assert_eq!(violations[0].field, "date_to");
        assert_eq!(
            violations[0].description,
            "must not be after today, 2026-12-07 in the location's timezone (Europe/Paris); \
             dates up to 2026-12-07 are allowed, e.g. date_from 2025-12-07 to date_to \
             2026-12-07 at most"
        );
        let ahead = DateRange::parse("2026-12-08", "2026-12-09").unwrap();
        let Err(DomainError::InvalidArguments(violations)) =
            ahead.check_not_after(today, "Europe/Paris")
        else {
            panic!("a range wholly ahead is refused")
        };
        assert_eq!(violations[0].field, "date_from");
        assert!(
            DateRange::parse("2026-12-01", "2026-12-07")
                .unwrap()
                .check_not_after(today, "Europe/Paris")
                .is_ok()
        );
    }

    #[test]
    fn the_previous_period_has_the_same_length_and_ends_the_day_before() {
        let week = DateRange::parse("2026-11-30", "2026-12-06").unwrap();
        let previous = week.previous().unwrap();
        assert_eq!(
            previous.from,
            NaiveDate::from_ymd_opt(2026, 11, 23).unwrap()
        );
        assert_eq!(previous.to, NaiveDate::from_ymd_opt(2026, 11, 29).unwrap());
        let day = DateRange::parse("2026-03-01", "2026-03-01").unwrap();
        let previous = day.previous().unwrap();
        let eve = NaiveDate::from_ymd_opt(2026, 2, 28).unwrap();
        assert_eq!((previous.from, previous.to), (eve, eve));
    }

    #[test]
    fn changes_are_absolute_and_in_percent_without_a_percent_of_zero() {
        let metrics = [Metric::OrdersCount, Metric::Revenue, Metric::DeliveryShare];
        let now = MetricSums {
            orders_count: 120,
            revenue_minor: 150_000,
            delivery_count: 48,
            ..MetricSums::default()
        };
        let before = MetricSums {
            orders_count: 100,
            revenue_minor: 0,
            delivery_count: 30,
            ..MetricSums::default()
        };
        let values = |sums: &MetricSums| MetricValues::from_sums(&metrics, sums, "EUR", Locale::En);
        let changes = changes(&metrics, &values(&now), &values(&before), "EUR", Locale::En);
        assert_eq!(changes.len(), 3);
        assert_eq!(
            (changes[0].absolute, changes[0].percent),
            (20.0, Some(20.0))
        );
        assert_eq!(changes[0].display, "+20 (+20%)");
        assert_eq!(changes[1].absolute, 150_000.0);
        assert_eq!(changes[1].percent, None, "no percent of a previous 0");
        assert!(
            changes[1].display.starts_with('+'),
            "{}",
            changes[1].display
        );
        // Shares: 40 % against 30 %, ten points, a third more.
        assert_eq!(
            (changes[2].absolute, changes[2].percent),
            (10.0, Some(33.3))
        );
        assert_eq!(changes[2].display, "+10 pts (+33.3%)");
    }

    #[test]
    fn ranges_are_bounded_to_366_days() {
        assert_eq!(
            DateRange::parse("2024-01-01", "2024-12-31").unwrap().days(),
            366
        );
        assert!(DateRange::parse("2025-01-01", "2026-01-02").is_err());
        assert!(DateRange::parse("2025-01-02", "2025-01-01").is_err());
        assert!(DateRange::parse("2025-1-2", "2025-01-03").is_err());
    }

    #[test]
    fn metrics_are_one_to_eight_distinct() {
        assert!(check_metrics(&[]).is_err());
        assert!(check_metrics(&[Metric::Revenue, Metric::Revenue]).is_err());
        assert!(check_metrics(&[Metric::Revenue, Metric::OrdersCount]).is_ok());
    }

    #[test]
    fn buckets_start_on_mondays_and_firsts() {
        // 2026-03-04 is a Wednesday.
        assert_eq!(
            Bucket::Week.start_of(date("2026-03-04")),
            date("2026-03-02")
        );
        assert_eq!(
            Bucket::Month.start_of(date("2026-03-04")),
            date("2026-03-01")
        );
        let weeks = Bucket::Week.starts(date("2026-03-04"), date("2026-03-16"));
        assert_eq!(
            weeks,
            vec![date("2026-03-02"), date("2026-03-09"), date("2026-03-16")]
        );
        assert_eq!(
            Bucket::Month
                .starts(date("2026-01-31"), date("2026-03-01"))
                .len(),
            3
        );
    }

    #[test]
    fn value_keys_are_the_metric_names() {
        let all = [
            Metric::OrdersCount,
            Metric::Revenue,
            Metric::AverageOrderValue,
            Metric::CancelledCount,
            Metric::CompletedCount,
            Metric::ItemsSold,
            Metric::NewCustomers,
            Metric::DeliveryShare,
            Metric::PickupShare,
        ];
        let values = MetricValues::from_sums(&all, &MetricSums::default(), "EUR", Locale::En);
        let keys: Vec<String> = serde_json::to_value(&values)
            .unwrap()
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect();
        let mut names: Vec<String> = all
            .iter()
            .map(|m| {
                serde_json::to_value(m)
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        names.sort();
        let mut keys = keys;
        keys.sort();
        assert_eq!(keys, names);
    }

    #[test]
    fn lines_show_each_value_for_people() {
        let sums = MetricSums {
            orders_count: 1234,
            revenue_minor: 1_234_550,
            delivery_count: 400,
            ..MetricSums::default()
        };
        let metrics = [Metric::OrdersCount, Metric::Revenue, Metric::DeliveryShare];
        let values = MetricValues::from_sums(&metrics, &sums, "EUR", Locale::Fr);
        assert_eq!(
            values.line(&metrics, Locale::Fr),
            "commandes : 1\u{202f}234 · chiffre d'affaires : 12\u{202f}345,50 € · part livraison : 32,4 %"
        );
        let values = MetricValues::from_sums(&metrics, &sums, "USD", Locale::En);
        assert_eq!(
            values.line(&metrics, Locale::En),
            "orders 1,234 · revenue $12,345.50 · delivery share 32.4%"
        );
    }

    #[test]
    fn derived_values_handle_empty_buckets() {
        let sums = MetricSums {
            orders_count: 3,
            revenue_minor: 1000,
            delivery_count: 1,
            ..MetricSums::default()
        };
        let values = MetricValues::from_sums(
            &[Metric::AverageOrderValue, Metric::DeliveryShare],
            &sums,
            "EUR",
            Locale::Fr,
        );
        assert_eq!(values.average_order_value.unwrap().amount_minor, 333);
        assert_eq!(values.delivery_share, Some(33.3));
        assert!(values.revenue.is_none());
        let empty = MetricValues::from_sums(
            &[Metric::AverageOrderValue, Metric::PickupShare],
            &MetricSums::default(),
            "EUR",
            Locale::En,
        );
        assert_eq!(empty.average_order_value.unwrap().amount_minor, 0);
        assert_eq!(empty.pickup_share, Some(0.0));
    }
}
