//! The two statuses of a location told apart, on both backends: the
//! order-taking switch (`status`, "are we accepting orders") and whether the
//! location is open now by its opening hours in its timezone, with the next
//! opening time; Bordeaux accepts orders on a Monday its hours mark closed.

use crate::support;

use std::sync::OnceLock;

use chataigne_common::demo;
use chataigne_tools::store::seed::{DataSet, SeedSpec};
use chataigne_tools::store::{PgStore, SqliteStore, Store};
use serde_json::{Value, json};

/// Monday 7 December 2026, 19:30 in Bordeaux (18:30 UTC).
const MONDAY_EVENING_MS: i64 = 1_796_668_200_000;
/// Tuesday 8 December 2026, 13:00 in Bordeaux (12:00 UTC).
const TUESDAY_LUNCH_MS: i64 = 1_796_731_200_000;

fn data() -> &'static DataSet {
    static DATA: OnceLock<DataSet> = OnceLock::new();
    DATA.get_or_init(|| {
        DataSet::generate(&SeedSpec {
            now_ms: MONDAY_EVENING_MS,
            days: 1,
            orders_per_location_per_day: 4,
            extra_locations: 0,
            seed: 11,
        })
    })
}

async fn sqlite_store() -> SqliteStore {
    support::loaded_sqlite(data()).await
}

async fn postgres_store() -> Option<PgStore> {
    support::loaded_postgres("hours", data()).await
}

async fn call<S: Store>(store: &S, tool: &str, now_ms: i64) -> (Value, String) {
    let tools = support::tools(store.clone(), demo::USER_MANAGER);
    let result = tools
        .call(
            tool,
            json!({"location_id": demo::LOC_BORDEAUX}),
            &support::context(now_ms),
        )
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e:?}"));
    (
        serde_json::from_str(&result.data_json).unwrap(),
        result.text,
    )
}

async fn a_location_accepts_orders_on_a_day_its_hours_mark_closed<S: Store + Clone>(store: &S) {
    for tool in ["chataigne_location_status_get", "chataigne_location_get"] {
        let (data, text) = call(store, tool, MONDAY_EVENING_MS).await;
        assert_eq!(data["status"]["status"], "accepting", "{tool}: {data}");
        assert_eq!(data["open_now"], false, "{tool}");
        assert_eq!(
            data["next_opening_at"], "2026-12-08T12:00:00+01:00",
            "{tool}"
        );
        assert!(text.contains("accepting"), "{tool}: {text}");
        assert!(
            text.contains(
                "closed now by its opening hours; next opening 2026-12-08T12:00:00+01:00"
            ),
            "{tool}: {text}"
        );

        let (data, text) = call(store, tool, TUESDAY_LUNCH_MS).await;
        assert_eq!(data["open_now"], true, "{tool}");
        assert_eq!(
            data["next_opening_at"], "2026-12-08T19:00:00+01:00",
            "{tool}"
        );
        assert!(
            text.contains("open now by its opening hours until 2026-12-08T14:30:00+01:00"),
            "{tool}: {text}"
        );
    }
}

chataigne_common::on_both_backends! {
    sqlite: sqlite_store().await,
    postgres: postgres_store().await,
    run: |store| (&store),
    tests: [
        a_location_accepts_orders_on_a_day_its_hours_mark_closed,
    ],
}
