//! Presentation of the stored rows of a location: its order intake,
//! settings, catalog items, discounts and integrations (effective states,
//! money in the caller's locale, times with the location's UTC offset).

use serde::de::DeserializeOwned;

use super::timestamp;
use crate::domain::labels::labels_of;
use crate::domain::settings_sections::{
    AiSettings, DeliverySettingsStored, LoyaltySettingsStored, NotificationSettings, OpeningHours,
    OrderSettingsStored, PaymentMethodSettings, ReferralSettingsStored,
};
use crate::domain::{
    Availability, CatalogItem, Discount, DiscountKind, DiscountStatus, DomainError, IntakeStatus,
    Integration, IntegrationHealth, IntegrationKind, Locale, LocationSettings, LocationStatus,
    Money, OpeningNow, PauseReason, SettingsSection, in_force, percent_display,
};
use crate::store::{
    CatalogItemRecord, DiscountRecord, IntegrationRecord, LocationRecord, LocationStatusRecord,
    SettingsRecord,
};

fn corrupt(what: &str, value: &str) -> DomainError {
    DomainError::Internal(format!("unknown stored {what} {value}"))
}

pub fn location_status(
    record: LocationStatusRecord,
    now_ms: i64,
    locale: Locale,
) -> Result<LocationStatus, DomainError> {
    let stored =
        IntakeStatus::parse(&record.status).ok_or_else(|| corrupt("status", &record.status))?;
    let status = IntakeStatus::effective(stored, record.paused_until_ms, now_ms);
    let paused = status == IntakeStatus::Paused;
    let reason = record
        .pause_reason
        .as_deref()
        .filter(|_| paused)
        .and_then(PauseReason::parse);
    Ok(LocationStatus {
        status_label: status.label(locale).to_owned(),
        paused_until: record
            .paused_until_ms
            .filter(|_| paused)
            .map(|ms| timestamp(ms, &record.timezone)),
        reason_label: reason.map(|r| r.label(locale).to_owned()),
        reason,
        status,
        updated_at: timestamp(record.updated_at_ms, &record.timezone),
        location_id: record.location_id,
        location_name: record.location_name,
    })
}

pub fn catalog_item(
    record: CatalogItemRecord,
    now_ms: i64,
    locale: Locale,
) -> Result<CatalogItem, DomainError> {
    let stored = Availability::parse(&record.availability)
        .ok_or_else(|| corrupt("availability", &record.availability))?;
    let availability = Availability::effective(stored, record.available_again_at_ms, now_ms);
    Ok(CatalogItem {
        price: Money::new(record.price_minor, &record.currency, locale),
        availability_label: availability.label(locale).to_owned(),
        available_again_at: record
            .available_again_at_ms
            .filter(|_| availability == Availability::SoldOut)
            .map(|ms| timestamp(ms, &record.timezone)),
        availability,
        updated_at: timestamp(record.updated_at_ms, &record.timezone),
        id: record.id,
        name: record.name,
        description: record.description,
        location_id: record.location_id,
        location_name: record.location_name,
        category_id: record.category_id,
        category_name: record.category_name,
    })
}

pub fn discount(
    record: DiscountRecord,
    location: &LocationRecord,
    now_ms: i64,
    locale: Locale,
) -> Result<Discount, DomainError> {
    let kind = DiscountKind::parse(&record.kind).ok_or_else(|| corrupt("kind", &record.kind))?;
    let status =
        DiscountStatus::parse(&record.status).ok_or_else(|| corrupt("status", &record.status))?;
    let (percent_basis_points, amount_off, value_display) = match kind {
        DiscountKind::Percent => (
            Some(record.value),
            None,
            percent_display(record.value, locale),
        ),
        DiscountKind::Amount => {
            let money = Money::new(record.value, &location.currency, locale);
            let display = money.display.clone();
            (None, Some(money), display)
        }
    };
    Ok(Discount {
        kind_label: kind.label(locale).to_owned(),
        status_label: status.label(locale).to_owned(),
        in_force: in_force(status, record.starts_at_ms, record.ends_at_ms, now_ms),
        organization_wide: record.location_id.is_none(),
        starts_at: record
            .starts_at_ms
            .map(|ms| timestamp(ms, &location.timezone)),
        ends_at: record
            .ends_at_ms
            .map(|ms| timestamp(ms, &location.timezone)),
        id: record.id,
        name: record.name,
        code: record.code,
        kind,
        percent_basis_points,
        amount_off,
        value_display,
        status,
    })
}

pub fn integration(
    record: IntegrationRecord,
    timezone: &str,
    locale: Locale,
) -> Result<Integration, DomainError> {
    let kind = IntegrationKind::parse(&record.kind).ok_or_else(|| corrupt("kind", &record.kind))?;
    let health = IntegrationHealth::from_stored(&record.health)
        .ok_or_else(|| corrupt("health", &record.health))?;
    Ok(Integration {
        kind_label: kind.label(locale).to_owned(),
        health_label: health.label(locale).to_owned(),
        organization_wide: record.location_id.is_none(),
        last_sync_at: record.last_sync_at_ms.map(|ms| timestamp(ms, timezone)),
        id: record.id,
        name: record.name,
        kind,
        health,
    })
}

/// Whether the location is open at `now_ms` by the opening hours among
/// `records` (in `timezone`), and when it next opens; `None` without hours.
pub fn opening_now(
    records: &[SettingsRecord],
    timezone: &str,
    now_ms: i64,
) -> Result<Option<OpeningNow>, DomainError> {
    let Some(record) = records
        .iter()
        .find(|r| SettingsSection::parse(&r.section) == Some(SettingsSection::OpeningHours))
    else {
        return Ok(None);
    };
    let hours: OpeningHours = body(record)?;
    let tz: chrono_tz::Tz = timezone
        .parse()
        .map_err(|_| corrupt("timezone", timezone))?;
    let at = hours.at(tz, now_ms);
    Ok(Some(OpeningNow {
        open_now: at.open,
        closes_at: at.closes_at_ms.map(|ms| timestamp(ms, timezone)),
        next_opening_at: at.next_opening_ms.map(|ms| timestamp(ms, timezone)),
    }))
}

fn body<T: DeserializeOwned>(record: &SettingsRecord) -> Result<T, DomainError> {
    serde_json::from_str(&record.body)
        .map_err(|e| DomainError::Internal(format!("settings section {}: {e}", record.section)))
}

/// The stored sections of `location`, presented; sections not in `records` stay absent.
pub fn settings(
    location: LocationRecord,
    records: &[SettingsRecord],
    locale: Locale,
) -> Result<LocationSettings, DomainError> {
    let currency = location.currency.as_str();
    let mut out = LocationSettings::default();
    for record in records {
        let section = SettingsSection::parse(&record.section)
            .ok_or_else(|| corrupt("section", &record.section))?;
        match section {
            SettingsSection::Store => out.store = Some(body(record)?),
            SettingsSection::Order => {
                out.order = Some(body::<OrderSettingsStored>(record)?.present(currency, locale));
            }
            SettingsSection::OpeningHours => {
                let mut hours: OpeningHours = body(record)?;
                for day in &mut hours.days {
                    day.weekday_label = day.weekday.label(locale).to_owned();
                }
                out.opening_hours = Some(hours);
            }
            SettingsSection::Delivery => {
                out.delivery =
                    Some(body::<DeliverySettingsStored>(record)?.present(currency, locale));
            }
            SettingsSection::PaymentMethods => {
                let mut methods: PaymentMethodSettings = body(record)?;
                methods.method_labels = labels_of(&methods.methods, locale);
                out.payment_methods = Some(methods);
            }
            SettingsSection::Ai => {
                let mut ai: AiSettings = body(record)?;
                ai.tone_label = ai.tone.label(locale).to_owned();
                out.ai = Some(ai);
            }
            SettingsSection::Loyalty => {
                out.loyalty =
                    Some(body::<LoyaltySettingsStored>(record)?.present(currency, locale));
            }
            SettingsSection::Referrals => {
                out.referrals =
                    Some(body::<ReferralSettingsStored>(record)?.present(currency, locale));
            }
            SettingsSection::Notifications => {
                let mut notifications: NotificationSettings = body(record)?;
                notifications.channel_labels = labels_of(&notifications.channels, locale);
                out.notifications = Some(notifications);
            }
        }
    }
    out.location_id = location.id;
    out.location_name = location.name;
    out.timezone = location.timezone;
    out.currency = location.currency;
    Ok(out)
}
