//! Each location's settings sections, its discounts and its integrations
//! (plus organization-wide ones), generated deterministically. Phone numbers
//! are in ranges reserved for fiction; no credential is ever generated.

use serde::Serialize;

use crate::domain::settings_sections::{
    AiSettings, AiTone, DayHours, DeliverySettingsStored, LoyaltySettingsStored,
    NotificationChannel, NotificationSettings, OpeningHours, OpeningPeriod, OrderSettingsStored,
    PaymentMethod, PaymentMethodSettings, ReferralSettingsStored, StoreSettings, Weekday,
};

use super::rng::Rng;
use super::rows::{LocationRow, OrganizationRow};
use super::{DAY_MS, SeedSpec, tag};

/// One settings section of a location, its body a JSON document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsRow {
    pub location_id: String,
    pub section: String,
    pub body: String,
    pub updated_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiscountRow {
    pub id: String,
    pub organization_id: String,
    /// `None`: valid in every location of the organization.
    pub location_id: Option<String>,
    pub name: String,
    pub code: Option<String>,
    /// `percent` (value in basis points) or `amount` (value in minor units).
    pub kind: String,
    pub value: i64,
    /// `active`, `scheduled`, `expired` or `disabled`.
    pub status: String,
    pub starts_at_ms: Option<i64>,
    pub ends_at_ms: Option<i64>,
    pub created_at_ms: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntegrationRow {
    pub id: String,
    pub organization_id: String,
    /// `None`: serves every location of the organization.
    pub location_id: Option<String>,
    pub provider: String,
    pub kind: String,
    pub name: String,
    /// `healthy`, `degraded`, `failing` or `disconnected`.
    pub health: String,
    pub last_sync_at_ms: Option<i64>,
    pub created_at_ms: i64,
}

/// Settings, discounts and integrations of a data set.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VenueData {
    pub settings: Vec<SettingsRow>,
    pub discounts: Vec<DiscountRow>,
    pub integrations: Vec<IntegrationRow>,
}

impl VenueData {
    pub fn row_count(&self) -> usize {
        self.settings.len() + self.discounts.len() + self.integrations.len()
    }
}

const MINUTE_MS: i64 = 60_000;

pub(super) fn generate(
    spec: &SeedSpec,
    organizations: &[OrganizationRow],
    locations: &[LocationRow],
) -> VenueData {
    let mut data = VenueData::default();
    for (index, location) in locations.iter().enumerate() {
        let mut rng = Rng::derive(spec.seed, &["venue", &location.id]);
        let french = location.currency == "EUR";
        settings(spec, location, index, french, &mut rng, &mut data.settings);
        location_discounts(spec, location, french, &mut rng, &mut data.discounts);
        location_integrations(spec, location, french, &mut rng, &mut data.integrations);
    }
    for organization in organizations {
        let french = locations
            .iter()
            .find(|l| l.organization_id == organization.id)
            .is_none_or(|l| l.currency == "EUR");
        organization_rows(spec, organization, french, &mut data);
    }
    data
}

fn json<T: Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

fn period(opens: &str, closes: &str) -> OpeningPeriod {
    OpeningPeriod {
        opens: opens.to_owned(),
        closes: closes.to_owned(),
    }
}

fn opening_hours(french: bool) -> OpeningHours {
    let days = Weekday::ALL
        .into_iter()
        .map(|weekday| {
            let periods = match (french, weekday) {
                (true, Weekday::Monday) => Vec::new(),
                (true, Weekday::Sunday) => vec![period("11:30", "15:30")],
                (true, Weekday::Friday | Weekday::Saturday) => {
                    vec![period("12:00", "14:30"), period("19:00", "23:00")]
                }
                (true, _) => vec![period("12:00", "14:30"), period("19:00", "22:30")],
                (false, Weekday::Friday | Weekday::Saturday) => vec![period("11:30", "23:00")],
                (false, _) => vec![period("11:30", "22:00")],
            };
            DayHours {
                weekday,
                weekday_label: String::new(),
                closed: periods.is_empty(),
                periods,
            }
        })
        .collect();
    OpeningHours { days }
}

fn settings(
    spec: &SeedSpec,
    location: &LocationRow,
    index: usize,
    french: bool,
    rng: &mut Rng,
    out: &mut Vec<SettingsRow>,
) {
    let languages: Vec<String> = if french {
        vec!["fr".into(), "en".into()]
    } else {
        vec!["en".into(), "es".into()]
    };
    let phone = if french {
        format!("+33199000{:03}", 100 + index % 900)
    } else {
        format!("+1617555{:04}", 100 + index % 100)
    };
    let store = StoreSettings {
        public_name: location.name.clone(),
        description: if french {
            "Bistrot de quartier, cuisine de saison et produits du marché.".into()
        } else {
            "Neighborhood kitchen serving seasonal comfort food.".into()
        },
        cuisine: if french {
            "bistrot français"
        } else {
            "American"
        }
        .into(),
        phone,
        languages: languages.clone(),
    };
    let order = OrderSettingsStored {
        pickup: true,
        delivery: true,
        dine_in: true,
        scheduled_orders: rng.percent(70),
        auto_accept: rng.percent(30),
        preparation_minutes: rng.range(15, 31) as u32,
        minimum_order_minor: rng.range(10, 21) * 100,
    };
    let delivery = DeliverySettingsStored {
        enabled: true,
        radius_km: rng.range(25, 71) as f64 / 10.0,
        fee_minor: rng.range(25, 45) * 10,
        free_above_minor: rng.percent(60).then(|| rng.range(3, 6) * 1000),
        estimated_minutes: rng.range(25, 46) as u32,
    };
    let payment_methods = PaymentMethodSettings {
        methods: if french {
            vec![
                PaymentMethod::Card,
                PaymentMethod::Cash,
                PaymentMethod::MealVoucher,
                PaymentMethod::OnlineCard,
            ]
        } else {
            vec![
                PaymentMethod::Card,
                PaymentMethod::Cash,
                PaymentMethod::MobileWallet,
                PaymentMethod::OnlineCard,
            ]
        },
        cash_on_delivery: rng.percent(40),
        method_labels: Vec::new(),
    };
    let ai = AiSettings {
        assistant_enabled: true,
        tone: *rng.pick(&[AiTone::Friendly, AiTone::Professional, AiTone::Concise]),
        tone_label: String::new(),
        languages,
        takes_orders: rng.percent(60),
        handoff_to_staff: true,
    };
    let loyalty = LoyaltySettingsStored {
        enabled: true,
        points_per_currency_unit: if french { 10 } else { 5 },
        reward_threshold_points: 500,
        reward_minor: 500,
    };
    let referrals = ReferralSettingsStored {
        enabled: rng.percent(70),
        referrer_reward_minor: 500,
        referee_reward_minor: 1000,
    };
    let notifications = NotificationSettings {
        channels: vec![
            NotificationChannel::Dashboard,
            NotificationChannel::Email,
            NotificationChannel::Push,
        ],
        new_order_alerts: true,
        daily_summary: true,
        sold_out_alerts: rng.percent(80),
        review_alerts: rng.percent(50),
        channel_labels: Vec::new(),
    };
    let updated = spec.now_ms - rng.range(1, 60) * DAY_MS;
    let sections = [
        ("store", json(&store)),
        ("order", json(&order)),
        ("opening_hours", json(&opening_hours(french))),
        ("delivery", json(&delivery)),
        ("payment_methods", json(&payment_methods)),
        ("ai", json(&ai)),
        ("loyalty", json(&loyalty)),
        ("referrals", json(&referrals)),
        ("notifications", json(&notifications)),
    ];
    for (section, body) in sections {
        out.push(SettingsRow {
            location_id: location.id.clone(),
            section: section.to_owned(),
            body,
            updated_at_ms: updated,
        });
    }
}

#[allow(clippy::too_many_arguments)]
fn discount(
    id: String,
    organization_id: &str,
    location_id: Option<&str>,
    name: &str,
    code: Option<&str>,
    (kind, value): (&str, i64),
    status: &str,
    (starts_at_ms, ends_at_ms): (Option<i64>, Option<i64>),
    created_at_ms: i64,
) -> DiscountRow {
    DiscountRow {
        id,
        organization_id: organization_id.to_owned(),
        location_id: location_id.map(str::to_owned),
        name: name.to_owned(),
        code: code.map(str::to_owned),
        kind: kind.to_owned(),
        value,
        status: status.to_owned(),
        starts_at_ms,
        ends_at_ms,
        created_at_ms,
    }
}

fn location_discounts(
    spec: &SeedSpec,
    location: &LocationRow,
    french: bool,
    rng: &mut Rng,
    out: &mut Vec<DiscountRow>,
) {
    let t = tag(&location.id);
    let now = spec.now_ms;
    let (lunch, happy, old) = if french {
        ("Formule midi -10 %", "Apéro du jeudi", "Soldes d'hiver")
    } else {
        (
            "Lunch special 10% off",
            "Thursday happy hour",
            "Winter sale",
        )
    };
    let org = location.organization_id.as_str();
    let loc = Some(location.id.as_str());
    let created = now - 90 * DAY_MS;
    out.push(discount(
        format!("dsc_{t}_01"),
        org,
        loc,
        lunch,
        None,
        ("percent", 1000),
        "active",
        (
            Some(now - rng.range(5, 20) * DAY_MS),
            Some(now + rng.range(10, 40) * DAY_MS),
        ),
        created,
    ));
    out.push(discount(
        format!("dsc_{t}_02"),
        org,
        loc,
        happy,
        Some(if french { "APERO5" } else { "HAPPY5" }),
        ("amount", 500),
        "scheduled",
        (
            Some(now + rng.range(2, 9) * DAY_MS),
            Some(now + 60 * DAY_MS),
        ),
        created,
    ));
    out.push(discount(
        format!("dsc_{t}_03"),
        org,
        loc,
        old,
        Some(if french { "HIVER15" } else { "WINTER15" }),
        ("percent", 1500),
        "expired",
        (Some(now - 80 * DAY_MS), Some(now - 50 * DAY_MS)),
        created,
    ));
}

fn integration(
    id: String,
    organization_id: &str,
    location_id: Option<&str>,
    (provider, kind, name): (&str, &str, &str),
    health: &str,
    last_sync_at_ms: Option<i64>,
    created_at_ms: i64,
) -> IntegrationRow {
    IntegrationRow {
        id,
        organization_id: organization_id.to_owned(),
        location_id: location_id.map(str::to_owned),
        provider: provider.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        health: health.to_owned(),
        last_sync_at_ms,
        created_at_ms,
    }
}

fn location_integrations(
    spec: &SeedSpec,
    location: &LocationRow,
    french: bool,
    rng: &mut Rng,
    out: &mut Vec<IntegrationRow>,
) {
    let t = tag(&location.id);
    let now = spec.now_ms;
    let org = location.organization_id.as_str();
    let loc = Some(location.id.as_str());
    let created = location.created_at_ms;
    let names = if french {
        [
            "Caisse de la salle",
            "Livraison à domicile",
            "Terminal de paiement",
        ]
    } else {
        ["Front-of-house till", "Home delivery", "Card terminal"]
    };
    let delivery_health = *rng.pick(&["healthy", "healthy", "degraded", "failing"]);
    out.push(integration(
        format!("int_{t}_pos"),
        org,
        loc,
        ("till", "pos", names[0]),
        "healthy",
        Some(now - rng.range(1, 10) * MINUTE_MS),
        created,
    ));
    out.push(integration(
        format!("int_{t}_delivery"),
        org,
        loc,
        ("courier", "delivery", names[1]),
        delivery_health,
        Some(now - rng.range(2, 180) * MINUTE_MS),
        created,
    ));
    out.push(integration(
        format!("int_{t}_payments"),
        org,
        loc,
        ("acquirer", "payments", names[2]),
        "healthy",
        Some(now - rng.range(1, 30) * MINUTE_MS),
        created,
    ));
}

fn organization_rows(
    spec: &SeedSpec,
    organization: &OrganizationRow,
    french: bool,
    data: &mut VenueData,
) {
    let t = tag(&organization.id);
    let now = spec.now_ms;
    let org = organization.id.as_str();
    data.discounts.push(discount(
        format!("dsc_{t}_welcome"),
        org,
        None,
        if french { "Bienvenue" } else { "Welcome" },
        Some(if french { "BIENVENUE10" } else { "WELCOME10" }),
        ("percent", 1000),
        "active",
        (None, None),
        organization.created_at_ms,
    ));
    data.discounts.push(discount(
        format!("dsc_{t}_staff"),
        org,
        None,
        if french {
            "Repas du personnel"
        } else {
            "Staff meal"
        },
        None,
        ("percent", 5000),
        "disabled",
        (None, None),
        organization.created_at_ms,
    ));
    data.integrations.push(integration(
        format!("int_{t}_accounting"),
        org,
        None,
        (
            "ledger",
            "accounting",
            if french {
                "Comptabilité"
            } else {
                "Bookkeeping"
            },
        ),
        "healthy",
        Some(now - DAY_MS / 2),
        organization.created_at_ms,
    ));
}
