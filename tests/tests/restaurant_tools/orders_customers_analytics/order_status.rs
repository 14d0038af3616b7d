//! `chataigne_order_status_update`: forward-only transitions, cancellation
//! left out, the observed status enforced atomically, one winner among
//! concurrent writers, and tenants and locations kept apart.

use super::*;

async fn order_status_moves_forward_only_from_the_observed_status_within_the_tenant(scene: &Scene) {
    let c = &scene.client().await;
    let (manager, staff, analyst) = (&*scene.manager, &*scene.staff, &*scene.analyst);
    let received = orders_in(c, manager, demo::LOC_PARIS, "received").await;
    assert!(
        received.len() >= 2,
        "the demo data has orders just received"
    );
    let order = received[0].as_str();
    let update = |status: &str, expected: &str| json!({"order_id": order, "status": status, "expected_status": expected});

    // A backward or standing move is refused before anything is written.
    for (status, expected) in [("received", "accepted"), ("received", "received")] {
        let illegal = c
            .call(
                manager,
                "chataigne_order_status_update",
                update(status, expected),
            )
            .await;
        assert_eq!(
            error_code(&illegal),
            "ORDER_STATUS_PRECONDITION_FAILED",
            "{expected}→{status}"
        );
    }
    // A cancellation is an operation this server leaves out: refused as
    // such, never as a transition that another status would allow.
    let cancel = c
        .call(
            manager,
            "chataigne_order_status_update",
            update("cancelled", "received"),
        )
        .await;
    assert_eq!(error_code(&cancel), "MCP_INVALID_ARGUMENTS");
    assert!(
        error_message(&cancel)
            .as_str()
            .unwrap()
            .contains("not available through this server"),
        "{cancel}"
    );
    assert_eq!(order_status(c, manager, order).await, "received");

    // A stale observation is refused with the current status.
    let stale = c
        .call(
            manager,
            "chataigne_order_status_update",
            update("preparing", "accepted"),
        )
        .await;
    assert_eq!(error_code(&stale), "MCP_EXPECTED_STATE_MISMATCH");
    assert_eq!(
        envelope(&stale)["data"]["error"]["details"]["current_state"],
        "received"
    );
    assert_eq!(order_status(c, manager, order).await, "received");

    // The legal step succeeds, in French when asked.
    let accepted = c
        .call_in(
            manager,
            "chataigne_order_status_update",
            update("accepted", "received"),
            Some("fr-FR"),
        )
        .await;
    let d = data(&accepted);
    assert_eq!(d["order"]["status"], "accepted");
    assert_eq!(d["previous_status"], "received");
    assert!(
        d["order"]["total"]["display"]
            .as_str()
            .unwrap()
            .ends_with(" €")
    );
    assert!(
        accepted["content"][0]["text"]
            .as_str()
            .unwrap()
            .starts_with("Commande")
    );

    // Two concurrent writers from the same observed status: exactly one wins.
    let (a, b) = tokio::join!(
        c.call(
            manager,
            "chataigne_order_status_update",
            update("preparing", "accepted")
        ),
        c.call(
            staff,
            "chataigne_order_status_update",
            update("preparing", "accepted")
        ),
    );
    let outcomes = [&a, &b];
    assert_eq!(
        outcomes.iter().filter(|r| r["isError"] != true).count(),
        1,
        "{a}\n{b}"
    );
    let loser = outcomes.iter().find(|r| r["isError"] == true).unwrap();
    assert_eq!(error_code(loser), "MCP_EXPECTED_STATE_MISMATCH");
    assert_eq!(
        envelope(loser)["data"]["error"]["details"]["current_state"],
        "preparing"
    );

    // Another tenant's order is refused exactly like an unknown one.
    let foreign = c
        .call(
            analyst,
            "chataigne_order_status_update",
            update("accepted", "received"),
        )
        .await;
    let unknown = c
        .call(
            analyst,
            "chataigne_order_status_update",
            json!({"order_id": "ord_nope", "status": "accepted", "expected_status": "received"}),
        )
        .await;
    assert_eq!(error_code(&foreign), "MCP_RESOURCE_FORBIDDEN");
    assert_eq!(error_code(&unknown), "MCP_RESOURCE_FORBIDDEN");
    assert_eq!(error_message(&foreign), error_message(&unknown));

    // Location staff may move orders of their location only.
    let lyon = orders_in(c, manager, demo::LOC_LYON, "received").await;
    let sibling = c
        .call(
            staff,
            "chataigne_order_status_update",
            json!({"order_id": lyon[0], "status": "accepted", "expected_status": "received"}),
        )
        .await;
    assert_eq!(error_code(&sibling), "MCP_RESOURCE_FORBIDDEN");
    assert_eq!(order_status(c, manager, &lyon[0]).await, "received");

    // Unknown fields and statuses are schema errors.
    let invalid = c
        .call(
            manager,
            "chataigne_order_status_update",
            json!({"order_id": order, "status": "eaten", "expected_status": "ready"}),
        )
        .await;
    assert_eq!(error_code(&invalid), "MCP_INVALID_ARGUMENTS");
}

/// "Mark it ready" from received: one call, one confirmation, the steps
/// between recorded; backward moves and finished orders stay refused with a
/// next step.
async fn an_order_moves_several_steps_forward_in_one_call(scene: &Scene) {
    let c = &scene.client().await;
    let manager = &*scene.manager;
    let received = orders_in(c, manager, demo::LOC_LYON, "received").await;
    let order = received[0].as_str();
    // The observed status still guards the start.
    let stale = c
        .call(
            manager,
            "chataigne_order_status_update",
            json!({"order_id": order, "status": "ready", "expected_status": "accepted"}),
        )
        .await;
    assert_eq!(error_code(&stale), "MCP_EXPECTED_STATE_MISMATCH");
    assert_eq!(order_status(c, manager, order).await, "received");

    let ready = c
        .call(
            manager,
            "chataigne_order_status_update",
            json!({"order_id": order, "status": "ready", "expected_status": "received"}),
        )
        .await;
    let d = data(&ready);
    assert_eq!(d["order"]["status"], "ready");
    assert_eq!(d["previous_status"], "received");
    let text = ready["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("received → accepted → preparing → ready"),
        "{text}"
    );
    assert_eq!(order_status(c, manager, order).await, "ready");

    // Backward: refused, nothing changed, with the statuses ahead.
    let back = c
        .call(
            manager,
            "chataigne_order_status_update",
            json!({"order_id": order, "status": "preparing", "expected_status": "ready"}),
        )
        .await;
    assert_eq!(error_code(&back), "ORDER_STATUS_PRECONDITION_FAILED");
    let message = error_message(&back);
    assert!(
        message
            .as_str()
            .unwrap()
            .contains("out_for_delivery, completed"),
        "{message}"
    );
    assert_eq!(order_status(c, manager, order).await, "ready");

    // Finished: refused with where to go next.
    let done = c
        .call(
            manager,
            "chataigne_order_status_update",
            json!({"order_id": order, "status": "completed", "expected_status": "ready"}),
        )
        .await;
    assert_eq!(data(&done)["order"]["status"], "completed");
    let again = c
        .call(
            manager,
            "chataigne_order_status_update",
            json!({"order_id": order, "status": "completed", "expected_status": "completed"}),
        )
        .await;
    assert_eq!(error_code(&again), "ORDER_STATUS_PRECONDITION_FAILED");
    let message = error_message(&again);
    let message = message.as_str().unwrap();
    assert!(
        message.contains("chataigne_order_get") && message.contains("chataigne_orders_list"),
        "a finished order names a next call: {message}"
    );
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Scene::start(Backend::Sqlite).await.expect("SQLite sandbox"),
    postgres: Scene::start(Backend::Postgres).await,
    run: |scene| (&scene),
    finish: scene.shutdown().await,
    tests: [
        order_status_moves_forward_only_from_the_observed_status_within_the_tenant,
        an_order_moves_several_steps_forward_in_one_call,
    ],
}
