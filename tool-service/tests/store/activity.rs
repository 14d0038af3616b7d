//! Behaviour tests of the customer, conversation, order-update and analytics
//! storage, each run against SQLite (in memory) and PostgreSQL (a fresh
//! database per test) on a generated data set checked against a reference
//! computed here from the same rows.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use chataigne_common::demo;
use chataigne_tools::domain::{
    Bucket, ConversationFilter, ConversationStatus, CustomerFilter, MetricSums, OrderStatus,
    PageAfter, PageRequest, SortOrder, contains_pattern, fold,
};
use chataigne_tools::store::seed::{DataSet, OrderRow, SeedSpec};
use chataigne_tools::store::{GuardedWrite, Owner, PgStore, SqliteStore, Store};
use chrono::{DateTime, NaiveDate};
use chrono_tz::Tz;

/// Saturday 14 June 2025, 19:30 UTC.
const NOW_MS: i64 = 1_749_929_400_000;

fn data() -> &'static DataSet {
    static DATA: OnceLock<DataSet> = OnceLock::new();
    DATA.get_or_init(|| {
        DataSet::generate(&SeedSpec {
            now_ms: NOW_MS,
            days: 45,
            orders_per_location_per_day: 8,
            extra_locations: 1,
            seed: 7,
        })
    })
}

/// A backend with one direct SQL count, for checks the traits do not offer.
trait Backend: Store {
    async fn count_where_location(&self, sql: &'static str, location_id: &str) -> i64;
}

/// The same direct count on each backend's own pool.
macro_rules! direct_count {
    ($($store:ty),*) => {$(
        impl Backend for $store {
            async fn count_where_location(&self, sql: &'static str, location_id: &str) -> i64 {
                sqlx::query_scalar(sql)
                    .bind(location_id)
                    .fetch_one(self.pool())
                    .await
                    .unwrap()
            }
        }
    )*};
}

direct_count!(SqliteStore, PgStore);

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: support::loaded_sqlite(data()).await,
    postgres: support::loaded_postgres("activity", data()).await,
    run: |store| (&store, data()),
    tests: [
        rollup_matches_a_direct_count,
        rollup_refresh_is_idempotent,
        completion_moves_the_rollup,
        status_write_is_guarded_by_the_observed_status,
        a_change_of_several_steps_records_each_in_the_history_at_once,
        concurrent_writers_from_one_status_one_wins,
        customers_page_by_name_with_filters,
        customer_detail_and_recent_orders,
        conversations_filter_and_page,
        messages_page_newest_or_oldest_first,
        owners,
    ],
}

fn local_date(ms: i64, timezone: &str) -> NaiveDate {
    let tz: Tz = timezone.parse().unwrap();
    DateTime::from_timestamp_millis(ms)
        .unwrap()
        .with_timezone(&tz)
        .date_naive()
}

/// The daily rollup computed from the generated rows.
fn reference(data: &DataSet) -> BTreeMap<(String, NaiveDate), MetricSums> {
    let timezones: HashMap<&str, &str> = data
        .locations
        .iter()
        .map(|l| (l.id.as_str(), l.timezone.as_str()))
        .collect();
    let mut items: HashMap<&str, i64> = HashMap::new();
    for line in &data.order_lines {
        *items.entry(line.order_id.as_str()).or_default() += line.quantity;
    }
    let mut firsts: HashMap<(&str, &str), &OrderRow> = HashMap::new();
    let mut days: BTreeMap<(String, NaiveDate), MetricSums> = BTreeMap::new();
    for order in &data.orders {
        let date = local_date(order.created_at_ms, timezones[order.location_id.as_str()]);
        let sums = days.entry((order.location_id.clone(), date)).or_default();
        if order.status == "cancelled" {
            sums.cancelled_count += 1;
            continue;
        }
        sums.orders_count += 1;
        sums.revenue_minor += order.total_minor;
        sums.items_sold += items.get(order.id.as_str()).copied().unwrap_or(0);
        sums.completed_count += i64::from(order.status == "completed");
        sums.delivery_count += i64::from(order.fulfillment == "delivery");
        sums.pickup_count += i64::from(order.fulfillment == "pickup");
        let first = firsts
            .entry((order.location_id.as_str(), order.customer_id.as_str()))
            .or_insert(order);
        if (order.created_at_ms, &order.id) < (first.created_at_ms, &first.id) {
            *first = order;
        }
    }
    for first in firsts.values() {
        let date = local_date(first.created_at_ms, timezones[first.location_id.as_str()]);
        days.get_mut(&(first.location_id.clone(), date))
            .unwrap()
            .new_customers += 1;
    }
    days
}

async fn buckets(
    store: &impl Backend,
    location: &str,
    bucket: Bucket,
) -> BTreeMap<String, MetricSums> {
    store
        .metrics_buckets(location, "2000-01-01", "2099-12-31", bucket, None)
        .await
        .unwrap()
        .into_iter()
        .map(|row| (row.bucket_start.clone(), row.sums()))
        .collect()
}

async fn rollup_matches_a_direct_count(store: &impl Backend, data: &DataSet) {
    let reference = reference(data);
    for location in &data.locations {
        for bucket in [Bucket::Day, Bucket::Week, Bucket::Month] {
            let mut expected: BTreeMap<String, MetricSums> = BTreeMap::new();
            for ((loc, date), sums) in &reference {
                if *loc == location.id {
                    let start = bucket.start_of(*date).format("%Y-%m-%d").to_string();
                    *expected.entry(start).or_default() += *sums;
                }
            }
            assert_eq!(
                buckets(store, &location.id, bucket).await,
                expected,
                "{} by {bucket:?}",
                location.id
            );
        }
        let placed = store
            .count_where_location(
                "SELECT COUNT(*) FROM orders WHERE location_id = $1 AND status <> 'cancelled'",
                &location.id,
            )
            .await;
        let summed: i64 = buckets(store, &location.id, Bucket::Month)
            .await
            .values()
            .map(|s| s.orders_count)
            .sum();
        assert_eq!(summed, placed, "{}", location.id);
    }
    // A range narrower than the data keeps only its own days.
    let days = buckets(store, demo::LOC_PARIS, Bucket::Day).await;
    let (first, _) = days.iter().nth(3).unwrap();
    let narrow = store
        .metrics_buckets(demo::LOC_PARIS, first, first, Bucket::Month, None)
        .await
        .unwrap();
    assert_eq!(narrow.len(), 1);
    assert_eq!(narrow[0].sums(), days[first]);
}

async fn rollup_refresh_is_idempotent(store: &impl Backend, _data: &DataSet) {
    let before = buckets(store, demo::LOC_BROOKLYN, Bucket::Day).await;
    store.refresh_daily_metrics().await.unwrap();
    store.refresh_daily_metrics().await.unwrap();
    assert_eq!(
        buckets(store, demo::LOC_BROOKLYN, Bucket::Day).await,
        before
    );
}

fn order_in(data: &DataSet, status: &str) -> String {
    data.orders
        .iter()
        .find(|o| o.status == status)
        .unwrap_or_else(|| panic!("an order in {status}"))
        .id
        .clone()
}

async fn completion_moves_the_rollup(store: &impl Backend, data: &DataSet) {
    let id = &order_in(data, "ready");
    let row = data.orders.iter().find(|o| o.id == *id).unwrap();
    let timezone = &data
        .locations
        .iter()
        .find(|l| l.id == row.location_id)
        .unwrap()
        .timezone;
    let day = local_date(row.created_at_ms, timezone)
        .format("%Y-%m-%d")
        .to_string();
    let before = buckets(store, &row.location_id, Bucket::Day).await[&day];
    let write = store
        .update_order_status(
            id,
            OrderStatus::Ready,
            &[OrderStatus::Completed],
            NOW_MS + 1,
        )
        .await
        .unwrap();
    let GuardedWrite::Updated(order) = write else {
        panic!("the order was ready")
    };
    assert_eq!(order.status, "completed");
    assert_eq!(order.updated_at_ms, NOW_MS + 1);
    let after = buckets(store, &row.location_id, Bucket::Day).await[&day];
    assert_eq!(after.completed_count, before.completed_count + 1);
    assert_eq!(after.orders_count, before.orders_count);
    // The incremental change agrees with a rebuild.
    store.refresh_daily_metrics().await.unwrap();
    assert_eq!(
        buckets(store, &row.location_id, Bucket::Day).await[&day],
        after
    );
}

async fn status_write_is_guarded_by_the_observed_status(store: &impl Backend, data: &DataSet) {
    let id = &order_in(data, "received");
    let stale = store
        .update_order_status(id, OrderStatus::Accepted, &[OrderStatus::Preparing], NOW_MS)
        .await
        .unwrap();
    let GuardedWrite::Mismatch(current) = stale else {
        panic!("the order is still received")
    };
    assert_eq!(current.status, "received");
    assert!(
        store.order_status_history(id).await.unwrap().is_empty(),
        "a refused change leaves no history"
    );
    let (unchanged, _) = store.get_order(id).await.unwrap().unwrap();
    assert_eq!(unchanged.status, "received");
    assert!(matches!(
        store
            .update_order_status(
                "ord_unknown",
                OrderStatus::Received,
                &[OrderStatus::Accepted],
                NOW_MS
            )
            .await
            .unwrap(),
        GuardedWrite::Missing
    ));
}

async fn a_change_of_several_steps_records_each_in_the_history_at_once(
    store: &impl Backend,
    data: &DataSet,
) {
    let id = &order_in(data, "received");
    let row = data.orders.iter().find(|o| o.id == *id).unwrap();
    let timezone = &data
        .locations
        .iter()
        .find(|l| l.id == row.location_id)
        .unwrap()
        .timezone;
    let day = local_date(row.created_at_ms, timezone)
        .format("%Y-%m-%d")
        .to_string();
    let before = buckets(store, &row.location_id, Bucket::Day).await[&day];
    let steps = OrderStatus::Received
        .steps_to(OrderStatus::Completed)
        .unwrap();
    let GuardedWrite::Updated(order) = store
        .update_order_status(id, OrderStatus::Received, &steps, NOW_MS + 2)
        .await
        .unwrap()
    else {
        panic!("the order was received")
    };
    assert_eq!(order.status, "completed");
    let history: Vec<(String, String, i64)> = store
        .order_status_history(id)
        .await
        .unwrap()
        .into_iter()
        .map(|c| (c.from_status, c.to_status, c.changed_at_ms))
        .collect();
    let at = |from: &str, to: &str| (from.to_owned(), to.to_owned(), NOW_MS + 2);
    assert_eq!(
        history,
        vec![
            at("received", "accepted"),
            at("accepted", "preparing"),
            at("preparing", "ready"),
            at("ready", "completed"),
        ]
    );
    // Completed once, counted once.
    let after = buckets(store, &row.location_id, Bucket::Day).await[&day];
    assert_eq!(after.completed_count, before.completed_count + 1);
    // A later change adds to the history, after the earlier steps.
    let other = &data
        .orders
        .iter()
        .filter(|o| o.status == "received")
        .nth(1)
        .unwrap()
        .id;
    store
        .update_order_status(
            other,
            OrderStatus::Received,
            &[OrderStatus::Accepted],
            NOW_MS + 3,
        )
        .await
        .unwrap();
    store
        .update_order_status(
            other,
            OrderStatus::Accepted,
            &[OrderStatus::Preparing, OrderStatus::Ready],
            NOW_MS + 4,
        )
        .await
        .unwrap();
    let later: Vec<String> = store
        .order_status_history(other)
        .await
        .unwrap()
        .into_iter()
        .map(|c| {
            format!(
                "{}>{}@{}",
                c.from_status,
                c.to_status,
                c.changed_at_ms - NOW_MS
            )
        })
        .collect();
    assert_eq!(
        later,
        vec![
            "received>accepted@3",
            "accepted>preparing@4",
            "preparing>ready@4"
        ]
    );
}

async fn concurrent_writers_from_one_status_one_wins(store: &impl Backend, data: &DataSet) {
    let id = &order_in(data, "received");
    let (a, b) = tokio::join!(
        store.update_order_status(
            id,
            OrderStatus::Received,
            &[OrderStatus::Accepted],
            NOW_MS + 5
        ),
        store.update_order_status(
            id,
            OrderStatus::Received,
            &[OrderStatus::Accepted],
            NOW_MS + 6
        ),
    );
    let outcomes = [a.unwrap(), b.unwrap()];
    let won = outcomes
        .iter()
        .filter(|o| matches!(o, GuardedWrite::Updated(_)))
        .count();
    let lost: Vec<&str> = outcomes
        .iter()
        .filter_map(|o| match o {
            GuardedWrite::Mismatch(current) => Some(current.status.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(won, 1, "exactly one writer succeeds");
    assert_eq!(lost, vec!["accepted"], "the other sees the winner's status");
}

fn customer_ids_of(
    data: &DataSet,
    org: &str,
    location: Option<&str>,
    name: Option<&str>,
) -> Vec<String> {
    let mut customers: Vec<(&str, &str)> = data
        .customers
        .iter()
        .filter(|c| c.organization_id == org)
        .filter(|c| {
            location.is_none_or(|loc| {
                c.location_id.as_deref() == Some(loc)
                    || data
                        .orders
                        .iter()
                        .any(|o| o.customer_id == c.id && o.location_id == loc)
            })
        })
        .filter(|c| name.is_none_or(|n| fold(&c.display_name).contains(&fold(n))))
        .map(|c| (c.display_name.as_str(), c.id.as_str()))
        .collect();
    customers.sort();
    customers.into_iter().map(|(_, id)| id.to_owned()).collect()
}

async fn all_customers(store: &impl Backend, filter: &CustomerFilter) -> Vec<String> {
    let mut seen = Vec::new();
    let mut page = PageRequest {
        limit: 7,
        after: None,
    };
    loop {
        let rows = store.list_customers(filter, &page).await.unwrap();
        let more = rows.len() > 7;
        for row in rows.iter().take(7) {
            seen.push(row.id.clone());
        }
        if !more {
            return seen;
        }
        let last = &rows[6];
        page.after = Some(PageAfter {
            key: last.display_name.clone(),
            id: last.id.clone(),
        });
    }
}

async fn customers_page_by_name_with_filters(store: &impl Backend, data: &DataSet) {
    let org = CustomerFilter {
        organization_id: demo::ORG_BISTRO.to_owned(),
        ..CustomerFilter::default()
    };
    assert_eq!(
        all_customers(store, &org).await,
        customer_ids_of(data, demo::ORG_BISTRO, None, None)
    );
    let located = CustomerFilter {
        location_id: Some(demo::LOC_LYON.to_owned()),
        ..org.clone()
    };
    let expected = customer_ids_of(data, demo::ORG_BISTRO, Some(demo::LOC_LYON), None);
    assert!(!expected.is_empty());
    assert_eq!(all_customers(store, &located).await, expected);
    let named = CustomerFilter {
        name_pattern: Some(contains_pattern("AR")),
        ..org.clone()
    };
    let expected = customer_ids_of(data, demo::ORG_BISTRO, None, Some("ar"));
    assert!(!expected.is_empty());
    assert_eq!(all_customers(store, &named).await, expected);
    let wildcard = CustomerFilter {
        name_pattern: Some(contains_pattern("%")),
        ..org.clone()
    };
    assert!(
        all_customers(store, &wildcard).await.is_empty(),
        "% is literal"
    );
    // Order figures count the filtered location only.
    let page = PageRequest {
        limit: 50,
        after: None,
    };
    for row in store.list_customers(&located, &page).await.unwrap() {
        let orders: Vec<&OrderRow> = data
            .orders
            .iter()
            .filter(|o| o.customer_id == row.id && o.location_id == demo::LOC_LYON)
            .collect();
        assert_eq!(row.order_count, orders.len() as i64, "{}", row.id);
        assert_eq!(
            row.last_order_at_ms,
            orders.iter().map(|o| o.created_at_ms).max()
        );
        assert_eq!(row.last_order_timezone.is_some(), !orders.is_empty());
    }
}

async fn customer_detail_and_recent_orders(store: &impl Backend, data: &DataSet) {
    let customer = &data.customers[0];
    let record = store.get_customer(&customer.id).await.unwrap().unwrap();
    assert_eq!(record.display_name, customer.display_name);
    assert_eq!(record.email, customer.email);
    let mut orders: Vec<&OrderRow> = data
        .orders
        .iter()
        .filter(|o| o.customer_id == customer.id)
        .collect();
    assert_eq!(record.order_count, orders.len() as i64);
    orders.sort_by(|a, b| (b.created_at_ms, &b.id).cmp(&(a.created_at_ms, &a.id)));
    let recent: Vec<String> = store
        .customer_recent_orders(&customer.id, 5)
        .await
        .unwrap()
        .into_iter()
        .map(|o| o.id)
        .collect();
    let expected: Vec<String> = orders.iter().take(5).map(|o| o.id.clone()).collect();
    assert_eq!(recent, expected);
    assert!(store.get_customer("cus_unknown").await.unwrap().is_none());
}

/// The IDs of the conversations on `page` of `filter`.
async fn conversation_ids(
    store: &impl Backend,
    filter: &ConversationFilter,
    page: &PageRequest,
) -> Vec<String> {
    store
        .list_conversations(filter, page)
        .await
        .unwrap()
        .into_iter()
        .map(|c| c.id)
        .collect()
}

fn conversation_ids_of(
    data: &DataSet,
    location: &str,
    query: Option<&str>,
    status: Option<&str>,
) -> Vec<String> {
    let mut rows: Vec<(i64, &str)> = data
        .conversations
        .iter()
        .filter(|c| c.location_id == location)
        .filter(|c| status.is_none_or(|s| c.status == s))
        .filter(|c| {
            query.is_none_or(|q| {
                data.messages
                    .iter()
                    .any(|m| m.conversation_id == c.id && fold(&m.body).contains(&fold(q)))
            })
        })
        .map(|c| (c.last_message_at_ms, c.id.as_str()))
        .collect();
    rows.sort_by(|a, b| b.cmp(a));
    rows.into_iter().map(|(_, id)| id.to_owned()).collect()
}

async fn conversations_filter_and_page(store: &impl Backend, data: &DataSet) {
    let filter = ConversationFilter {
        location_id: demo::LOC_PARIS.to_owned(),
        ..ConversationFilter::default()
    };
    let mut seen = Vec::new();
    let mut page = PageRequest {
        limit: 6,
        after: None,
    };
    loop {
        let rows = store.list_conversations(&filter, &page).await.unwrap();
        let more = rows.len() > 6;
        for row in rows.iter().take(6) {
            let count = data
                .messages
                .iter()
                .filter(|m| m.conversation_id == row.id)
                .count();
            assert_eq!(row.message_count, count as i64);
            let newest = data
                .messages
                .iter()
                .filter(|m| m.conversation_id == row.id)
                .max_by_key(|m| (m.created_at_ms, m.id.clone()))
                .unwrap();
            assert_eq!(row.last_message_body.as_deref(), Some(newest.body.as_str()));
            seen.push(row.id.clone());
        }
        if !more {
            break;
        }
        page.after = Some(PageAfter {
            key: rows[5].last_message_at_ms.to_string(),
            id: rows[5].id.clone(),
        });
    }
    assert_eq!(seen, conversation_ids_of(data, demo::LOC_PARIS, None, None));
    // A word of one transcript finds exactly the conversations containing it.
    let body = &data
        .messages
        .iter()
        .find(|m| m.conversation_id.contains("paris11") && m.body.len() > 12)
        .unwrap()
        .body;
    let word: String = body.chars().skip(2).take(8).collect();
    let query = ConversationFilter {
        body_pattern: Some(contains_pattern(&word)),
        ..filter.clone()
    };
    let page = PageRequest {
        limit: 50,
        after: None,
    };
    let found = conversation_ids(store, &query, &page).await;
    let expected = conversation_ids_of(data, demo::LOC_PARIS, Some(&word), None);
    assert!(!expected.is_empty());
    assert_eq!(found, expected);
    // Case and accents are ignored, the same on both backends.
    for (text, some) in [
        ("À QUELLE", true),
        ("à quelle", true),
        ("a quelle", true),
        ("A QUELLE", true),
        ("boeuf", true),
        ("BŒUF", true),
        ("zzz introuvable", false),
    ] {
        let query = ConversationFilter {
            body_pattern: Some(contains_pattern(text)),
            ..filter.clone()
        };
        let found = conversation_ids(store, &query, &page).await;
        let expected = conversation_ids_of(data, demo::LOC_PARIS, Some(text), None);
        assert_eq!(!expected.is_empty(), some, "{text}");
        assert_eq!(found, expected, "{text}");
    }
    let closed = ConversationFilter {
        status: Some(ConversationStatus::Closed),
        ..filter.clone()
    };
    let found = conversation_ids(store, &closed, &page).await;
    assert_eq!(
        found,
        conversation_ids_of(data, demo::LOC_PARIS, None, Some("closed"))
    );
}

/// Every message of `conversation` in `sort` order, as (time, id), read
/// `limit` at a time.
async fn walk_messages(
    store: &impl Backend,
    conversation: &str,
    limit: u32,
    sort: SortOrder,
) -> Vec<(i64, String)> {
    let mut seen = Vec::new();
    let mut page = PageRequest { limit, after: None };
    let limit = limit as usize;
    loop {
        let rows = store
            .list_messages(conversation, &page, sort)
            .await
            .unwrap();
        let more = rows.len() > limit;
        seen.extend(
            rows.iter()
                .take(limit)
                .map(|m| (m.created_at_ms, m.id.clone())),
        );
        if !more {
            return seen;
        }
        page.after = Some(PageAfter {
            key: rows[limit - 1].created_at_ms.to_string(),
            id: rows[limit - 1].id.clone(),
        });
    }
}

async fn messages_page_newest_or_oldest_first(store: &impl Backend, data: &DataSet) {
    let conversation = "conv_01paris11_01";
    let mut expected: Vec<(i64, String)> = data
        .messages
        .iter()
        .filter(|m| m.conversation_id == conversation)
        .map(|m| (m.created_at_ms, m.id.clone()))
        .collect();
    expected.sort_by(|a, b| b.cmp(a));
    assert!(expected.len() > 100, "a long thread");
    let seen = walk_messages(store, conversation, 50, SortOrder::NewestFirst).await;
    assert_eq!(seen, expected);
    // Oldest first walks the same messages the other way round.
    let oldest = walk_messages(store, conversation, 40, SortOrder::OldestFirst).await;
    expected.reverse();
    assert_eq!(oldest, expected);
    let bad = PageRequest {
        limit: 5,
        after: Some(PageAfter {
            key: "not-a-time".into(),
            id: "x".into(),
        }),
    };
    assert!(
        store
            .list_messages(conversation, &bad, SortOrder::NewestFirst)
            .await
            .is_err()
    );
}

async fn owners(store: &impl Backend, data: &DataSet) {
    let customer = data
        .customers
        .iter()
        .find(|c| c.organization_id == demo::ORG_HARBOR)
        .unwrap();
    assert_eq!(
        store.customer_owner(&customer.id).await.unwrap(),
        Some(Owner {
            organization_id: demo::ORG_HARBOR.to_owned(),
            location_id: None,
        })
    );
    assert_eq!(
        store
            .conversation_owner("conv_01brooklyn_03")
            .await
            .unwrap(),
        Some(Owner {
            organization_id: demo::ORG_HARBOR.to_owned(),
            location_id: Some(demo::LOC_BROOKLYN.to_owned()),
        })
    );
    assert_eq!(store.customer_owner("cus_unknown").await.unwrap(), None);
    assert_eq!(
        store.conversation_owner("conv_unknown").await.unwrap(),
        None
    );
}
