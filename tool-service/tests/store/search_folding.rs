//! Search as people type, on both backends: catalog items, customers and
//! transcripts match whatever the case and the accents of the query or of
//! the stored text (œ, ç, é/è/ê, ï, à, û), through the tools themselves; and
//! rows stored before the folded columns existed are folded by `migrate`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::support;

use std::sync::OnceLock;

use crate::support::{context, tools};
use chataigne_common::demo;
use chataigne_tools::store::seed::{
    ConversationRow, CustomerRow, DataSet, ItemRow, MessageRow, SeedSpec,
};
use chataigne_tools::store::{PgStore, SqliteStore, Store};
use serde_json::{Value, json};

const NOW_MS: i64 = 1_773_140_400_000;

/// The demo catalog and people of two days, plus French names and messages
/// written with every accent the tests query without.
fn data() -> &'static DataSet {
    static DATA: OnceLock<DataSet> = OnceLock::new();
    DATA.get_or_init(|| {
        let mut data = DataSet::generate(&SeedSpec {
            now_ms: NOW_MS,
            days: 2,
            orders_per_location_per_day: 5,
            extra_locations: 0,
            seed: 11,
        });
        let category = data
            .categories
            .iter()
            .find(|c| c.location_id == demo::LOC_PARIS)
            .unwrap()
            .id
            .clone();
        for (n, name) in [
            "Poulet façon grand-mère",
            "Tête de veau sauce gribiche",
            "Crêpe flambée",
            "Salade de maïs grillé",
            "Creme caramel",
        ]
        .iter()
        .enumerate()
        {
            data.items.push(ItemRow {
                id: format!("itm_01paris11_9{n:02}"),
                organization_id: demo::ORG_BISTRO.to_owned(),
                location_id: demo::LOC_PARIS.to_owned(),
                category_id: category.clone(),
                name: (*name).to_owned(),
                description: String::new(),
                price_minor: 1500,
                currency: "EUR".to_owned(),
                availability: "available".to_owned(),
                available_again_at_ms: None,
                created_at_ms: NOW_MS - 86_400_000,
                updated_at_ms: NOW_MS - 86_400_000,
            });
        }
        for (n, name) in ["François Lefèvre", "Zoë Ménard", "Anaïs Cœur"]
            .iter()
            .enumerate()
        {
            data.customers.push(CustomerRow {
                id: format!("cus_01bistrochataigne_9{n:03}"),
                organization_id: demo::ORG_BISTRO.to_owned(),
                location_id: Some(demo::LOC_PARIS.to_owned()),
                display_name: (*name).to_owned(),
                email: None,
                phone: None,
                created_at_ms: NOW_MS - 86_400_000,
            });
        }
        data.conversations.push(ConversationRow {
            id: "conv_01paris11_90".to_owned(),
            organization_id: demo::ORG_BISTRO.to_owned(),
            location_id: demo::LOC_PARIS.to_owned(),
            customer_id: "cus_01bistrochataigne_9000".to_owned(),
            channel: "sms".to_owned(),
            status: "open".to_owned(),
            created_at_ms: NOW_MS - 3_600_000,
            last_message_at_ms: NOW_MS - 3_000_000,
        });
        for (n, body) in [
            "Garçon, le maïs était froid et la crème brûlée trop cuite.",
            "Très bien, c'est noté pour la fête de Noël.",
        ]
        .iter()
        .enumerate()
        {
            data.messages.push(MessageRow {
                id: format!("msg_01paris11_90_{n:03}"),
                conversation_id: "conv_01paris11_90".to_owned(),
                sender: "customer".to_owned(),
                body: (*body).to_owned(),
                created_at_ms: NOW_MS - 3_600_000 + n as i64 * 600_000,
            });
        }
        data
    })
}

async fn names(store: &impl Store, tool: &str, arguments: Value, key: &str) -> Vec<String> {
    let tools = tools(store.clone(), demo::USER_MANAGER);
    let result = tools
        .call(tool, arguments, &context(NOW_MS))
        .await
        .unwrap_or_else(|e| panic!("{tool}: {e:?}"));
    let data: Value = serde_json::from_str(&result.data_json).unwrap();
    data[key]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            row.get("name")
                .or_else(|| row.get("id"))
                .and_then(Value::as_str)
                .unwrap()
                .to_owned()
        })
        .collect()
}

async fn catalog_search_ignores_case_and_accents(store: &impl Store) {
    for (query, expected) in [
        ("creme brulee", "Crème brûlée à la vanille"),
        ("CRÈME BRÛLÉE", "Crème brûlée à la vanille"),
        ("boeuf", "Bœuf bourguignon"),
        ("BŒUF", "Bœuf bourguignon"),
        ("soupe a l", "Soupe à l'oignon gratinée"),
        ("oeufs", "Œufs mayonnaise"),
        ("facon grand-mere", "Poulet façon grand-mère"),
        ("tete de veau", "Tête de veau sauce gribiche"),
        ("crepe", "Crêpe flambée"),
        ("mais grille", "Salade de maïs grillé"),
        // An accented query finds an unaccented name too.
        ("crème caramel", "Creme caramel"),
    ] {
        let found = names(
            store,
            "chataigne_catalog_items_list",
            json!({"location_id": demo::LOC_PARIS, "text": query}),
            "items",
        )
        .await;
        assert!(
            found.iter().any(|name| name == expected),
            "{query:?} finds {expected:?}: {found:?}"
        );
    }
    let none = names(
        store,
        "chataigne_catalog_items_list",
        json!({"location_id": demo::LOC_PARIS, "text": "crème à l'ail des ours"}),
        "items",
    )
    .await;
    assert!(none.is_empty(), "{none:?}");
}

async fn customer_search_ignores_case_and_accents(store: &impl Store) {
    for (query, expected) in [
        ("francois", "François Lefèvre"),
        ("LEFEVRE", "François Lefèvre"),
        ("zoe men", "Zoë Ménard"),
        ("anais coeur", "Anaïs Cœur"),
        ("CŒUR", "Anaïs Cœur"),
    ] {
        let found = names(
            store,
            "chataigne_customers_list",
            json!({"organization_id": demo::ORG_BISTRO, "name_query": query}),
            "customers",
        )
        .await;
        assert!(
            found.iter().any(|name| name == expected),
            "{query:?} finds {expected:?}: {found:?}"
        );
    }
}

async fn transcript_search_ignores_case_and_accents(store: &impl Store) {
    for query in [
        "garcon",
        "MAIS ETAIT FROID",
        "creme brulee trop cuite",
        "tres bien",
        "fete de noel",
    ] {
        let found = names(
            store,
            "chataigne_conversations_list",
            json!({"location_id": demo::LOC_PARIS, "query": query}),
            "conversations",
        )
        .await;
        assert_eq!(found, vec!["conv_01paris11_90"], "{query:?}");
    }
}

/// Rows written before the folded columns existed (their copy is NULL) are
/// folded by `migrate`, after which they are found like the others.
async fn migrate_folds_rows_stored_before_the_folded_columns(store: &(impl Store + Raw)) {
    for sql in [
        "UPDATE catalog_items SET name_folded = NULL",
        "UPDATE customers SET name_folded = NULL",
        "UPDATE conversation_messages SET body_folded = NULL",
    ] {
        store.raw(sql).await;
    }
    store.migrate().await.unwrap();
    catalog_search_ignores_case_and_accents(store).await;
    customer_search_ignores_case_and_accents(store).await;
    transcript_search_ignores_case_and_accents(store).await;
}

/// A statement the `Store` trait does not offer.
trait Raw {
    async fn raw(&self, sql: &'static str);
}

impl Raw for SqliteStore {
    async fn raw(&self, sql: &'static str) {
        sqlx::query(sql).execute(self.pool()).await.unwrap();
    }
}

impl Raw for PgStore {
    async fn raw(&self, sql: &'static str) {
        sqlx::query(sql).execute(self.pool()).await.unwrap();
    }
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: support::loaded_sqlite(data()).await,
    postgres: support::loaded_postgres("search", data()).await,
    run: |store| (&store),
    tests: [
        catalog_search_ignores_case_and_accents,
        customer_search_ignores_case_and_accents,
        transcript_search_ignores_case_and_accents,
        migrate_folds_rows_stored_before_the_folded_columns,
    ],
}
