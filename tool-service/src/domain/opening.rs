//! Whether a location is open at an instant by its weekly opening hours, in
//! its own timezone, and when it next opens. This is not the order-taking
//! switch (`IntakeStatus`): a location may take orders while its hours mark
//! it closed (orders for later), or be paused while open.

use chrono::{Datelike, Days, NaiveDate, NaiveTime, TimeZone};
use chrono_tz::Tz;

use super::settings_sections::{OpeningHours, Weekday};

/// The opening hours at one instant, in Unix milliseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HoursAt {
    /// Within an opening period.
    pub open: bool,
    /// End of the period the instant falls in; `None` when closed.
    pub closes_at_ms: Option<i64>,
    /// Start of the next period after the instant, within a week; `None`
    /// when the hours have no period at all.
    pub next_opening_ms: Option<i64>,
}

/// The opening hours now, presented: times ISO 8601 with the location's UTC
/// offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpeningNow {
    /// Whether the location is open now by its opening hours, in its timezone.
    pub open_now: bool,
    /// End of the current opening period; absent when closed.
    pub closes_at: Option<String>,
    /// Start of the next opening period.
    pub next_opening_at: Option<String>,
}

/// "HH:MM" (24-hour) as a time of day.
fn time_of(value: &str) -> Option<NaiveTime> {
    NaiveTime::parse_from_str(value, "%H:%M").ok()
}

/// `time` on `date` in `tz`, in Unix milliseconds; a time skipped by a
/// daylight-saving change is read an hour later.
fn instant(tz: Tz, date: NaiveDate, time: NaiveTime) -> Option<i64> {
    let local = date.and_time(time);
    tz.from_local_datetime(&local)
        .earliest()
        .or_else(|| {
            tz.from_local_datetime(&(local + chrono::Duration::hours(1)))
                .earliest()
        })
        .map(|t| t.timestamp_millis())
}

impl OpeningHours {
    /// Whether `now_ms` falls in an opening period (a period whose closing
    /// time is not after its opening time ends the next day, e.g. "19:00" to
    /// "00:00"), and the next opening after it.
    pub fn at(&self, tz: Tz, now_ms: i64) -> HoursAt {
        let mut at = HoursAt {
            open: false,
            closes_at_ms: None,
            next_opening_ms: None,
        };
        let Some(today) = tz
            .timestamp_millis_opt(now_ms)
            .single()
            .map(|t| t.date_naive())
        else {
            return at;
        };
        // Yesterday (a period running past midnight) to a week ahead.
        let Some(first) = today.checked_sub_days(Days::new(1)) else {
            return at;
        };
        for offset in 0..=8 {
            let Some(date) = first.checked_add_days(Days::new(offset)) else {
                continue;
            };
            let weekday = Weekday::ALL[date.weekday().num_days_from_monday() as usize];
            let Some(day) = self.days.iter().find(|d| d.weekday == weekday) else {
                continue;
            };
            if day.closed {
                continue;
            }
            for period in &day.periods {
                let (Some(opens), Some(closes)) = (time_of(&period.opens), time_of(&period.closes))
                else {
                    continue;
                };
                let end_date = if closes <= opens {
                    date.checked_add_days(Days::new(1))
                } else {
                    Some(date)
                };
                let (Some(start), Some(end)) = (
                    instant(tz, date, opens),
                    end_date.and_then(|d| instant(tz, d, closes)),
                ) else {
                    continue;
                };
                if start <= now_ms && now_ms < end {
                    at.open = true;
                    at.closes_at_ms = Some(at.closes_at_ms.map_or(end, |e| e.max(end)));
                }
                if start > now_ms {
                    at.next_opening_ms = Some(at.next_opening_ms.map_or(start, |n| n.min(start)));
                }
            }
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::settings_sections::{DayHours, OpeningPeriod};

    /// Closed on Mondays, 12:00–14:30 and 19:00–00:00 otherwise.
    fn bistro() -> OpeningHours {
        OpeningHours {
            days: Weekday::ALL
                .into_iter()
                .map(|weekday| {
                    let periods = if weekday == Weekday::Monday {
                        Vec::new()
                    } else {
                        vec![
                            OpeningPeriod {
                                opens: "12:00".into(),
                                closes: "14:30".into(),
                            },
                            OpeningPeriod {
                                opens: "19:00".into(),
                                closes: "00:00".into(),
                            },
                        ]
                    };
                    DayHours {
                        weekday,
                        weekday_label: String::new(),
                        closed: periods.is_empty(),
                        periods,
                    }
                })
                .collect(),
        }
    }

    fn ms(tz: Tz, local: &str) -> i64 {
        let t = chrono::NaiveDateTime::parse_from_str(local, "%Y-%m-%d %H:%M").unwrap();
        tz.from_local_datetime(&t).unwrap().timestamp_millis()
    }

    #[test]
    fn a_day_marked_closed_is_closed_until_the_next_opening() {
        let paris: Tz = "Europe/Paris".parse().unwrap();
        // Monday 7 December 2026, 19:30 in Paris.
        let at = bistro().at(paris, ms(paris, "2026-12-07 19:30"));
        assert!(!at.open);
        assert_eq!(at.closes_at_ms, None);
        assert_eq!(at.next_opening_ms, Some(ms(paris, "2026-12-08 12:00")));
    }

    #[test]
    fn within_a_period_it_is_open_until_its_end_even_past_midnight() {
        let paris: Tz = "Europe/Paris".parse().unwrap();
        let lunch = bistro().at(paris, ms(paris, "2026-12-08 13:00"));
        assert!(lunch.open);
        assert_eq!(lunch.closes_at_ms, Some(ms(paris, "2026-12-08 14:30")));
        assert_eq!(lunch.next_opening_ms, Some(ms(paris, "2026-12-08 19:00")));
        let late = bistro().at(paris, ms(paris, "2026-12-08 23:30"));
        assert!(late.open);
        assert_eq!(late.closes_at_ms, Some(ms(paris, "2026-12-09 00:00")));
        // Between the periods: closed, opening at dinner.
        let between = bistro().at(paris, ms(paris, "2026-12-08 16:00"));
        assert!(!between.open);
        assert_eq!(between.next_opening_ms, Some(ms(paris, "2026-12-08 19:00")));
    }

    #[test]
    fn hours_are_read_in_the_locations_timezone() {
        let new_york: Tz = "America/New_York".parse().unwrap();
        let utc: Tz = "UTC".parse().unwrap();
        // 00:30 UTC on Wednesday is 19:30 on Tuesday in New York: dinner
        // there, while the same hours read in UTC have just closed.
        let instant = ms(utc, "2026-12-09 00:30");
        assert!(bistro().at(new_york, instant).open);
        assert!(!bistro().at(utc, instant).open);
    }

    #[test]
    fn hours_without_any_period_never_open() {
        let paris: Tz = "Europe/Paris".parse().unwrap();
        let none = OpeningHours { days: Vec::new() };
        assert_eq!(
            none.at(paris, ms(paris, "2026-12-08 13:00")),
            HoursAt {
                open: false,
                closes_at_ms: None,
                next_opening_ms: None
            }
        );
    }
}
