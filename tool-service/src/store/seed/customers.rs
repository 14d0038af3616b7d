//! Customers of an organization: names, e-mail addresses and phone numbers
//! that look real but use reserved domains and fictional numbers.

use super::people::{AMERICAN_FIRST, AMERICAN_LAST, FRENCH_FIRST, FRENCH_LAST, ascii_lower};
use super::rng::Rng;
use super::rows::{CustomerRow, OrganizationRow};
use super::{DAY_MS, SeedSpec, Style, tag};

/// Customers per organization.
pub(super) const PER_ORGANIZATION: usize = 150;

pub(super) fn for_organization(
    spec: &SeedSpec,
    org: &OrganizationRow,
    style: Style,
) -> Vec<CustomerRow> {
    let mut rng = Rng::derive(spec.seed, &["customers", &org.id]);
    let (first, last, domain) = match style {
        Style::French => (FRENCH_FIRST, FRENCH_LAST, "example.fr"),
        Style::American => (AMERICAN_FIRST, AMERICAN_LAST, "example.com"),
    };
    (1..=PER_ORGANIZATION)
        .map(|n| {
            let (given, family) = (*rng.pick(first), *rng.pick(last));
            let email = rng.percent(85).then(|| {
                format!(
                    "{}.{}{}@{domain}",
                    ascii_lower(given),
                    ascii_lower(family),
                    n
                )
            });
            let phone = rng.percent(70).then(|| match style {
                Style::French => format!(
                    "+33 6 {:02} {:02} {:02} {:02}",
                    rng.below(100),
                    rng.below(100),
                    rng.below(100),
                    rng.below(100)
                ),
                Style::American => format!("+1 617-555-{:04}", 100 + rng.below(100)),
            });
            CustomerRow {
                id: format!("cus_{}_{n:04}", tag(&org.id)),
                organization_id: org.id.clone(),
                location_id: None,
                display_name: format!("{given} {family}"),
                email,
                phone,
                created_at_ms: spec.start_ms() - rng.range(1, 200) * DAY_MS,
            }
        })
        .collect()
}
