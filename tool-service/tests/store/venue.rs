//! Behaviour of `VenueStore` on SQLite (in memory) and PostgreSQL (a fresh
//! database per test): order intake and item availability changes guarded
//! atomically by the observed state, settings sections, catalog filters and
//! pagination, discounts and integrations of a location, checked against the
//! generated data set.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::OnceLock;

use chataigne_common::demo;
use chataigne_tools::domain::DiscountStatus;
use chataigne_tools::domain::{
    Availability, AvailabilityChange, CatalogFilter, IntakeStatus, PageAfter, PageRequest,
    PauseReason, SettingsSection, StatusChange, in_force,
};
use chataigne_tools::store::seed::{DataSet, SeedSpec};
use chataigne_tools::store::{CatalogItemRecord, GuardedWrite, LocationStatusRecord, Owner, Store};

/// Saturday 14 June 2025, 19:30 UTC.
const NOW_MS: i64 = 1_749_929_400_000;
const HOUR_MS: i64 = 3_600_000;

fn data() -> &'static DataSet {
    static DATA: OnceLock<DataSet> = OnceLock::new();
    DATA.get_or_init(|| {
        DataSet::generate(&SeedSpec {
            now_ms: NOW_MS,
            days: 1,
            orders_per_location_per_day: 5,
            extra_locations: 1,
            seed: 7,
        })
    })
}

chataigne_common::on_both_backends! {
    sqlite: support::loaded_sqlite(data()).await,
    postgres: support::loaded_postgres("venue", data()).await,
    run: |store| (&store),
    tests: [
        load_is_idempotent_and_complete,
        settings_sections_are_read_as_asked,
        status_change_is_guarded_by_the_observed_status,
        an_ended_pause_counts_as_accepting,
        catalog_pages_cover_every_item_once,
        catalog_filters,
        availability_change_is_guarded,
        discounts_of_a_location,
        integrations_of_a_location,
    ],
}

fn page(limit: u32) -> PageRequest {
    PageRequest { limit, after: None }
}

fn paris() -> Owner {
    Owner {
        organization_id: demo::ORG_BISTRO.to_owned(),
        location_id: Some(demo::LOC_PARIS.to_owned()),
    }
}

async fn load_is_idempotent_and_complete(store: &impl Store) {
    store.load(data()).await.unwrap();
    let all = store
        .location_settings(demo::LOC_PARIS, &SettingsSection::ALL)
        .await
        .unwrap();
    assert_eq!(all.len(), 9, "one row per section after two loads");
    for record in &all {
        let body: serde_json::Value = serde_json::from_str(&record.body).unwrap();
        let text = body.to_string().to_lowercase();
        for secret in ["password", "secret", "token", "api_key", "apikey"] {
            assert!(!text.contains(secret), "{}: {secret}", record.section);
        }
    }
}

async fn settings_sections_are_read_as_asked(store: &impl Store) {
    let some = store
        .location_settings(
            demo::LOC_BROOKLYN,
            &[SettingsSection::Loyalty, SettingsSection::OpeningHours],
        )
        .await
        .unwrap();
    let mut sections: Vec<&str> = some.iter().map(|r| r.section.as_str()).collect();
    sections.sort();
    assert_eq!(sections, ["loyalty", "opening_hours"]);
    assert!(
        store
            .location_settings("loc_doesnotexist", &SettingsSection::ALL)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store
            .location_settings(demo::LOC_PARIS, &[])
            .await
            .unwrap()
            .is_empty()
    );
}

/// A valid intake change at `at_ms` from `expected` to `status`.
fn change(
    status: IntakeStatus,
    expected: IntakeStatus,
    paused_until_ms: Option<i64>,
    reason: Option<PauseReason>,
    at_ms: i64,
) -> StatusChange {
    StatusChange::new(status, expected, paused_until_ms, reason, at_ms).unwrap()
}

/// Applies `change` to the intake of `location_id` at `at_ms`.
async fn set_intake(
    store: &impl Store,
    location_id: &str,
    change: &StatusChange,
    at_ms: i64,
) -> GuardedWrite<LocationStatusRecord> {
    store
        .update_location_status(location_id, change, at_ms)
        .await
        .unwrap()
}

async fn status_change_is_guarded_by_the_observed_status(store: &impl Store) {
    use IntakeStatus::{Accepting, Paused};
    let until = NOW_MS + 2 * HOUR_MS;
    let busy = Some(PauseReason::Busy);
    let pause = change(Paused, Accepting, Some(until), busy, NOW_MS);
    let GuardedWrite::Updated(paused) = set_intake(store, demo::LOC_LYON, &pause, NOW_MS).await
    else {
        panic!("the observed status held");
    };
    assert_eq!(paused.status, "paused");
    assert_eq!(paused.paused_until_ms, Some(until));
    assert_eq!(paused.pause_reason.as_deref(), Some("busy"));
    assert_eq!(paused.updated_at_ms, NOW_MS);

    // The same change again: the observed status is stale, nothing is written.
    let later = NOW_MS + 60_000;
    let again = change(Paused, Accepting, None, None, later);
    match set_intake(store, demo::LOC_LYON, &again, later).await {
        GuardedWrite::Mismatch(current) => {
            assert_eq!(current.status, "paused");
            assert_eq!(current.paused_until_ms, Some(until));
            assert_eq!(current.updated_at_ms, NOW_MS, "untouched");
        }
        other => panic!("expected a mismatch: {other:?}"),
    }

    let resume = change(Accepting, Paused, None, None, later);
    let GuardedWrite::Updated(resumed) = set_intake(store, demo::LOC_LYON, &resume, later).await
    else {
        panic!("resume");
    };
    assert_eq!(resumed.status, "accepting");
    assert_eq!(resumed.paused_until_ms, None);
    assert_eq!(resumed.pause_reason, None);

    assert_eq!(
        set_intake(store, "loc_doesnotexist", &resume, later).await,
        GuardedWrite::Missing
    );
}

async fn an_ended_pause_counts_as_accepting(store: &impl Store) {
    use IntakeStatus::{Accepting, Paused};
    // Two hours after the pause it is over: "paused" is no longer the
    // observed state. Each step: the change, its time, whether it is written
    // (or refused as a mismatch).
    let (ends, later) = (Some(NOW_MS + HOUR_MS), NOW_MS + 2 * HOUR_MS);
    let closed_early = Some(PauseReason::ClosedEarly);
    let steps = [
        (change(Paused, Accepting, ends, None, NOW_MS), NOW_MS, true),
        (change(Accepting, Paused, None, None, later), later, false),
        (
            change(Paused, Accepting, None, closed_early, later),
            later,
            true,
        ),
    ];
    for (step, at_ms, written) in steps {
        let outcome = set_intake(store, demo::LOC_BORDEAUX, &step, at_ms).await;
        if written {
            assert!(matches!(outcome, GuardedWrite::Updated(_)), "{outcome:?}");
        } else {
            assert!(matches!(outcome, GuardedWrite::Mismatch(_)), "{outcome:?}");
        }
    }
}

fn filter(location_id: &str) -> CatalogFilter {
    CatalogFilter {
        location_id: location_id.to_owned(),
        category_id: None,
        availability: None,
        name_contains: None,
        now_ms: NOW_MS,
    }
}

async fn walk(store: &impl Store, filter: &CatalogFilter, limit: u32) -> Vec<CatalogItemRecord> {
    let mut all = Vec::new();
    let mut request = page(limit);
    loop {
        let mut rows = store.list_catalog_items(filter, &request).await.unwrap();
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        request.after = rows.last().map(|r| PageAfter {
            key: r.name.clone(),
            id: r.id.clone(),
        });
        all.extend(rows);
        if !more {
            return all;
        }
    }
}

async fn catalog_pages_cover_every_item_once(store: &impl Store) {
    let walked = walk(store, &filter(demo::LOC_PARIS), 7).await;
    let mut expected: Vec<(&str, &str)> = data()
        .items
        .iter()
        .filter(|i| i.location_id == demo::LOC_PARIS)
        .map(|i| (i.name.as_str(), i.id.as_str()))
        .collect();
    expected.sort();
    let got: Vec<(&str, &str)> = walked
        .iter()
        .map(|r| (r.name.as_str(), r.id.as_str()))
        .collect();
    assert_eq!(got, expected);
    let first = &walked[0];
    assert!(!first.category_name.is_empty());
    assert_eq!(first.location_name, "Châtaigne Paris 11e");
    assert_eq!(first.timezone, "Europe/Paris");
}

async fn catalog_filters(store: &impl Store) {
    let items: Vec<_> = data()
        .items
        .iter()
        .filter(|i| i.location_id == demo::LOC_PARIS)
        .collect();
    // Category.
    let category = items[0].category_id.clone();
    let mut by_category = filter(demo::LOC_PARIS);
    by_category.category_id = Some(category.clone());
    let got = walk(store, &by_category, 50).await;
    assert_eq!(
        got.len(),
        items.iter().filter(|i| i.category_id == category).count()
    );
    // Availability in force now: a passed return time counts as available.
    let mut sold_out = filter(demo::LOC_PARIS);
    sold_out.availability = Some(Availability::SoldOut);
    let expected_sold_out = items
        .iter()
        .filter(|i| {
            i.availability == "sold_out" && i.available_again_at_ms.is_none_or(|at| at > NOW_MS)
        })
        .count();
    assert_eq!(walk(store, &sold_out, 50).await.len(), expected_sold_out);
    sold_out.now_ms = NOW_MS + 30 * 24 * HOUR_MS;
    assert!(
        walk(store, &sold_out, 50).await.is_empty(),
        "every return time passed"
    );
    // Text: case-insensitive for ASCII letters, wildcards taken literally.
    let name = &items[0].name;
    let word: String = name.chars().take(4).collect();
    let mut text = filter(demo::LOC_PARIS);
    text.name_contains =
        CatalogFilter::text(Some(&format!("  {}  ", word.to_uppercase()))).unwrap();
    let got = walk(store, &text, 50).await;
    let expected = items
        .iter()
        .filter(|i| {
            i.name
                .to_ascii_lowercase()
                .contains(&word.to_ascii_lowercase())
        })
        .count();
    assert!(got.iter().any(|r| &r.name == name) || !word.is_ascii());
    if word.is_ascii() {
        assert_eq!(got.len(), expected);
    }
    text.name_contains = Some("%".to_owned());
    assert!(
        walk(store, &text, 50).await.is_empty(),
        "% is not a wildcard"
    );
    text.name_contains = Some("_".to_owned());
    assert!(
        walk(store, &text, 50).await.is_empty(),
        "_ is not a wildcard"
    );
    // Another location's category yields nothing here.
    let mut foreign = filter(demo::LOC_LYON);
    foreign.category_id = Some(category);
    assert!(walk(store, &foreign, 50).await.is_empty());
}

async fn availability_change_is_guarded(store: &impl Store) {
    let item = data()
        .items
        .iter()
        .find(|i| i.location_id == demo::LOC_PARIS && i.availability == "available")
        .unwrap();
    assert_eq!(
        store.catalog_item_owner(&item.id).await.unwrap(),
        Some(paris())
    );
    assert_eq!(store.catalog_item_owner("itm_nope").await.unwrap(), None);
    let sell_out = AvailabilityChange::new(
        Availability::SoldOut,
        Availability::Available,
        Some(NOW_MS + 3 * HOUR_MS),
        NOW_MS,
    )
    .unwrap();
    let GuardedWrite::Updated(updated) = store
        .update_item_availability(&item.id, &sell_out, NOW_MS)
        .await
        .unwrap()
    else {
        panic!("observed availability held");
    };
    assert_eq!(updated.availability, "sold_out");
    assert_eq!(updated.available_again_at_ms, Some(NOW_MS + 3 * HOUR_MS));
    // Stale observation: nothing written, current state reported.
    match store
        .update_item_availability(&item.id, &sell_out, NOW_MS + 1)
        .await
        .unwrap()
    {
        GuardedWrite::Mismatch(current) => {
            assert_eq!(current.availability, "sold_out");
            assert_eq!(current.updated_at_ms, NOW_MS);
        }
        other => panic!("expected a mismatch: {other:?}"),
    }
    // After the return time the item is available again for the precondition.
    let later = NOW_MS + 4 * HOUR_MS;
    let again =
        AvailabilityChange::new(Availability::SoldOut, Availability::Available, None, later)
            .unwrap();
    assert!(matches!(
        store
            .update_item_availability(&item.id, &again, later)
            .await
            .unwrap(),
        GuardedWrite::Updated(_)
    ));
    assert_eq!(
        store
            .update_item_availability("itm_nope", &again, later)
            .await
            .unwrap(),
        GuardedWrite::Missing
    );
}

async fn discounts_of_a_location(store: &impl Store) {
    let owner = paris();
    let all = store
        .list_discounts(&owner, None, NOW_MS, &page(50))
        .await
        .unwrap();
    let expected: Vec<_> = data()
        .venue
        .discounts
        .iter()
        .filter(|d| {
            d.location_id.as_deref() == Some(demo::LOC_PARIS)
                || (d.location_id.is_none() && d.organization_id == demo::ORG_BISTRO)
        })
        .collect();
    assert_eq!(all.len(), expected.len());
    assert!(
        all.iter().any(|d| d.location_id.is_none()),
        "organization-wide included"
    );
    assert!(
        all.windows(2)
            .all(|w| (&w[0].name, &w[0].id) < (&w[1].name, &w[1].id))
    );
    for active in [true, false] {
        let got = store
            .list_discounts(&owner, Some(active), NOW_MS, &page(50))
            .await
            .unwrap();
        let want = expected
            .iter()
            .filter(|d| {
                let status = DiscountStatus::parse(&d.status).unwrap();
                in_force(status, d.starts_at_ms, d.ends_at_ms, NOW_MS) == active
            })
            .count();
        assert_eq!(got.len(), want, "active = {active}");
        assert!(want > 0);
    }
    // Pagination by (name, id).
    let first = store
        .list_discounts(&owner, None, NOW_MS, &page(2))
        .await
        .unwrap();
    assert_eq!(
        first.len(),
        3,
        "one more than the page tells that more exist"
    );
    let rest = store
        .list_discounts(
            &owner,
            None,
            NOW_MS,
            &PageRequest {
                limit: 50,
                after: Some(PageAfter {
                    key: first[1].name.clone(),
                    id: first[1].id.clone(),
                }),
            },
        )
        .await
        .unwrap();
    assert_eq!(rest.len() + 2, all.len());
}

async fn integrations_of_a_location(store: &impl Store) {
    let owner = Owner {
        organization_id: demo::ORG_HARBOR.to_owned(),
        location_id: Some(demo::LOC_BOSTON.to_owned()),
    };
    let got = store.list_integrations(&owner, &page(50)).await.unwrap();
    let expected = data()
        .venue
        .integrations
        .iter()
        .filter(|i| {
            i.location_id.as_deref() == Some(demo::LOC_BOSTON)
                || (i.location_id.is_none() && i.organization_id == demo::ORG_HARBOR)
        })
        .count();
    assert_eq!(got.len(), expected);
    assert!(
        got.iter()
            .all(|i| i.location_id.as_deref() != Some(demo::LOC_BROOKLYN))
    );
    assert!(got.iter().any(|i| i.kind == "pos"));
    assert!(got.iter().any(|i| i.location_id.is_none()));
}
