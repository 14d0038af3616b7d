//! `chataigne_analytics_query`: a rollup agreeing with the orders listed, all
//! metrics by week with totals summing the buckets, the limits on metrics and
//! ranges, a completion moving its day at once, other tenants refused.

use super::*;

const ALL_METRICS: [&str; 9] = [
    "orders_count",
    "revenue",
    "average_order_value",
    "cancelled_count",
    "completed_count",
    "items_sold",
    "new_customers",
    "delivery_share",
    "pickup_share",
];

async fn a_past_day(c: &Client<'_>, manager: &str) -> (String, String) {
    let listed = c
        .call(
            manager,
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "limit": 50}),
        )
        .await;
    let orders = data(&listed)["orders"].as_array().unwrap();
    let newest = orders[0]["created_at"].as_str().unwrap();
    let past = orders
        .iter()
        .map(|o| o["created_at"].as_str().unwrap())
        .find(|t| t[..10] != newest[..10])
        .expect("two days of orders");
    (past[..10].to_owned(), past[19..].to_owned())
}

async fn analytics_agree_with_the_orders_keep_their_limits_and_follow_completions(scene: &Scene) {
    let c = &scene.client().await;
    let (manager, analyst) = (&*scene.manager, &*scene.analyst);
    // One day of the rollup agrees with the orders listed for that day.
    let (day, offset) = a_past_day(c, manager).await;
    let mut arguments = json!({
        "location_id": demo::LOC_PARIS,
        "created_from": format!("{day}T00:00:00{offset}"),
        "created_to": format!("{day}T23:59:59.999{offset}"),
        "limit": 50,
    });
    let (mut placed, mut cancelled) = (0, 0);
    loop {
        let page = c
            .call(manager, "chataigne_orders_list", arguments.clone())
            .await;
        for order in data(&page)["orders"].as_array().unwrap() {
            if order["status"] == "cancelled" {
                cancelled += 1;
            } else {
                placed += 1;
            }
        }
        let Some(cursor) = next_cursor(&page) else {
            break;
        };
        arguments["cursor"] = json!(cursor);
    }
    assert!(placed > 0);
    let one_day = c
        .call(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ["orders_count", "cancelled_count"],
                   "date_from": day, "date_to": day}),
        )
        .await;
    let d = data(&one_day);
    assert_eq!(d["buckets"].as_array().unwrap().len(), 1);
    assert_eq!(d["buckets"][0]["start"], day);
    assert_eq!(d["buckets"][0]["values"]["orders_count"], placed);
    assert_eq!(d["buckets"][0]["values"]["cancelled_count"], cancelled);
    assert!(
        d["buckets"][0]["values"].get("revenue").is_none(),
        "only what was asked"
    );

    // Eight metrics by week over a month, in French; totals sum the buckets.
    let year = &day[..4];
    let weekly = c
        .call_in(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": &ALL_METRICS[..8],
                   "date_from": format!("{year}-01-05"), "date_to": format!("{year}-02-03"),
                   "bucket": "week"}),
            Some("fr"),
        )
        .await;
    let d = data(&weekly);
    assert_eq!(d["timezone"], "Europe/Paris");
    assert_eq!(d["bucket"], "week");
    let buckets = d["buckets"].as_array().unwrap();
    assert!((5..=6).contains(&buckets.len()), "{}", buckets.len());
    let orders: u64 = buckets
        .iter()
        .map(|b| b["values"]["orders_count"].as_u64().unwrap())
        .sum();
    let revenue: i64 = buckets
        .iter()
        .map(|b| b["values"]["revenue"]["amount_minor"].as_i64().unwrap())
        .sum();
    assert_eq!(d["totals"]["orders_count"], orders);
    assert_eq!(d["totals"]["revenue"]["amount_minor"], revenue);
    assert!(
        d["totals"]["revenue"]["display"]
            .as_str()
            .unwrap()
            .ends_with(" €")
    );
    let share = d["totals"]["delivery_share"].as_f64().unwrap();
    assert!((0.0..=100.0).contains(&share));

    // Limits: at most eight distinct metrics, at most 366 days.
    let nine = c
        .call(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ALL_METRICS,
                   "date_from": day, "date_to": day}),
        )
        .await;
    assert_eq!(error_code(&nine), "MCP_INVALID_ARGUMENTS");
    let twice = c
        .call(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ["revenue", "revenue"],
                   "date_from": day, "date_to": day}),
        )
        .await;
    assert_eq!(error_code(&twice), "MCP_INVALID_ARGUMENTS");
    let year_and_a_day = c
        .call(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ["revenue"],
                   "date_from": "2024-01-01", "date_to": "2025-01-01", "bucket": "month"}),
        )
        .await;
    assert_eq!(error_code(&year_and_a_day), "MCP_INVALID_ARGUMENTS");
    let leap_year = c
        .call(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ["revenue"],
                   "date_from": "2024-01-01", "date_to": "2024-12-31", "bucket": "month"}),
        )
        .await;
    assert_eq!(data(&leap_year)["buckets"].as_array().unwrap().len(), 12);
    let not_a_date = c
        .call(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ["revenue"],
                   "date_from": "01/02/2025", "date_to": day}),
        )
        .await;
    assert_eq!(error_code(&not_a_date), "MCP_INVALID_ARGUMENTS");

    // A completed order moves the rollup of its day at once.
    let ready = orders_in(c, manager, demo::LOC_PARIS, "ready").await;
    let order = c
        .call(
            manager,
            "chataigne_order_get",
            json!({"order_id": ready[0]}),
        )
        .await;
    let its_day = data(&order)["order"]["created_at"].as_str().unwrap()[..10].to_owned();
    let before = completed_on(c, manager, &its_day).await;
    let done = c
        .call(
            manager,
            "chataigne_order_status_update",
            json!({"order_id": ready[0], "status": "completed", "expected_status": "ready"}),
        )
        .await;
    assert_eq!(data(&done)["order"]["status"], "completed");
    assert_eq!(completed_on(c, manager, &its_day).await, before + 1);

    // Another tenant's location is refused like an unknown one.
    let foreign = c
        .call(
            analyst,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ["revenue"], "date_from": day, "date_to": day}),
        )
        .await;
    let unknown = c
        .call(
            analyst,
            "chataigne_analytics_query",
            json!({"location_id": "loc_nope", "metrics": ["revenue"], "date_from": day, "date_to": day}),
        )
        .await;
    assert_eq!(error_code(&foreign), "MCP_RESOURCE_FORBIDDEN");
    assert_eq!(error_message(&foreign), error_message(&unknown));
    let own = c
        .call(
            analyst,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_BROOKLYN, "metrics": ["revenue"], "date_from": day, "date_to": day}),
        )
        .await;
    assert_eq!(data(&own)["currency"], "USD");
}

/// The location's calendar day today, from its local time.
async fn local_today(c: &Client<'_>, manager: &str) -> chrono::NaiveDate {
    let location = c
        .call(
            manager,
            "chataigne_location_get",
            json!({"location_id": demo::LOC_PARIS}),
        )
        .await;
    let local = data(&location)["local_time"].as_str().unwrap();
    chrono::NaiveDate::parse_from_str(&local[..10], "%Y-%m-%d").unwrap()
}

/// "Sales last week vs the week before": one call with `compare_previous`,
/// whose changes agree with two separate queries; the future refused with
/// the range allowed; a previous value of 0 gives no percent.
async fn analytics_compare_with_the_previous_period_and_refuse_the_future(scene: &Scene) {
    let c = &scene.client().await;
    let manager = &*scene.manager;
    let today = local_today(c, manager).await;
    let day = |back: u64| {
        today
            .checked_sub_days(chrono::Days::new(back))
            .unwrap()
            .format("%Y-%m-%d")
            .to_string()
    };
    let tomorrow = today.succ_opt().unwrap().format("%Y-%m-%d").to_string();
    let query = |from: &str, to: &str, compare: bool| {
        json!({"location_id": demo::LOC_PARIS, "metrics": ["orders_count", "revenue", "delivery_share"],
               "date_from": from, "date_to": to, "compare_previous": compare})
    };

    // The future is refused, naming today in the location's calendar.
    for (from, to, field) in [
        (day(3), tomorrow.clone(), "date_to"),
        (tomorrow.clone(), tomorrow.clone(), "date_from"),
    ] {
        let refused = c
            .call(
                manager,
                "chataigne_analytics_query",
                query(&from, &to, false),
            )
            .await;
        assert_eq!(error_code(&refused), "MCP_INVALID_ARGUMENTS");
        let message = error_message(&refused);
        let message = message.as_str().unwrap();
        assert!(
            message.contains(&format!("{field} must not be after today, {}", day(0))),
            "{message}"
        );
        assert!(message.contains("Europe/Paris"), "{message}");
        assert!(
            message.contains(&format!("to date_to {}", day(0))),
            "{message}"
        );
    }
    // Today itself is allowed.
    let today_only = c
        .call(
            manager,
            "chataigne_analytics_query",
            query(&day(0), &day(0), false),
        )
        .await;
    assert!(data(&today_only)["comparison"].is_null());

    // Last 7 days against the 7 before, in one call.
    let compared = c
        .call(
            manager,
            "chataigne_analytics_query",
            query(&day(7), &day(1), true),
        )
        .await;
    let d = data(&compared);
    let comparison = &d["comparison"];
    assert_eq!(comparison["previous_date_from"], day(14));
    assert_eq!(comparison["previous_date_to"], day(8));
    let before = c
        .call(
            manager,
            "chataigne_analytics_query",
            query(&day(14), &day(8), false),
        )
        .await;
    let before = &data(&before)["totals"];
    assert_eq!(&comparison["previous_totals"], before);
    let number = |values: &Value, metric: &str| match &values[metric] {
        Value::Object(money) => money["amount_minor"].as_f64().unwrap(),
        other => other.as_f64().unwrap(),
    };
    let changes = comparison["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 3);
    for (change, metric) in changes
        .iter()
        .zip(["orders_count", "revenue", "delivery_share"])
    {
        let (now, then) = (number(&d["totals"], metric), number(before, metric));
        assert!(then > 0.0, "the demo data has a week before: {metric}");
        let absolute = change["absolute"].as_f64().unwrap();
        assert!(
            (absolute - (now - then)).abs() < 0.051,
            "{metric}: {change}"
        );
        let percent = change["percent"].as_f64().unwrap();
        assert!(
            (percent - (now - then) * 100.0 / then).abs() < 0.051,
            "{metric}: {change}"
        );
    }
    let text = compared["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains(&format!("Vs {} to {}: orders ", day(14), day(8))),
        "{text}"
    );

    // Nothing before: the absolute change only, no percent of 0.
    let empty = c
        .call(
            manager,
            "chataigne_analytics_query",
            query("2020-01-08", "2020-01-14", true),
        )
        .await;
    let changes = &data(&empty)["comparison"]["changes"];
    assert_eq!(
        data(&empty)["comparison"]["previous_totals"]["orders_count"],
        0
    );
    assert_eq!(changes[0]["absolute"], 0.0);
    assert!(changes[0]["percent"].is_null(), "{changes}");
}

async fn completed_on(c: &Client<'_>, manager: &str, day: &str) -> u64 {
    let result = c
        .call(
            manager,
            "chataigne_analytics_query",
            json!({"location_id": demo::LOC_PARIS, "metrics": ["completed_count"],
                   "date_from": day, "date_to": day}),
        )
        .await;
    data(&result)["totals"]["completed_count"].as_u64().unwrap()
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Scene::start(Backend::Sqlite).await.expect("SQLite sandbox"),
    postgres: Scene::start(Backend::Postgres).await,
    run: |scene| (&scene),
    finish: scene.shutdown().await,
    tests: [
        analytics_agree_with_the_orders_keep_their_limits_and_follow_completions,
        analytics_compare_with_the_previous_period_and_refuse_the_future,
    ],
}
