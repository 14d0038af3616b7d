//! Behaviour tests of the storage layer: one suite, each test run against
//! SQLite (in memory) and PostgreSQL (a fresh database per test), on a small
//! generated data set checked against an in-memory reference.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::OnceLock;

use chataigne_common::demo;
use chataigne_tools::domain::{
    Dependency, DomainError, OrderFilter, OrderNumberQuery, OrderStatus, PageAfter, PageRequest,
    SortOrder, TenantScope,
};
use chataigne_tools::store::seed::{DataSet, OrderRow, SeedSpec};
use chataigne_tools::store::{OrderRecord, Owner, PgStore, SqliteStore, Store, StoreOptions};

/// Saturday 14 June 2025, 19:30 UTC: dinner service in Paris, afternoon in New York.
const NOW_MS: i64 = 1_749_929_400_000;
const HOUR_MS: i64 = 3_600_000;

const TABLES: [&str; 9] = [
    "organizations",
    "locations",
    "customers",
    "catalog_categories",
    "catalog_items",
    "orders",
    "order_lines",
    "conversations",
    "conversation_messages",
];

fn data() -> &'static DataSet {
    static DATA: OnceLock<DataSet> = OnceLock::new();
    DATA.get_or_init(|| {
        DataSet::generate(&SeedSpec {
            now_ms: NOW_MS,
            days: 2,
            orders_per_location_per_day: 25,
            extra_locations: 2,
            seed: 42,
        })
    })
}

/// A store of either backend, with a row count for checks the trait does not offer.
trait Backend: Store {
    async fn count(&self, table: &str) -> i64;
}

/// The same row count on each backend's own pool.
macro_rules! row_count {
    ($($store:ty),*) => {$(
        impl Backend for $store {
            async fn count(&self, table: &str) -> i64 {
                let sql = format!("SELECT COUNT(*) FROM {table}");
                sqlx::query_scalar(sqlx::AssertSqlSafe(sql))
                    .fetch_one(self.pool())
                    .await
                    .unwrap()
            }
        }
    )*};
}

row_count!(SqliteStore, PgStore);

async fn sqlite_store() -> SqliteStore {
    support::loaded_sqlite(data()).await
}

async fn postgres_store() -> Option<PgStore> {
    support::loaded_postgres("tools", data()).await
}

// Each named `async fn(&impl Backend, &DataSet)` runs once per backend.
chataigne_common::on_both_backends! {
    sqlite: sqlite_store().await,
    postgres: postgres_store().await,
    run: |store| (&store, data()),
    tests: [
        migrations_are_idempotent,
        load_is_idempotent,
        organizations_by_scope,
        organizations_paginate,
        locations_of_an_organization,
        orders_paginate_exactly_once,
        orders_paginate_oldest_first_exactly_once,
        order_filters,
        orders_by_number_with_or_without_prefix_in_any_case,
        order_tenant_union,
        invalid_order_cursor,
        order_detail,
        owners,
    ],
}

fn page(limit: u32) -> PageRequest {
    PageRequest { limit, after: None }
}

fn ids<T>(rows: &[T], id: impl Fn(&T) -> &str) -> Vec<String> {
    rows.iter().map(|r| id(r).to_owned()).collect()
}

/// What `list_orders` must return for `filter`, computed from the data set.
fn expected_orders(data: &DataSet, filter: &OrderFilter) -> Vec<String> {
    let tenant = |o: &OrderRow| match (&filter.location_ids, &filter.organization_ids) {
        (None, None) => true,
        (locations, organizations) => {
            locations
                .as_ref()
                .is_some_and(|l| l.contains(&o.location_id))
                || organizations
                    .as_ref()
                    .is_some_and(|g| g.contains(&o.organization_id))
        }
    };
    let mut rows: Vec<&OrderRow> = data
        .orders
        .iter()
        .filter(|o| tenant(o))
        .filter(|o| {
            filter.statuses.is_empty() || filter.statuses.iter().any(|s| s.as_str() == o.status)
        })
        .filter(|o| {
            filter
                .created_from_ms
                .is_none_or(|from| o.created_at_ms >= from)
        })
        .filter(|o| filter.created_to_ms.is_none_or(|to| o.created_at_ms < to))
        .collect();
    rows.sort_by(|a, b| {
        b.created_at_ms
            .cmp(&a.created_at_ms)
            .then_with(|| b.id.cmp(&a.id))
    });
    if filter.sort == SortOrder::OldestFirst {
        rows.reverse();
    }
    ids(&rows, |o| &o.id)
}

/// Follows `list_orders` pages of `limit` to the end.
async fn all_orders(store: &impl Store, filter: &OrderFilter, limit: u32) -> Vec<OrderRecord> {
    let mut request = page(limit);
    let mut out = Vec::new();
    for _ in 0..=data().orders.len() + 1 {
        let mut rows = store.list_orders(filter, &request).await.unwrap();
        assert!(rows.len() <= limit as usize + 1, "at most limit + 1 rows");
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let last = rows.last().map(|r| PageAfter {
            key: r.created_at_ms.to_string(),
            id: r.id.clone(),
        });
        out.extend(rows);
        match (more, last) {
            (true, Some(after)) => request.after = Some(after),
            _ => return out,
        }
    }
    panic!("pagination did not end: {filter:?} by {limit}");
}

async fn migrations_are_idempotent(store: &impl Backend, data: &DataSet) {
    store.migrate().await.unwrap();
    store.migrate().await.unwrap();
    store.ping().await.unwrap();
    assert_eq!(store.count("orders").await, data.orders.len() as i64);
}

async fn load_is_idempotent(store: &impl Backend, data: &DataSet) {
    let expected = [
        data.organizations.len(),
        data.locations.len(),
        data.customers.len(),
        data.categories.len(),
        data.items.len(),
        data.orders.len(),
        data.order_lines.len(),
        data.conversations.len(),
        data.messages.len(),
    ];
    for (table, rows) in TABLES.iter().zip(expected) {
        assert_eq!(
            store.count(table).await,
            rows as i64,
            "{table} after one load"
        );
    }
    store.load(data).await.unwrap();
    for (table, rows) in TABLES.iter().zip(expected) {
        assert_eq!(
            store.count(table).await,
            rows as i64,
            "{table} after two loads"
        );
    }
}

async fn organizations_by_scope(store: &impl Backend, data: &DataSet) {
    let all = TenantScope {
        all_tenants: true,
        ..TenantScope::default()
    };
    let orgs = store.list_organizations(&all, &page(50)).await.unwrap();
    assert_eq!(ids(&orgs, |o| &o.id), [demo::ORG_BISTRO, demo::ORG_HARBOR]);
    for org in &orgs {
        let owned = data
            .locations
            .iter()
            .filter(|l| l.organization_id == org.id)
            .count();
        assert_eq!(org.location_count, owned as i64);
        assert_eq!(
            store.get_organization(&org.id).await.unwrap().as_ref(),
            Some(org)
        );
    }
    assert_eq!(store.get_organization("org_unknown").await.unwrap(), None);

    let by_org = TenantScope {
        organization_ids: vec![demo::ORG_HARBOR.to_owned(), "org_unknown".to_owned()],
        ..TenantScope::default()
    };
    let orgs = store.list_organizations(&by_org, &page(50)).await.unwrap();
    assert_eq!(ids(&orgs, |o| &o.id), [demo::ORG_HARBOR]);

    let by_location = TenantScope {
        location_ids: vec![demo::LOC_LYON.to_owned()],
        ..TenantScope::default()
    };
    let orgs = store
        .list_organizations(&by_location, &page(50))
        .await
        .unwrap();
    assert_eq!(ids(&orgs, |o| &o.id), [demo::ORG_BISTRO]);

    let mixed = TenantScope {
        organization_ids: vec![demo::ORG_BISTRO.to_owned()],
        location_ids: vec![demo::LOC_PARIS.to_owned(), demo::LOC_BOSTON.to_owned()],
        ..TenantScope::default()
    };
    let orgs = store.list_organizations(&mixed, &page(50)).await.unwrap();
    assert_eq!(ids(&orgs, |o| &o.id), [demo::ORG_BISTRO, demo::ORG_HARBOR]);

    let empty = TenantScope::default();
    assert!(
        store
            .list_organizations(&empty, &page(50))
            .await
            .unwrap()
            .is_empty()
    );
    let unknown = TenantScope {
        location_ids: vec!["loc_unknown".to_owned()],
        ..TenantScope::default()
    };
    assert!(
        store
            .list_organizations(&unknown, &page(50))
            .await
            .unwrap()
            .is_empty()
    );
}

async fn organizations_paginate(store: &impl Backend, _: &DataSet) {
    let all = TenantScope {
        all_tenants: true,
        ..TenantScope::default()
    };
    let first = store.list_organizations(&all, &page(1)).await.unwrap();
    assert_eq!(first.len(), 2, "limit + 1 rows tell a next page exists");
    let after = PageRequest {
        limit: 1,
        after: Some(PageAfter {
            key: first[0].name.clone(),
            id: first[0].id.clone(),
        }),
    };
    let second = store.list_organizations(&all, &after).await.unwrap();
    assert_eq!(ids(&second, |o| &o.id), [demo::ORG_HARBOR]);
}

async fn locations_of_an_organization(store: &impl Backend, data: &DataSet) {
    let mut expected: Vec<_> = data
        .locations
        .iter()
        .filter(|l| l.organization_id == demo::ORG_BISTRO)
        .map(|l| (l.name.clone(), l.id.clone()))
        .collect();
    expected.sort();
    let expected: Vec<String> = expected.into_iter().map(|(_, id)| id).collect();
    assert_eq!(expected.len(), 4);

    let all = store
        .list_locations(demo::ORG_BISTRO, None, &page(50))
        .await
        .unwrap();
    assert_eq!(ids(&all, |l| &l.id), expected);
    assert!(
        all.iter()
            .all(|l| l.organization_name == "Bistro Châtaigne")
    );

    // Two pages of two, then the rest.
    let mut request = page(2);
    let mut walked = Vec::new();
    loop {
        let mut rows = store
            .list_locations(demo::ORG_BISTRO, None, &request)
            .await
            .unwrap();
        let more = rows.len() > 2;
        rows.truncate(2);
        walked.extend(ids(&rows, |l| &l.id));
        if !more {
            break;
        }
        let last = rows.last().unwrap();
        request.after = Some(PageAfter {
            key: last.name.clone(),
            id: last.id.clone(),
        });
    }
    assert_eq!(walked, expected);

    let only = [demo::LOC_PARIS.to_owned(), demo::LOC_BROOKLYN.to_owned()];
    let some = store
        .list_locations(demo::ORG_BISTRO, Some(&only), &page(50))
        .await
        .unwrap();
    assert_eq!(ids(&some, |l| &l.id), [demo::LOC_PARIS]);
    let none = store
        .list_locations(demo::ORG_BISTRO, Some(&[]), &page(50))
        .await
        .unwrap();
    assert!(none.is_empty());

    let paris = store.get_location(demo::LOC_PARIS).await.unwrap().unwrap();
    assert_eq!(paris.name, "Châtaigne Paris 11e");
    assert_eq!(paris.timezone, "Europe/Paris");
    assert_eq!(paris.currency, "EUR");
    assert_eq!(paris.postal_code, "75011");
    assert_eq!(paris.organization_id, demo::ORG_BISTRO);
    assert_eq!(store.get_location("loc_unknown").await.unwrap(), None);
}

async fn orders_paginate_exactly_once(store: &impl Backend, data: &DataSet) {
    let filter = OrderFilter::default();
    let expected = expected_orders(data, &filter);
    assert_eq!(expected.len(), data.orders.len());
    for limit in [1, 7, 50] {
        let walked = all_orders(store, &filter, limit).await;
        assert_eq!(ids(&walked, |o| &o.id), expected, "limit {limit}");
    }
    let filtered = OrderFilter {
        organization_ids: Some(vec![demo::ORG_HARBOR.to_owned()]),
        statuses: vec![OrderStatus::Completed, OrderStatus::Cancelled],
        created_from_ms: Some(NOW_MS - 30 * HOUR_MS),
        ..OrderFilter::default()
    };
    let expected = expected_orders(data, &filtered);
    assert!(expected.len() > 10);
    let walked = all_orders(store, &filtered, 4).await;
    assert_eq!(ids(&walked, |o| &o.id), expected);
}

async fn orders_paginate_oldest_first_exactly_once(store: &impl Backend, data: &DataSet) {
    let newest = expected_orders(data, &OrderFilter::default());
    for filter in [
        OrderFilter {
            sort: SortOrder::OldestFirst,
            ..OrderFilter::default()
        },
        // One branch per location and status, merged.
        OrderFilter {
            location_ids: Some(vec![demo::LOC_PARIS.to_owned(), demo::LOC_LYON.to_owned()]),
            statuses: vec![OrderStatus::Received, OrderStatus::Completed],
            sort: SortOrder::OldestFirst,
            ..OrderFilter::default()
        },
    ] {
        let expected = expected_orders(data, &filter);
        assert!(expected.len() > 10, "{filter:?}");
        for limit in [1, 7, 50] {
            let walked = all_orders(store, &filter, limit).await;
            assert_eq!(ids(&walked, |o| &o.id), expected, "limit {limit}");
        }
    }
    let mut oldest = expected_orders(
        data,
        &OrderFilter {
            sort: SortOrder::OldestFirst,
            ..OrderFilter::default()
        },
    );
    oldest.reverse();
    assert_eq!(oldest, newest, "oldest first is newest first reversed");
}

async fn order_filters(store: &impl Backend, data: &DataSet) {
    let filters = [
        OrderFilter {
            location_ids: Some(vec![demo::LOC_PARIS.to_owned()]),
            ..OrderFilter::default()
        },
        OrderFilter {
            organization_ids: Some(vec![demo::ORG_HARBOR.to_owned()]),
            ..OrderFilter::default()
        },
        OrderFilter {
            statuses: vec![OrderStatus::Received, OrderStatus::Preparing],
            ..OrderFilter::default()
        },
        OrderFilter {
            statuses: vec![OrderStatus::Cancelled],
            ..OrderFilter::default()
        },
        OrderFilter {
            created_from_ms: Some(NOW_MS - 20 * HOUR_MS),
            ..OrderFilter::default()
        },
        OrderFilter {
            created_to_ms: Some(NOW_MS - 20 * HOUR_MS),
            ..OrderFilter::default()
        },
        // Many keys and statuses: IN-lists rather than one branch per pair.
        OrderFilter {
            location_ids: Some(
                (0..40)
                    .map(|i| format!("loc_unknown{i}"))
                    .chain([demo::LOC_PARIS.to_owned()])
                    .collect(),
            ),
            statuses: vec![OrderStatus::Completed, OrderStatus::Received],
            ..OrderFilter::default()
        },
        OrderFilter {
            location_ids: Some(vec![demo::LOC_BROOKLYN.to_owned()]),
            statuses: vec![OrderStatus::Completed],
            created_from_ms: Some(NOW_MS - 40 * HOUR_MS),
            created_to_ms: Some(NOW_MS - 10 * HOUR_MS),
            ..OrderFilter::default()
        },
    ];
    for filter in &filters {
        let expected = expected_orders(data, filter);
        assert!(!expected.is_empty(), "the data set exercises {filter:?}");
        assert!(
            expected.len() < data.orders.len(),
            "{filter:?} filters something"
        );
        let walked = all_orders(store, filter, 50).await;
        assert_eq!(ids(&walked, |o| &o.id), expected, "{filter:?}");
    }
    // The bounds: from is inclusive, to exclusive.
    let pivot = &data.orders[data.orders.len() / 2];
    let from = OrderFilter {
        location_ids: Some(vec![pivot.location_id.clone()]),
        created_from_ms: Some(pivot.created_at_ms),
        ..OrderFilter::default()
    };
    let to = OrderFilter {
        created_from_ms: None,
        created_to_ms: Some(pivot.created_at_ms),
        ..from.clone()
    };
    let with_from = ids(&all_orders(store, &from, 50).await, |o| &o.id);
    let with_to = ids(&all_orders(store, &to, 50).await, |o| &o.id);
    assert!(with_from.contains(&pivot.id));
    assert!(!with_to.contains(&pivot.id));
}

async fn orders_by_number_with_or_without_prefix_in_any_case(store: &impl Backend, data: &DataSet) {
    let target = &data.orders[data.orders.len() / 3];
    let (prefix, bare) = target.number.split_once('-').unwrap();
    // The same day and sequence at other locations: a bare number finds them
    // all, the prefixed one only its location's city.
    let same_bare: Vec<&OrderRow> = data
        .orders
        .iter()
        .filter(|o| o.number.split_once('-').unwrap().1 == bare)
        .collect();
    assert!(
        same_bare.len() > 1,
        "the data set has one number at several locations"
    );
    let newest_first = |rows: Vec<&OrderRow>| {
        let mut rows = rows;
        rows.sort_by(|a, b| {
            b.created_at_ms
                .cmp(&a.created_at_ms)
                .then_with(|| b.id.cmp(&a.id))
        });
        ids(&rows, |o| &o.id)
    };
    let by = |number: &str, filter: OrderFilter| OrderFilter {
        number: Some(OrderNumberQuery::parse("number", number).unwrap()),
        ..filter
    };
    let lower = target.number.to_lowercase();
    let prefixed_expected = newest_first(
        same_bare
            .iter()
            .copied()
            .filter(|o| o.number == target.number)
            .collect(),
    );
    assert!(prefixed_expected.contains(&target.id));
    assert!(prefixed_expected.len() < same_bare.len());
    for (number, filter, expected) in [
        (
            target.number.as_str(),
            OrderFilter::default(),
            prefixed_expected.clone(),
        ),
        (lower.as_str(), OrderFilter::default(), prefixed_expected),
        (
            bare,
            OrderFilter::default(),
            newest_first(same_bare.clone()),
        ),
        (
            bare,
            OrderFilter {
                location_ids: Some(vec![target.location_id.clone()]),
                ..OrderFilter::default()
            },
            vec![target.id.clone()],
        ),
        (
            bare,
            OrderFilter {
                organization_ids: Some(vec![target.organization_id.clone()]),
                sort: SortOrder::OldestFirst,
                ..OrderFilter::default()
            },
            {
                let mut ids = newest_first(
                    same_bare
                        .iter()
                        .copied()
                        .filter(|o| o.organization_id == target.organization_id)
                        .collect(),
                );
                ids.reverse();
                ids
            },
        ),
    ] {
        let filter = by(number, filter);
        let found = ids(&all_orders(store, &filter, 50).await, |o| &o.id);
        assert_eq!(found, expected, "{number}");
        // Paged one by one, the same orders.
        let paged = ids(&all_orders(store, &filter, 1).await, |o| &o.id);
        assert_eq!(paged, expected, "{number} by pages of one");
    }
    // With filters that exclude it, or another prefix or day: nothing.
    let other_status = OrderStatus::ALL
        .into_iter()
        .find(|s| s.as_str() != target.status)
        .unwrap();
    let excluded = by(
        &target.number,
        OrderFilter {
            statuses: vec![other_status],
            location_ids: Some(vec![target.location_id.clone()]),
            ..OrderFilter::default()
        },
    );
    assert!(
        store
            .list_orders(&excluded, &page(20))
            .await
            .unwrap()
            .iter()
            .all(|o| o.id != target.id)
    );
    let other_prefix = format!("{}Q-{bare}", &prefix[..prefix.len().min(2)]);
    for number in [other_prefix.as_str(), "991231-999"] {
        let none = store
            .list_orders(&by(number, OrderFilter::default()), &page(20))
            .await
            .unwrap();
        assert!(none.is_empty(), "{number}: {none:?}");
    }
}

async fn order_tenant_union(store: &impl Backend, data: &DataSet) {
    let cases = [
        // Brooklyn, or anything of Bistro: never Boston.
        (
            Some(vec![demo::LOC_BROOKLYN.to_owned()]),
            Some(vec![demo::ORG_BISTRO.to_owned()]),
        ),
        // Overlap: Paris is in Bistro; no order twice.
        (
            Some(vec![demo::LOC_PARIS.to_owned()]),
            Some(vec![demo::ORG_BISTRO.to_owned()]),
        ),
        // Only locations, as a location-level member's scope.
        (
            Some(vec![
                demo::LOC_PARIS.to_owned(),
                demo::LOC_BOSTON.to_owned(),
            ]),
            Some(vec![]),
        ),
        // Empty lists on both sides: nothing.
        (Some(vec![]), Some(vec![])),
        (Some(vec![]), None),
        (None, Some(vec![])),
        // Many keys: the IN-list form of the query.
        (
            Some(
                (0..40)
                    .map(|i| format!("loc_unknown{i}"))
                    .chain([demo::LOC_LYON.to_owned()])
                    .collect(),
            ),
            Some(vec![demo::ORG_HARBOR.to_owned()]),
        ),
    ];
    for (location_ids, organization_ids) in cases {
        let filter = OrderFilter {
            location_ids,
            organization_ids,
            ..OrderFilter::default()
        };
        let expected = expected_orders(data, &filter);
        for limit in [3, 50] {
            let walked = all_orders(store, &filter, limit).await;
            assert_eq!(ids(&walked, |o| &o.id), expected, "{filter:?} by {limit}");
        }
    }
    let union = OrderFilter {
        location_ids: Some(vec![demo::LOC_BROOKLYN.to_owned()]),
        organization_ids: Some(vec![demo::ORG_BISTRO.to_owned()]),
        ..OrderFilter::default()
    };
    let walked = all_orders(store, &union, 50).await;
    assert!(walked.iter().any(|o| o.location_id == demo::LOC_BROOKLYN));
    assert!(walked.iter().any(|o| o.location_id == demo::LOC_PARIS));
    assert!(walked.iter().all(|o| o.location_id != demo::LOC_BOSTON));
}

async fn invalid_order_cursor(store: &impl Backend, _: &DataSet) {
    let request = PageRequest {
        limit: 5,
        after: Some(PageAfter {
            key: "not-a-time".to_owned(),
            id: "ord_x".to_owned(),
        }),
    };
    let result = store.list_orders(&OrderFilter::default(), &request).await;
    assert!(matches!(result, Err(DomainError::CursorInvalid)));
}

async fn order_detail(store: &impl Backend, data: &DataSet) {
    let many_lines = data
        .orders
        .iter()
        .find(|o| {
            data.order_lines
                .iter()
                .filter(|l| l.order_id == o.id)
                .count()
                >= 3
        })
        .unwrap();
    let (order, lines) = store.get_order(&many_lines.id).await.unwrap().unwrap();
    assert_eq!(order.id, many_lines.id);
    assert_eq!(order.number, many_lines.number);
    assert_eq!(order.status, many_lines.status);
    assert_eq!(order.fulfillment, many_lines.fulfillment);
    assert_eq!(order.total_minor, many_lines.total_minor);
    assert_eq!(order.created_at_ms, many_lines.created_at_ms);
    assert_eq!(order.updated_at_ms, many_lines.updated_at_ms);
    let location = data
        .locations
        .iter()
        .find(|l| l.id == order.location_id)
        .unwrap();
    assert_eq!(order.location_name, location.name);
    assert_eq!(order.timezone, location.timezone);
    assert_eq!(order.currency, location.currency);
    let customer = data
        .customers
        .iter()
        .find(|c| c.id == order.customer_id)
        .unwrap();
    assert_eq!(order.customer_name, customer.display_name);

    let numbers: Vec<i64> = lines.iter().map(|l| l.line_no).collect();
    let mut sorted = numbers.clone();
    sorted.sort_unstable();
    assert_eq!(numbers, sorted, "lines in line_no order");
    let expected: Vec<_> = data
        .order_lines
        .iter()
        .filter(|l| l.order_id == order.id)
        .map(|l| (l.line_no, l.item_id.clone(), l.quantity, l.unit_price_minor))
        .collect();
    let got: Vec<_> = lines
        .iter()
        .map(|l| (l.line_no, l.item_id.clone(), l.quantity, l.unit_price_minor))
        .collect();
    assert_eq!(got, expected);
    let total: i64 = lines.iter().map(|l| l.quantity * l.unit_price_minor).sum();
    assert_eq!(total, order.total_minor);

    assert!(store.get_order("ord_unknown").await.unwrap().is_none());
}

async fn owners(store: &impl Backend, data: &DataSet) {
    let order = data
        .orders
        .iter()
        .find(|o| o.location_id == demo::LOC_BOSTON)
        .unwrap();
    assert_eq!(
        store.order_owner(&order.id).await.unwrap(),
        Some(Owner {
            organization_id: demo::ORG_HARBOR.to_owned(),
            location_id: Some(demo::LOC_BOSTON.to_owned()),
        })
    );
    assert_eq!(store.order_owner("ord_unknown").await.unwrap(), None);
    assert_eq!(
        store.location_owner(demo::LOC_LYON).await.unwrap(),
        Some(Owner {
            organization_id: demo::ORG_BISTRO.to_owned(),
            location_id: Some(demo::LOC_LYON.to_owned()),
        })
    );
    assert_eq!(store.location_owner("loc_unknown").await.unwrap(), None);
    // An ID of another kind is not a location.
    assert_eq!(store.location_owner(&order.id).await.unwrap(), None);
}

/// An owner, once read, is not read again: owners never change, so the store
/// keeps the first answer (here, a change made behind its back is not seen),
/// while a resource not found is looked up again each time.
#[tokio::test]
async fn an_owner_once_read_is_not_read_again() {
    let store = sqlite_store().await;
    let bistro = Some(Owner {
        organization_id: demo::ORG_BISTRO.to_owned(),
        location_id: Some(demo::LOC_LYON.to_owned()),
    });
    assert_eq!(store.location_owner(demo::LOC_LYON).await.unwrap(), bistro);
    sqlx::query("UPDATE locations SET organization_id = $1 WHERE id = $2")
        .bind(demo::ORG_HARBOR)
        .bind(demo::LOC_LYON)
        .execute(store.pool())
        .await
        .unwrap();
    assert_eq!(store.location_owner(demo::LOC_LYON).await.unwrap(), bistro);

    assert_eq!(store.location_owner("loc_later").await.unwrap(), None);
    sqlx::query(
        "INSERT INTO locations (id, organization_id, name, line1, city, postal_code, \
         country, timezone, currency, created_at_ms, updated_at_ms) \
         VALUES ('loc_later', $1, 'Later', '1 rue', 'Lyon', '69001', 'FR', \
         'Europe/Paris', 'EUR', 0, 0)",
    )
    .bind(demo::ORG_HARBOR)
    .execute(store.pool())
    .await
    .unwrap();
    assert_eq!(
        store.location_owner("loc_later").await.unwrap(),
        Some(Owner {
            organization_id: demo::ORG_HARBOR.to_owned(),
            location_id: Some("loc_later".to_owned()),
        })
    );
}

/// The same queries on the same data give the same records on both backends.
#[tokio::test]
async fn backends_agree() {
    let Some(pg) = postgres_store().await else {
        return;
    };
    let lite = sqlite_store().await;
    let scopes = [
        TenantScope {
            all_tenants: true,
            ..TenantScope::default()
        },
        TenantScope {
            location_ids: vec![demo::LOC_BOSTON.to_owned()],
            ..TenantScope::default()
        },
    ];
    for scope in &scopes {
        assert_eq!(
            lite.list_organizations(scope, &page(50)).await.unwrap(),
            pg.list_organizations(scope, &page(50)).await.unwrap()
        );
    }
    for org in [demo::ORG_BISTRO, demo::ORG_HARBOR] {
        assert_eq!(
            lite.list_locations(org, None, &page(50)).await.unwrap(),
            pg.list_locations(org, None, &page(50)).await.unwrap()
        );
    }
    let filters = [
        OrderFilter::default(),
        OrderFilter {
            location_ids: Some(vec![demo::LOC_PARIS.to_owned()]),
            organization_ids: Some(vec![demo::ORG_HARBOR.to_owned()]),
            statuses: vec![OrderStatus::Completed, OrderStatus::Ready],
            created_from_ms: Some(NOW_MS - 36 * HOUR_MS),
            created_to_ms: Some(NOW_MS - HOUR_MS),
            sort: SortOrder::OldestFirst,
            number: None,
        },
        OrderFilter {
            number: Some(
                OrderNumberQuery::parse(
                    "number",
                    data().orders[0].number.split_once('-').unwrap().1,
                )
                .unwrap(),
            ),
            ..OrderFilter::default()
        },
    ];
    for filter in &filters {
        let a = all_orders(&lite, filter, 9).await;
        let b = all_orders(&pg, filter, 9).await;
        assert!(!a.is_empty());
        assert_eq!(a, b);
    }
    for order in data().orders.iter().step_by(37) {
        assert_eq!(
            lite.get_order(&order.id).await.unwrap(),
            pg.get_order(&order.id).await.unwrap()
        );
        assert_eq!(
            lite.order_owner(&order.id).await.unwrap(),
            pg.order_owner(&order.id).await.unwrap()
        );
    }
    for location in &data().locations {
        assert_eq!(
            lite.get_location(&location.id).await.unwrap(),
            pg.get_location(&location.id).await.unwrap()
        );
    }
}

/// A file database is created when missing and keeps its data across opens.
#[tokio::test]
async fn sqlite_file_is_created_and_reopened() {
    let dir = std::env::temp_dir().join(format!("store-suite-{}", uuid_like()));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("sqlite://{}/tools.db", dir.display());
    {
        let store = SqliteStore::connect(&url, &StoreOptions::default())
            .await
            .unwrap();
        store.migrate().await.unwrap();
        store.load(data()).await.unwrap();
        store.pool().close().await;
    }
    let store = SqliteStore::connect(&url, &StoreOptions::default())
        .await
        .unwrap();
    store.migrate().await.unwrap();
    assert_eq!(store.count("orders").await, data().orders.len() as i64);
    let mode: String = sqlx::query_scalar("PRAGMA journal_mode")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    let keys: i64 = sqlx::query_scalar("PRAGMA foreign_keys")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(keys, 1);
    store.pool().close().await;
    std::fs::remove_dir_all(&dir).unwrap();
}

/// An unreachable PostgreSQL server fails within the connect timeout (on the
/// tokio clock, paused: no waiting for the timeout).
#[tokio::test(start_paused = true)]
async fn an_unreachable_postgres_fails_within_the_connect_timeout() {
    let options = StoreOptions {
        connect_timeout: std::time::Duration::from_millis(500),
        ..StoreOptions::default()
    };
    let started = tokio::time::Instant::now();
    let result = PgStore::connect("postgres://postgres@127.0.0.1:1/none", &options).await;
    assert!(matches!(
        result,
        Err(DomainError::Dependency(Dependency::Database, _))
    ));
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
}

/// The statement timeout is set on PostgreSQL connections and maps to a deadline error.
#[tokio::test]
async fn postgres_statement_timeout() {
    let Some(url) = chataigne_common::testing::fresh_postgres_database("tools").await else {
        return;
    };
    let options = StoreOptions {
        statement_timeout: std::time::Duration::from_millis(200),
        ..StoreOptions::default()
    };
    let store = PgStore::connect(&url, &options).await.unwrap();
    let setting: String = sqlx::query_scalar("SHOW statement_timeout")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(setting, "200ms");
    let error = sqlx::query("SELECT pg_sleep(2)")
        .execute(store.pool())
        .await
        .unwrap_err();
    assert!(matches!(
        DomainError::from(error),
        DomainError::DeadlineExceeded
    ));
}

fn uuid_like() -> String {
    format!(
        "{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )
}

/// Every list query's page size is written into the statement PostgreSQL
/// prepares, never bound: with `LIMIT $n` the planner cannot cost its generic
/// plan and, on a production-sized table, plans again at every call (0.7–0.9
/// ms of planning for 0.2 ms of execution on the orders page). Read from the
/// statements the store really prepared, on its one connection.
#[tokio::test]
async fn list_queries_prepare_their_page_size_as_a_literal_on_postgres() {
    use chataigne_tools::domain::{CatalogFilter, ConversationFilter, CustomerFilter};
    use chataigne_tools::store::{ConversationStore, CustomerStore, VenueStore};

    let Some(url) = chataigne_common::testing::fresh_postgres_database("plans").await else {
        assert!(
            !chataigne_common::testing::in_ci(),
            "PostgreSQL is required in CI"
        );
        return;
    };
    // One connection, so that its prepared statements are the ones read below
    // (the plan counts tell which statements ran at every iteration).
    let options = StoreOptions {
        max_connections: 1,
        ..StoreOptions::default()
    };
    let store = PgStore::connect(&url, &options).await.unwrap();
    store.migrate().await.unwrap();
    store.load(data()).await.unwrap();
    let location = &data().locations[0];
    let customer = &data().customers[0];
    let conversation = &data().conversations[0];
    let scope = TenantScope {
        organization_ids: vec![location.organization_id.clone()],
        ..TenantScope::default()
    };
    let orders = OrderFilter {
        location_ids: Some(vec![location.id.clone()]),
        ..OrderFilter::default()
    };
    let customers = CustomerFilter {
        organization_id: location.organization_id.clone(),
        ..CustomerFilter::default()
    };
    let conversations = ConversationFilter {
        location_id: location.id.clone(),
        ..ConversationFilter::default()
    };
    let items = CatalogFilter {
        location_id: location.id.clone(),
        category_id: None,
        availability: None,
        name_contains: None,
        now_ms: NOW_MS,
    };
    const CALLS: i64 = 12;
    for _ in 0..CALLS {
        store.list_organizations(&scope, &page(20)).await.unwrap();
        store
            .list_locations(&location.organization_id, None, &page(20))
            .await
            .unwrap();
        store.list_orders(&orders, &page(20)).await.unwrap();
        store.list_customers(&customers, &page(20)).await.unwrap();
        store.customer_recent_orders(&customer.id, 5).await.unwrap();
        store
            .list_conversations(&conversations, &page(20))
            .await
            .unwrap();
        store
            .list_messages(&conversation.id, &page(20), SortOrder::default())
            .await
            .unwrap();
        store.list_catalog_items(&items, &page(20)).await.unwrap();
    }
    let plans: Vec<(String, i64, i64)> = sqlx::query_as(
        "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements \
         WHERE statement LIKE '%LIMIT%'",
    )
    .fetch_all(store.pool())
    .await
    .unwrap();
    let executed: Vec<_> = plans
        .iter()
        .filter(|(_, generic, custom)| generic + custom >= CALLS)
        .collect();
    assert!(
        executed.len() >= 8,
        "each list query ran {CALLS} times on the one connection: {plans:#?}"
    );
    for (statement, _, _) in executed {
        assert!(
            !statement.contains("LIMIT $"),
            "the page size is bound, not written into the statement: {statement}"
        );
    }
}
