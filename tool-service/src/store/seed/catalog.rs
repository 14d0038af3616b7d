//! A location's catalog: its menu's categories and dishes, prices varied a
//! little per location, a few dishes sold out.

use super::menu::{AMERICAN, FRENCH};
use super::rng::Rng;
use super::rows::{CategoryRow, ItemRow, LocationRow};
use super::{DAY_MS, SeedSpec, Style, tag};

pub(super) fn for_location(
    spec: &SeedSpec,
    location: &LocationRow,
    style: Style,
) -> (Vec<CategoryRow>, Vec<ItemRow>) {
    let mut rng = Rng::derive(spec.seed, &["catalog", &location.id]);
    let menu = match style {
        Style::French => FRENCH,
        Style::American => AMERICAN,
    };
    let created = location.created_at_ms;
    let location_tag = tag(&location.id);
    let mut categories = Vec::with_capacity(menu.len());
    let mut items = Vec::new();
    for (position, category) in menu.iter().enumerate() {
        let category_id = format!("cat_{location_tag}_{:02}", position + 1);
        categories.push(CategoryRow {
            id: category_id.clone(),
            organization_id: location.organization_id.clone(),
            location_id: location.id.clone(),
            name: category.name.to_owned(),
            position: position as i64 + 1,
            created_at_ms: created,
        });
        for (name, description, price) in category.dishes {
            // Up to 6 % dearer than the reference card, rounded to 10 cents.
            let price_minor = (price + price * rng.range(0, 7) / 100) / 10 * 10;
            let sold_out = rng.percent(5);
            items.push(ItemRow {
                id: format!("itm_{location_tag}_{:03}", items.len() + 1),
                organization_id: location.organization_id.clone(),
                location_id: location.id.clone(),
                category_id: category_id.clone(),
                name: (*name).to_owned(),
                description: (*description).to_owned(),
                price_minor,
                currency: location.currency.clone(),
                availability: if sold_out { "sold_out" } else { "available" }.to_owned(),
                available_again_at_ms: sold_out.then(|| spec.now_ms + rng.range(2, 20) * 3_600_000),
                created_at_ms: created,
                updated_at_ms: if sold_out {
                    spec.now_ms - rng.range(1, 6) * 3_600_000
                } else {
                    created + rng.range(0, 20) * DAY_MS
                },
            });
        }
    }
    (categories, items)
}
