//! Organizations and locations: the demo set with its exact IDs, then
//! generated locations spread over the demo organizations.

use chataigne_common::demo;

use super::rows::{LocationRow, OrganizationRow};
use super::{DAY_MS, SeedSpec, Style};

/// Cities of generated locations: (city, postal code, street, timezone).
type City = (&'static str, &'static str, &'static str, &'static str);

const FRENCH_CITIES: &[City] = &[
    ("Nantes", "44000", "12 rue Crébillon", "Europe/Paris"),
    ("Lille", "59000", "5 rue de la Monnaie", "Europe/Paris"),
    ("Toulouse", "31000", "18 rue du Taur", "Europe/Paris"),
    ("Marseille", "13002", "33 quai du Port", "Europe/Paris"),
    ("Nice", "06300", "9 cours Saleya", "Europe/Paris"),
    ("Strasbourg", "67000", "4 rue des Frères", "Europe/Paris"),
    ("Rennes", "35000", "21 rue Saint-Malo", "Europe/Paris"),
    (
        "Montpellier",
        "34000",
        "7 rue de l'Aiguillerie",
        "Europe/Paris",
    ),
];

const AMERICAN_CITIES: &[City] = &[
    ("Chicago", "60607", "815 W Randolph St", "America/Chicago"),
    ("Austin", "78701", "401 Congress Ave", "America/Chicago"),
    ("Denver", "80202", "1600 Wazee St", "America/Denver"),
    ("Seattle", "98101", "85 Pike St", "America/Los_Angeles"),
    ("Philadelphia", "19106", "120 Market St", "America/New_York"),
    ("Portland", "04101", "50 Commercial St", "America/New_York"),
];

pub(super) fn organizations(spec: &SeedSpec) -> Vec<OrganizationRow> {
    demo::ORGANIZATIONS
        .iter()
        .enumerate()
        .map(|(i, org)| OrganizationRow {
            id: org.id.to_owned(),
            name: org.name.to_owned(),
            created_at_ms: spec.start_ms() - (400 + 30 * i as i64) * DAY_MS,
        })
        .collect()
}

pub(super) fn locations(spec: &SeedSpec) -> Vec<LocationRow> {
    let created = spec.start_ms() - 30 * DAY_MS;
    let mut rows: Vec<LocationRow> = demo::LOCATIONS
        .iter()
        .map(|l| LocationRow {
            id: l.id.to_owned(),
            organization_id: l.organization_id.to_owned(),
            name: l.name.to_owned(),
            line1: l.line1.to_owned(),
            city: l.city.to_owned(),
            postal_code: l.postal_code.to_owned(),
            country: l.country.to_owned(),
            phone: None,
            timezone: l.timezone.to_owned(),
            currency: l.currency.to_owned(),
            status: "accepting".to_owned(),
            paused_until_ms: None,
            pause_reason: None,
            created_at_ms: created,
        })
        .collect();
    for i in 0..spec.extra_locations as usize {
        let org = &demo::ORGANIZATIONS[i % demo::ORGANIZATIONS.len()];
        let style = style_of(org.id, &rows);
        let (cities, brand, country, currency) = match style {
            Style::French => (FRENCH_CITIES, "Châtaigne", "FR", "EUR"),
            Style::American => (AMERICAN_CITIES, "Harbor Street", "US", "USD"),
        };
        let n = i / demo::ORGANIZATIONS.len();
        let (city, postal_code, street, timezone) = cities[n % cities.len()];
        let round = n / cities.len();
        let name = if round == 0 {
            format!("{brand} {city}")
        } else {
            format!("{brand} {city} {}", round + 1)
        };
        rows.push(LocationRow {
            id: format!("loc_x{i:03}{}", super::people::ascii_lower(city)),
            organization_id: org.id.to_owned(),
            name,
            line1: street.to_owned(),
            city: city.to_owned(),
            postal_code: postal_code.to_owned(),
            country: country.to_owned(),
            phone: None,
            timezone: timezone.to_owned(),
            currency: currency.to_owned(),
            status: "accepting".to_owned(),
            paused_until_ms: None,
            pause_reason: None,
            created_at_ms: created,
        });
    }
    rows
}

/// French for organizations whose first location bills in euros.
pub(super) fn style_of(organization_id: &str, locations: &[LocationRow]) -> Style {
    let currency = locations
        .iter()
        .find(|l| l.organization_id == organization_id)
        .map(|l| l.currency.as_str());
    match currency {
        Some("USD") => Style::American,
        _ => Style::French,
    }
}
