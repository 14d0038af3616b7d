//! A location's calendar: the UTC bounds, in Unix milliseconds, of each local
//! day (midnight to midnight in the location's timezone, 23 or 25 hours long
//! on daylight-saving changes), so SQL can group orders by local day.

use chrono::{DateTime, Days, NaiveDate, TimeZone};
use chrono_tz::Tz;

/// One local day of one location.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalDay {
    pub location_id: String,
    /// ISO 8601 date, e.g. "2026-03-29".
    pub local_date: String,
    /// Inclusive start.
    pub start_ms: i64,
    /// Exclusive end: the start of the next day.
    pub end_ms: i64,
}

/// Every local day of `location_id` from the one containing `first_ms` to the
/// one containing `last_ms` (UTC when `timezone` is unknown).
pub fn local_days(location_id: &str, timezone: &str, first_ms: i64, last_ms: i64) -> Vec<LocalDay> {
    let tz: Tz = timezone.parse().unwrap_or(Tz::UTC);
    let date_of =
        |ms: i64| DateTime::from_timestamp_millis(ms).map(|t| t.with_timezone(&tz).date_naive());
    let (Some(first), Some(last)) = (date_of(first_ms), date_of(last_ms)) else {
        return Vec::new();
    };
    let mut days = Vec::new();
    let mut date = first;
    while date <= last {
        let Some(next) = date.checked_add_days(Days::new(1)) else {
            break;
        };
        if let (Some(start_ms), Some(end_ms)) = (midnight(tz, date), midnight(tz, next)) {
            days.push(LocalDay {
                location_id: location_id.to_owned(),
                local_date: date.format("%Y-%m-%d").to_string(),
                start_ms,
                end_ms,
            });
        }
        date = next;
    }
    days
}

/// The first instant of `date` in `tz` (midnight, or the first hour that
/// exists when a daylight-saving change skips midnight).
fn midnight(tz: Tz, date: NaiveDate) -> Option<i64> {
    (0..3).find_map(|hour| {
        let local = date.and_hms_opt(hour, 0, 0)?;
        tz.from_local_datetime(&local)
            .earliest()
            .map(|t| t.timestamp_millis())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn days_follow_the_location_clock() {
        // 2026-03-28T23:30:00Z is already the 29th in Paris, the spring-forward day.
        let ms = 1_774_740_600_000;
        let days = local_days("loc", "Europe/Paris", ms, ms);
        assert_eq!(days.len(), 1);
        assert_eq!(days[0].local_date, "2026-03-29");
        assert_eq!(days[0].end_ms - days[0].start_ms, 23 * 3_600_000);
        assert!(days[0].start_ms <= ms && ms < days[0].end_ms);
        let utc = local_days("loc", "Not/AZone", ms, ms + 86_400_000);
        assert_eq!(utc.len(), 2);
        assert_eq!(utc[0].local_date, "2026-03-28");
    }
}
