//! `chataigne_customers_list` and `chataigne_customer_get`: paging with
//! cursors bound to their filters, default and maximum page sizes, name and
//! location filters, details with recent orders, other tenants refused like
//! unknown identifiers.

use std::collections::HashSet;

use super::*;

async fn customers_page_by_name_with_masked_contacts_and_foreign_ids_read_as_unknown(
    scene: &Scene,
) {
    let c = &scene.client().await;
    let (manager, analyst) = (&*scene.manager, &*scene.analyst);
    let first = c
        .call(
            manager,
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO, "limit": 5}),
        )
        .await;
    let page = data(&first)["customers"].as_array().unwrap().clone();
    assert_eq!(page.len(), 5);
    let names: Vec<&str> = page.iter().map(|c| c["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "by name");
    let mut masked_email = false;
    for customer in &page {
        if let Some(email) = customer["email_masked"].as_str() {
            let (local, domain) = email.split_once('@').unwrap();
            assert_eq!(local.chars().count(), 6, "{email}");
            assert!(local.ends_with("•••••"), "{email}");
            assert!(domain.starts_with("example"), "{email}");
            masked_email = true;
        }
        if let Some(phone) = customer["phone_masked"].as_str() {
            assert_eq!(phone.matches('•').count(), 6, "{phone}");
        }
    }
    assert!(masked_email);
    assert!(!first["content"][0]["text"].as_str().unwrap().contains('@'));

    // The next page continues after the first; the cursor is bound to its filters.
    let cursor = next_cursor(&first).expect("more customers");
    let second = c
        .call(
            manager,
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO, "limit": 5, "cursor": cursor}),
        )
        .await;
    let second_ids: HashSet<&str> = data(&second)["customers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(second_ids.len(), 5);
    assert!(
        page.iter()
            .all(|c| !second_ids.contains(c["id"].as_str().unwrap()))
    );
    let misused = c
        .call(
            manager,
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO, "name_query": "ma", "cursor": cursor}),
        )
        .await;
    assert_eq!(error_code(&misused), "MCP_CURSOR_INVALID");

    // 20 by default, 50 at most.
    let default = c
        .call(
            manager,
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO}),
        )
        .await;
    assert_eq!(data(&default)["customers"].as_array().unwrap().len(), 20);
    let too_many = c
        .call(
            manager,
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO, "limit": 51}),
        )
        .await;
    assert_eq!(error_code(&too_many), "MCP_INVALID_ARGUMENTS");

    // Name filter and location narrowing.
    let family = names[0]
        .split(' ')
        .next_back()
        .unwrap()
        .to_ascii_lowercase();
    let named = c
        .call(
            manager,
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO, "name_query": family, "limit": 50}),
        )
        .await;
    for customer in data(&named)["customers"].as_array().unwrap() {
        assert!(
            customer["name"]
                .as_str()
                .unwrap()
                .to_ascii_lowercase()
                .contains(&family)
        );
    }
    let paris = c
        .call(
            manager,
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO, "location_id": demo::LOC_PARIS, "limit": 50}),
        )
        .await;
    let regular = data(&paris)["customers"][0].clone();
    assert!(regular["order_count"].as_u64().unwrap() > 0);
    assert!(regular["last_order_at"].as_str().unwrap().ends_with(":00"));

    // Detail with recent orders.
    let id = regular["id"].as_str().unwrap();
    let detail = c
        .call(
            manager,
            "chataigne_customer_get",
            json!({"customer_id": id}),
        )
        .await;
    let d = data(&detail);
    assert_eq!(d["customer"]["id"], id);
    let recent = d["recent_orders"].as_array().unwrap();
    assert!(!recent.is_empty() && recent.len() <= 5);
    assert!(recent.iter().all(|o| o["customer_id"] == id));

    // Cross-tenant: another organization, or a location of another
    // organization, is refused like an unknown identifier.
    for (who, arguments) in [
        (analyst, json!({"organization_id": demo::ORG_BISTRO})),
        (analyst, json!({"organization_id": "org_nope"})),
        (
            manager,
            json!({"organization_id": demo::ORG_BISTRO, "location_id": demo::LOC_BROOKLYN}),
        ),
    ] {
        let refused = c.call(who, "chataigne_customers_list", arguments).await;
        assert_eq!(error_code(&refused), "MCP_RESOURCE_FORBIDDEN");
    }
    let foreign = c
        .call(
            analyst,
            "chataigne_customer_get",
            json!({"customer_id": id}),
        )
        .await;
    let unknown = c
        .call(
            analyst,
            "chataigne_customer_get",
            json!({"customer_id": "cus_nope"}),
        )
        .await;
    assert_eq!(error_code(&foreign), "MCP_RESOURCE_FORBIDDEN");
    assert_eq!(error_message(&foreign), error_message(&unknown));
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Scene::start(Backend::Sqlite).await.expect("SQLite sandbox"),
    postgres: Scene::start(Backend::Postgres).await,
    run: |scene| (&scene),
    finish: scene.shutdown().await,
    tests: [
        customers_page_by_name_with_masked_contacts_and_foreign_ids_read_as_unknown,
    ],
}
