//! Transcript queries and customer name filters appear in no log line: the
//! conversation and customer tools run through the catalogue with every
//! event captured (the service's and the database driver's, down to TRACE),
//! including when the database is slow enough for statements to be logged.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use chataigne_common::demo;
use chataigne_tools::store::seed::SeedSpec;
use serde_json::json;
use support::{context, seeded_sqlite, tools};

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<u8>>>);

impl Write for Capture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn transcript_queries_and_name_filters_are_not_logged() {
    let capture = Capture::default();
    let writer = capture.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_max_level(tracing::Level::TRACE)
        .with_writer(move || writer.clone())
        .finish();
    // Global: the SQLite driver runs statements on its own worker thread.
    // This binary holds this one test, so nothing else installs a subscriber.
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let store = seeded_sqlite(&SeedSpec {
        now_ms: 1_749_929_400_000,
        days: 2,
        orders_per_location_per_day: 5,
        extra_locations: 0,
        seed: 3,
    })
    .await;
    let tools = tools(store, demo::USER_MANAGER);
    let ctx = context(1_749_929_400_000);
    const SECRET_QUERY: &str = "Qzx-allergy-secret-7731";
    const SECRET_NAME: &str = "Qzx-name-secret-4410";
    // Folded for the search, the accented query must not show up either.
    const SECRET_ACCENTED: &str = "Qzx-Œufs-brûlés-façon-8812";
    let calls = [
        (
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": SECRET_QUERY}),
        ),
        (
            "chataigne_conversations_list",
            json!({"location_id": "loc_unknown", "query": SECRET_QUERY}),
        ),
        (
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": SECRET_QUERY, "cursor": "bogus"}),
        ),
        (
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": SECRET_QUERY, "limit": 500}),
        ),
        (
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO, "name_query": SECRET_NAME}),
        ),
        (
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": SECRET_ACCENTED}),
        ),
        (
            "chataigne_catalog_items_list",
            json!({"location_id": demo::LOC_PARIS, "text": SECRET_ACCENTED}),
        ),
    ];
    for (name, arguments) in calls {
        // Successes and refusals alike.
        let _ = tools.call(name, arguments, &ctx).await;
    }
    let logs = String::from_utf8(capture.0.lock().unwrap().clone()).unwrap();
    assert!(
        logs.contains("conversation_messages"),
        "the driver's statement events are captured"
    );
    for secret in [SECRET_QUERY, SECRET_NAME, SECRET_ACCENTED] {
        let lower = secret.to_ascii_lowercase();
        let folded = chataigne_tools::domain::fold(secret);
        assert!(
            !logs.contains(secret) && !logs.contains(&lower) && !logs.contains(&folded),
            "{secret} was logged"
        );
    }
}
