//! `chataigne_orders_list` by `number` and `Restaurant/ListOrders` by
//! `number`: an order found by the number staff say, with or without the
//! location prefix, in any case; malformed numbers refused; the text of an
//! unknown order naming the search by number.

use chataigne_common::ErrorCode;
use chataigne_common::codes::decode_status;
use chataigne_proto::tools::v1::{ListOrdersRequest, restaurant_client::RestaurantClient};

use super::*;

fn authed<T>(message: T, assertion: &str) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {assertion}").parse().unwrap(),
    );
    request
}

fn listed(result: &Value) -> Vec<(String, String)> {
    data(result)["orders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["id"].as_str().unwrap().to_owned(),
                o["number"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

async fn an_order_is_found_by_the_number_staff_say(scene: &Scene) {
    let c = &scene.client().await;
    let manager = &*scene.manager;
    // An order of Paris from the first page of the listing: its number.
    let page = c
        .call(
            manager,
            "chataigne_orders_list",
            json!({"location_id": demo::LOC_PARIS, "statuses": ["completed"], "limit": 1}),
        )
        .await;
    let (id, number) = listed(&page).remove(0);
    let (prefix, bare) = number.split_once('-').unwrap();
    assert_eq!(prefix, "PAR", "{number}");

    // In lower case, the prefixed number finds that order alone, in one call.
    let found = c
        .call(
            manager,
            "chataigne_orders_list",
            json!({"number": number.to_lowercase()}),
        )
        .await;
    let hits = listed(&found);
    assert!(hits.contains(&(id.clone(), number.clone())), "{found}");
    assert!(hits.iter().all(|(_, n)| n == &number), "{found}");
    assert!(
        found["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains(&number),
        "{found}"
    );
    // Without the prefix: every location's order of that day and sequence,
    // this one among them; with the location, this one only.
    let bare_hits = listed(
        &c.call(manager, "chataigne_orders_list", json!({"number": bare}))
            .await,
    );
    assert!(bare_hits.contains(&(id.clone(), number.clone())));
    assert!(
        bare_hits.len() > hits.len(),
        "other locations have a {bare}: {bare_hits:?}"
    );
    assert!(
        bare_hits
            .iter()
            .all(|(_, n)| n.ends_with(&format!("-{bare}")))
    );
    let here = listed(
        &c.call(
            manager,
            "chataigne_orders_list",
            json!({"number": bare, "location_id": demo::LOC_PARIS}),
        )
        .await,
    );
    assert_eq!(here, vec![(id.clone(), number.clone())]);

    // Malformed numbers are refused with the expected form, before any read.
    for malformed in [
        "PAR",
        "PAR-2611-010",
        "ord_01paris",
        "PAR 261130 010",
        "P4R-261130-010",
    ] {
        let refused = c
            .call(
                manager,
                "chataigne_orders_list",
                json!({"number": malformed}),
            )
            .await;
        assert_eq!(error_code(&refused), "MCP_INVALID_ARGUMENTS", "{malformed}");
        assert!(
            refused.to_string().contains("number"),
            "{malformed}: {refused}"
        );
    }

    // An unknown order's text says how to find an order by its number.
    let unknown = c
        .call(manager, "chataigne_order_get", json!({"order_id": number}))
        .await;
    let message = error_message(&unknown);
    let message = message.as_str().unwrap();
    assert!(
        message.contains("chataigne_orders_list with number"),
        "{message}"
    );

    // The typed API: the same filter, the same refusal.
    // Every call presents an assertion of its own: each is accepted once.
    let minter = chataigne_tests::typed_rpc::Minter::new(&scene.sandbox);
    let mut restaurant = RestaurantClient::connect(scene.sandbox.tools_grpc_url.clone())
        .await
        .unwrap();
    let typed = restaurant
        .list_orders(authed(
            ListOrdersRequest {
                location_id: demo::LOC_PARIS.to_owned(),
                number: bare.to_lowercase(),
                ..Default::default()
            },
            &minter.assertion(manager).await,
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        typed
            .orders
            .iter()
            .map(|o| (o.id.clone(), o.number.clone()))
            .collect::<Vec<_>>(),
        vec![(id, number)]
    );
    let malformed = restaurant
        .list_orders(authed(
            ListOrdersRequest {
                number: "261130".to_owned(),
                ..Default::default()
            },
            &minter.assertion(manager).await,
        ))
        .await
        .unwrap_err();
    assert_eq!(malformed.code(), tonic::Code::InvalidArgument);
    assert_eq!(decode_status(&malformed).code, ErrorCode::InvalidArguments);
    assert!(malformed.message().contains("number"), "{malformed:?}");
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Scene::start(Backend::Sqlite).await.expect("SQLite sandbox"),
    postgres: Scene::start(Backend::Postgres).await,
    run: |scene| (&scene),
    finish: scene.shutdown().await,
    tests: [
        an_order_is_found_by_the_number_staff_say,
    ],
}
