//! Deterministic demo and scale data sets: the demo organizations and
//! locations of `chataigne_common::demo` with their exact IDs, plus optional
//! generated locations, their catalogs, customers, a history of orders and
//! conversations. The same `SeedSpec` always yields the same rows, and every
//! row has a stable ID, so loading twice (or on a later day) is harmless.

mod catalog;
mod conversations;
mod customers;
mod menu;
mod orders;
mod people;
mod rng;
mod rows;
mod tenants;
mod venue;

pub use rows::*;
pub use venue::{DiscountRow, IntegrationRow, SettingsRow, VenueData};

/// One day in milliseconds.
pub const DAY_MS: i64 = 86_400_000;

/// What to generate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeedSpec {
    /// "Now" in Unix milliseconds: the newest order is at or before it.
    pub now_ms: i64,
    /// Days of order history, ending today in each location's timezone.
    pub days: u32,
    /// Average orders per location and day (weekends busier).
    pub orders_per_location_per_day: u32,
    /// Generated locations added to the demo organizations (for scale runs).
    pub extra_locations: u32,
    /// Seed of every random choice.
    pub seed: u64,
}

impl SeedSpec {
    /// The seed of the demo data set.
    pub const DEMO_SEED: u64 = 0x0c4a_7a16_e5ee_d001;

    /// The demo data set: the demo tenants, one year at about 25 orders per
    /// location per day.
    pub fn demo(now_ms: i64) -> SeedSpec {
        SeedSpec {
            now_ms,
            days: 365,
            orders_per_location_per_day: 25,
            extra_locations: 0,
            seed: SeedSpec::DEMO_SEED,
        }
    }

    /// Start of the generated history.
    fn start_ms(&self) -> i64 {
        self.now_ms - i64::from(self.days) * DAY_MS
    }
}

/// A generated data set, table by table, in foreign-key order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DataSet {
    pub organizations: Vec<OrganizationRow>,
    pub locations: Vec<LocationRow>,
    pub customers: Vec<CustomerRow>,
    pub categories: Vec<CategoryRow>,
    pub items: Vec<ItemRow>,
    pub orders: Vec<OrderRow>,
    pub order_lines: Vec<OrderLineRow>,
    pub conversations: Vec<ConversationRow>,
    pub messages: Vec<MessageRow>,
    /// Settings, discounts and integrations.
    pub venue: VenueData,
}

impl DataSet {
    /// Generates the data set `spec` describes; deterministic.
    pub fn generate(spec: &SeedSpec) -> DataSet {
        let mut data = DataSet {
            organizations: tenants::organizations(spec),
            locations: tenants::locations(spec),
            ..DataSet::default()
        };
        let by_organization: Vec<(String, Vec<CustomerRow>)> = data
            .organizations
            .iter()
            .map(|org| {
                let style = tenants::style_of(&org.id, &data.locations);
                (
                    org.id.clone(),
                    customers::for_organization(spec, org, style),
                )
            })
            .collect();
        for location in &data.locations {
            let customers = by_organization
                .iter()
                .find(|(org, _)| *org == location.organization_id)
                .map(|(_, customers)| customers.as_slice())
                .unwrap_or_default();
            let style = tenants::style_of(&location.organization_id, &data.locations);
            let (categories, items) = catalog::for_location(spec, location, style);
            orders::for_location(
                spec,
                location,
                &items,
                customers,
                &mut data.orders,
                &mut data.order_lines,
            );
            conversations::for_location(
                spec,
                location,
                customers,
                style,
                &mut data.conversations,
                &mut data.messages,
            );
            data.categories.extend(categories);
            data.items.extend(items);
        }
        data.customers = by_organization
            .into_iter()
            .flat_map(|(_, customers)| customers)
            .collect();
        data.venue = venue::generate(spec, &data.organizations, &data.locations);
        data
    }

    /// Rows in all tables.
    pub fn row_count(&self) -> usize {
        self.organizations.len()
            + self.locations.len()
            + self.customers.len()
            + self.categories.len()
            + self.items.len()
            + self.orders.len()
            + self.order_lines.len()
            + self.conversations.len()
            + self.messages.len()
            + self.venue.row_count()
    }
}

/// The language and cuisine of a tenant's generated content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Style {
    French,
    American,
}

/// The part of an ID after its prefix, used to derive child IDs.
fn tag(id: &str) -> &str {
    id.split_once('_').map_or(id, |(_, rest)| rest)
}
