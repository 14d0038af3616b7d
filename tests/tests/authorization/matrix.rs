//! The authorization matrix through the real stack over MCP HTTP: principals
//! × tools × targets × granted scopes → outcome, for every tool of the
//! catalogue. Each row states, for one principal and one tool, the outcome on
//! the five targets as seen from that principal; a second pass without the
//! tool's scope expects the tool to be hidden. The tools of the matrix must be
//! exactly the ones `tools/list` shows a principal holding every scope, so a
//! new tool fails here until it has its scope, argument builder and rows.
//!
//! Writes leave the data as they found it, so rows do not depend on their
//! order: the intake and availability updates set the state they expect (no
//! change), the order update asks for a backward move (refused after
//! authorization by its precondition), and the message, instruction and
//! creation tools add new rows under fresh idempotency keys.

use chataigne_tests::envelope;
use std::collections::{BTreeMap, BTreeSet};

use chataigne_tests::{Backend, Outcome, Sandbox, demo};
use serde_json::{Value, json};

/// A target as seen by the principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    OwnOrg,
    OwnLocation,
    SiblingLocation,
    OtherTenant,
    Nonexistent,
}

const TARGETS: [Target; 5] = [
    Target::OwnOrg,
    Target::OwnLocation,
    Target::SiblingLocation,
    Target::OtherTenant,
    Target::Nonexistent,
];

/// Where a principal belongs (its "own" tenant, location and a sibling).
struct Perspective {
    org: &'static str,
    location: &'static str,
    sibling: &'static str,
    other_org: &'static str,
    other_location: &'static str,
}

const BISTRO: Perspective = Perspective {
    org: demo::ORG_BISTRO,
    location: demo::LOC_PARIS,
    sibling: demo::LOC_LYON,
    other_org: demo::ORG_HARBOR,
    other_location: demo::LOC_BROOKLYN,
};
const HARBOR: Perspective = Perspective {
    org: demo::ORG_HARBOR,
    location: demo::LOC_BROOKLYN,
    sibling: demo::LOC_BOSTON,
    other_org: demo::ORG_BISTRO,
    other_location: demo::LOC_PARIS,
};

/// The scopes of a principal's token (before removing the tool's scope in
/// the second pass).
#[derive(Clone, Copy)]
enum Scopes {
    /// Every business scope and both platform-admin scopes.
    All,
    Only(&'static [&'static str]),
}

impl Scopes {
    fn list(self) -> Vec<&'static str> {
        match self {
            Scopes::All => chataigne_common::scopes::all().collect(),
            Scopes::Only(scopes) => scopes.to_vec(),
        }
    }
}

/// A principal of the matrix.
struct Principal {
    name: &'static str,
    user: &'static str,
    scopes: Scopes,
    at: &'static Perspective,
}

const PRINCIPALS: &[Principal] = &[
    Principal {
        name: "manager",
        user: demo::USER_MANAGER,
        scopes: Scopes::All,
        at: &BISTRO,
    },
    Principal {
        name: "staff",
        user: demo::USER_STAFF,
        scopes: Scopes::All,
        at: &BISTRO,
    },
    Principal {
        name: "analyst",
        user: demo::USER_ANALYST,
        scopes: Scopes::All,
        at: &HARBOR,
    },
    Principal {
        name: "owner",
        user: demo::USER_OWNER,
        scopes: Scopes::All,
        at: &HARBOR,
    },
    Principal {
        name: "revoked",
        user: demo::USER_REVOKED,
        scopes: Scopes::All,
        at: &BISTRO,
    },
    Principal {
        name: "admin",
        user: demo::USER_ADMIN,
        scopes: Scopes::All,
        at: &BISTRO,
    },
    Principal {
        name: "admin-noscope",
        user: demo::USER_ADMIN,
        scopes: Scopes::Only(&["openid"]),
        at: &BISTRO,
    },
];

/// Every tool with the scope the specification gives it.
const TOOLS: &[(&str, &str)] = &[
    ("chataigne_organizations_list", "businessOrganization.read"),
    ("chataigne_locations_list", "location.read"),
    ("chataigne_location_get", "location.read"),
    ("chataigne_location_settings_get", "settings.read"),
    (
        "chataigne_location_status_get",
        "locationStatusSettings.read",
    ),
    (
        "chataigne_location_status_update",
        "locationStatusSettings.write",
    ),
    ("chataigne_catalog_items_list", "catalog.read"),
    (
        "chataigne_catalog_item_availability_update",
        "catalog.updateAvailability",
    ),
    ("chataigne_orders_list", "orders.read"),
    ("chataigne_order_get", "orders.read"),
    ("chataigne_order_status_update", "orders.write"),
    ("chataigne_customers_list", "customers.read"),
    ("chataigne_customer_get", "customers.read"),
    ("chataigne_conversations_list", "conversations.read"),
    ("chataigne_conversation_get", "conversations.read"),
    ("chataigne_conversation_message_send", "conversations.write"),
    (
        "chataigne_conversation_instruction_send",
        "conversations.write",
    ),
    ("chataigne_analytics_query", "analytics.read"),
    ("chataigne_discounts_list", "discounts.read"),
    ("chataigne_integrations_list", "integrations.read"),
    (
        "chataigne_organization_create",
        "admin.organizations.create",
    ),
    ("chataigne_location_create", "admin.locations.create"),
];

/// Expected outcomes per principal and tool, one character per target, on
/// [own org, own location, sibling location, other tenant, nonexistent]:
/// `O` ok, `F` MCP_RESOURCE_FORBIDDEN, `N` MCP_RESOURCE_NOT_FOUND, `P` a
/// state precondition refused after authorization, `U` HTTP 401, `H` hidden
/// (unknown tool), `-` the target does not apply to the tool.
///
/// Roles (seeded): managers and owners hold every business permission of
/// their organization; staff hold a few at one location (no settings,
/// intake changes, discounts, integrations, customers, conversation writes
/// or analytics); analysts read their organization's orders, catalog,
/// discounts and analytics only. Platform admins reach every tenant but
/// still need the scope; only they pass the creation tools.
const ROWS: &[(&str, &str, &str)] = &[
    ("manager", "chataigne_organizations_list", "O----"),
    ("manager", "chataigne_locations_list", "O--FF"),
    ("manager", "chataigne_location_get", "-OOFF"),
    ("manager", "chataigne_location_settings_get", "-OOFF"),
    ("manager", "chataigne_location_status_get", "-OOFF"),
    ("manager", "chataigne_location_status_update", "-OOFF"),
    ("manager", "chataigne_catalog_items_list", "-OOFF"),
    (
        "manager",
        "chataigne_catalog_item_availability_update",
        "-OOFF",
    ),
    ("manager", "chataigne_orders_list", "OOOFF"),
    ("manager", "chataigne_order_get", "-OOFF"),
    ("manager", "chataigne_order_status_update", "-PPFF"),
    ("manager", "chataigne_customers_list", "OOOFF"),
    ("manager", "chataigne_customer_get", "-OOFF"),
    ("manager", "chataigne_conversations_list", "-OOFF"),
    ("manager", "chataigne_conversation_get", "-OOFF"),
    ("manager", "chataigne_conversation_message_send", "-OOFF"),
    (
        "manager",
        "chataigne_conversation_instruction_send",
        "-OOFF",
    ),
    ("manager", "chataigne_analytics_query", "-OOFF"),
    ("manager", "chataigne_discounts_list", "-OOFF"),
    ("manager", "chataigne_integrations_list", "-OOFF"),
    ("manager", "chataigne_organization_create", "F----"),
    ("manager", "chataigne_location_create", "F--FF"),
    ("staff", "chataigne_organizations_list", "O----"),
    ("staff", "chataigne_locations_list", "O--FF"),
    ("staff", "chataigne_location_get", "-OFFF"),
    ("staff", "chataigne_location_settings_get", "-FFFF"),
    ("staff", "chataigne_location_status_get", "-OFFF"),
    ("staff", "chataigne_location_status_update", "-FFFF"),
    ("staff", "chataigne_catalog_items_list", "-OFFF"),
    (
        "staff",
        "chataigne_catalog_item_availability_update",
        "-OFFF",
    ),
    ("staff", "chataigne_orders_list", "OOFFF"),
    ("staff", "chataigne_order_get", "-OFFF"),
    ("staff", "chataigne_order_status_update", "-PFFF"),
    ("staff", "chataigne_customers_list", "FFFFF"),
    ("staff", "chataigne_customer_get", "-FFFF"),
    ("staff", "chataigne_conversations_list", "-OFFF"),
    ("staff", "chataigne_conversation_get", "-OFFF"),
    ("staff", "chataigne_conversation_message_send", "-FFFF"),
    ("staff", "chataigne_conversation_instruction_send", "-FFFF"),
    ("staff", "chataigne_analytics_query", "-FFFF"),
    ("staff", "chataigne_discounts_list", "-FFFF"),
    ("staff", "chataigne_integrations_list", "-FFFF"),
    ("staff", "chataigne_organization_create", "F----"),
    ("staff", "chataigne_location_create", "F--FF"),
    ("analyst", "chataigne_organizations_list", "O----"),
    ("analyst", "chataigne_locations_list", "O--FF"),
    ("analyst", "chataigne_location_get", "-OOFF"),
    ("analyst", "chataigne_location_settings_get", "-FFFF"),
    ("analyst", "chataigne_location_status_get", "-FFFF"),
    ("analyst", "chataigne_location_status_update", "-FFFF"),
    ("analyst", "chataigne_catalog_items_list", "-OOFF"),
    (
        "analyst",
        "chataigne_catalog_item_availability_update",
        "-FFFF",
    ),
    ("analyst", "chataigne_orders_list", "OOOFF"),
    ("analyst", "chataigne_order_get", "-OOFF"),
    ("analyst", "chataigne_order_status_update", "-FFFF"),
    ("analyst", "chataigne_customers_list", "FFFFF"),
    ("analyst", "chataigne_customer_get", "-FFFF"),
    ("analyst", "chataigne_conversations_list", "-FFFF"),
    ("analyst", "chataigne_conversation_get", "-FFFF"),
    ("analyst", "chataigne_conversation_message_send", "-FFFF"),
    (
        "analyst",
        "chataigne_conversation_instruction_send",
        "-FFFF",
    ),
    ("analyst", "chataigne_analytics_query", "-OOFF"),
    ("analyst", "chataigne_discounts_list", "-OOFF"),
    ("analyst", "chataigne_integrations_list", "-FFFF"),
    ("analyst", "chataigne_organization_create", "F----"),
    ("analyst", "chataigne_location_create", "F--FF"),
    ("owner", "chataigne_organizations_list", "O----"),
    ("owner", "chataigne_locations_list", "O--FF"),
    ("owner", "chataigne_location_get", "-OOFF"),
    ("owner", "chataigne_location_settings_get", "-OOFF"),
    ("owner", "chataigne_location_status_get", "-OOFF"),
    ("owner", "chataigne_location_status_update", "-OOFF"),
    ("owner", "chataigne_catalog_items_list", "-OOFF"),
    (
        "owner",
        "chataigne_catalog_item_availability_update",
        "-OOFF",
    ),
    ("owner", "chataigne_orders_list", "OOOFF"),
    ("owner", "chataigne_order_get", "-OOFF"),
    ("owner", "chataigne_order_status_update", "-PPFF"),
    ("owner", "chataigne_customers_list", "OOOFF"),
    ("owner", "chataigne_customer_get", "-OOFF"),
    ("owner", "chataigne_conversations_list", "-OOFF"),
    ("owner", "chataigne_conversation_get", "-OOFF"),
    ("owner", "chataigne_conversation_message_send", "-OOFF"),
    ("owner", "chataigne_conversation_instruction_send", "-OOFF"),
    ("owner", "chataigne_analytics_query", "-OOFF"),
    ("owner", "chataigne_discounts_list", "-OOFF"),
    ("owner", "chataigne_integrations_list", "-OOFF"),
    ("owner", "chataigne_organization_create", "F----"),
    ("owner", "chataigne_location_create", "F--FF"),
    ("revoked", "chataigne_organizations_list", "U----"),
    ("revoked", "chataigne_locations_list", "U--UU"),
    ("revoked", "chataigne_location_get", "-UUUU"),
    ("revoked", "chataigne_location_settings_get", "-UUUU"),
    ("revoked", "chataigne_location_status_get", "-UUUU"),
    ("revoked", "chataigne_location_status_update", "-UUUU"),
    ("revoked", "chataigne_catalog_items_list", "-UUUU"),
    (
        "revoked",
        "chataigne_catalog_item_availability_update",
        "-UUUU",
    ),
    ("revoked", "chataigne_orders_list", "UUUUU"),
    ("revoked", "chataigne_order_get", "-UUUU"),
    ("revoked", "chataigne_order_status_update", "-UUUU"),
    ("revoked", "chataigne_customers_list", "UUUUU"),
    ("revoked", "chataigne_customer_get", "-UUUU"),
    ("revoked", "chataigne_conversations_list", "-UUUU"),
    ("revoked", "chataigne_conversation_get", "-UUUU"),
    ("revoked", "chataigne_conversation_message_send", "-UUUU"),
    (
        "revoked",
        "chataigne_conversation_instruction_send",
        "-UUUU",
    ),
    ("revoked", "chataigne_analytics_query", "-UUUU"),
    ("revoked", "chataigne_discounts_list", "-UUUU"),
    ("revoked", "chataigne_integrations_list", "-UUUU"),
    ("revoked", "chataigne_organization_create", "U----"),
    ("revoked", "chataigne_location_create", "U--UU"),
    ("admin", "chataigne_organizations_list", "O----"),
    ("admin", "chataigne_locations_list", "O--ON"),
    ("admin", "chataigne_location_get", "-OOOF"),
    ("admin", "chataigne_location_settings_get", "-OOOF"),
    ("admin", "chataigne_location_status_get", "-OOOF"),
    ("admin", "chataigne_location_status_update", "-OOOF"),
    ("admin", "chataigne_catalog_items_list", "-OOOF"),
    (
        "admin",
        "chataigne_catalog_item_availability_update",
        "-OOOF",
    ),
    ("admin", "chataigne_orders_list", "OOOOF"),
    ("admin", "chataigne_order_get", "-OOOF"),
    ("admin", "chataigne_order_status_update", "-PPPF"),
    ("admin", "chataigne_customers_list", "OOOOF"),
    ("admin", "chataigne_customer_get", "-OOOF"),
    ("admin", "chataigne_conversations_list", "-OOOF"),
    ("admin", "chataigne_conversation_get", "-OOOF"),
    ("admin", "chataigne_conversation_message_send", "-OOOF"),
    ("admin", "chataigne_conversation_instruction_send", "-OOOF"),
    ("admin", "chataigne_analytics_query", "-OOOF"),
    ("admin", "chataigne_discounts_list", "-OOOF"),
    ("admin", "chataigne_integrations_list", "-OOOF"),
    ("admin", "chataigne_organization_create", "O----"),
    ("admin", "chataigne_location_create", "O--ON"),
    ("admin-noscope", "chataigne_organizations_list", "H----"),
    ("admin-noscope", "chataigne_locations_list", "H--HH"),
    ("admin-noscope", "chataigne_location_get", "-HHHH"),
    ("admin-noscope", "chataigne_location_settings_get", "-HHHH"),
    ("admin-noscope", "chataigne_location_status_get", "-HHHH"),
    ("admin-noscope", "chataigne_location_status_update", "-HHHH"),
    ("admin-noscope", "chataigne_catalog_items_list", "-HHHH"),
    (
        "admin-noscope",
        "chataigne_catalog_item_availability_update",
        "-HHHH",
    ),
    ("admin-noscope", "chataigne_orders_list", "HHHHH"),
    ("admin-noscope", "chataigne_order_get", "-HHHH"),
    ("admin-noscope", "chataigne_order_status_update", "-HHHH"),
    ("admin-noscope", "chataigne_customers_list", "HHHHH"),
    ("admin-noscope", "chataigne_customer_get", "-HHHH"),
    ("admin-noscope", "chataigne_conversations_list", "-HHHH"),
    ("admin-noscope", "chataigne_conversation_get", "-HHHH"),
    (
        "admin-noscope",
        "chataigne_conversation_message_send",
        "-HHHH",
    ),
    (
        "admin-noscope",
        "chataigne_conversation_instruction_send",
        "-HHHH",
    ),
    ("admin-noscope", "chataigne_analytics_query", "-HHHH"),
    ("admin-noscope", "chataigne_discounts_list", "-HHHH"),
    ("admin-noscope", "chataigne_integrations_list", "-HHHH"),
    ("admin-noscope", "chataigne_organization_create", "H----"),
    ("admin-noscope", "chataigne_location_create", "H--HH"),
];

/// What a cell expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Is(Outcome),
    /// Authorized, then refused by a state precondition of the write
    /// (`MCP_EXPECTED_STATE_MISMATCH` or `ORDER_STATUS_PRECONDITION_FAILED`).
    Precondition,
}

fn cells(spec: &str) -> Vec<Option<Expect>> {
    spec.chars()
        .map(|cell| match cell {
            '-' => None,
            'O' => Some(Expect::Is(Outcome::Ok)),
            'F' => Some(Expect::Is(Outcome::Forbidden)),
            'N' => Some(Expect::Is(Outcome::NotFound)),
            'U' => Some(Expect::Is(Outcome::Unauthenticated)),
            'H' => Some(Expect::Is(Outcome::Hidden)),
            'P' => Some(Expect::Precondition),
            other => panic!("unknown cell {other:?} in {spec:?}"),
        })
        .collect()
}

/// The scope of `tool` in [`TOOLS`].
fn tool_scope(tool: &str) -> &'static str {
    TOOLS
        .iter()
        .find(|(name, _)| *name == tool)
        .map(|(_, scope)| *scope)
        .unwrap_or_else(|| panic!("{tool} is not in TOOLS"))
}

/// What a call ended in, as a cell reads it.
fn classify(outcome: Outcome, body: &Value) -> Expect {
    let envelope = envelope(&body["result"]);
    let code = envelope["data"]["error"]["code"].as_str();
    match (outcome, code) {
        (
            Outcome::Other,
            Some("MCP_EXPECTED_STATE_MISMATCH" | "ORDER_STATUS_PRECONDITION_FAILED"),
        ) => Expect::Precondition,
        _ => Expect::Is(outcome),
    }
}

/// What the matrix targets in each demo location, read by the platform admin.
#[derive(Default)]
struct Ids {
    /// location → (order, conversation, available catalog item, customer)
    by_location: BTreeMap<&'static str, [String; 4]>,
    /// A day with orders, for analytics.
    day: String,
}

#[derive(Clone, Copy)]
enum Kind {
    Order = 0,
    Conversation = 1,
    Item = 2,
    Customer = 3,
}

fn first(result: &Value, list: &str, field: &str) -> String {
    result["structuredContent"]["data"][list][0][field]
        .as_str()
        .unwrap_or_else(|| panic!("a {list} entry with {field}: {result}"))
        .to_owned()
}

impl Ids {
    async fn load(sandbox: &Sandbox) -> Ids {
        let admin = sandbox
            .token_with(demo::USER_ADMIN, &Scopes::All.list())
            .await;
        let mut ids = Ids::default();
        for location in demo::LOCATIONS {
            let orders = sandbox
                .call_tool(
                    &admin,
                    "chataigne_orders_list",
                    json!({"location_id": location.id, "limit": 1}),
                )
                .await;
            let conversations = sandbox
                .call_tool(
                    &admin,
                    "chataigne_conversations_list",
                    json!({"location_id": location.id, "limit": 1}),
                )
                .await;
            let items = sandbox
                .call_tool(
                    &admin,
                    "chataigne_catalog_items_list",
                    json!({"location_id": location.id, "availability": "available", "limit": 1}),
                )
                .await;
            let customers = sandbox
                .call_tool(
                    &admin,
                    "chataigne_customers_list",
                    json!({"organization_id": location.organization_id,
                           "location_id": location.id, "limit": 1}),
                )
                .await;
            if ids.day.is_empty() {
                ids.day = first(&orders, "orders", "created_at")
                    .chars()
                    .take(10)
                    .collect();
            }
            ids.by_location.insert(
                location.id,
                [
                    first(&orders, "orders", "id"),
                    first(&conversations, "conversations", "id"),
                    first(&items, "items", "id"),
                    first(&customers, "customers", "id"),
                ],
            );
        }
        ids
    }

    fn of(&self, kind: Kind, location: &str) -> String {
        self.by_location
            .get(location)
            .map(|ids| ids[kind as usize].clone())
            .unwrap_or_else(|| panic!("no ids for {location}"))
    }
}

fn fresh_key() -> String {
    format!("matrix-{}", uuid::Uuid::new_v4().simple())
}

/// The arguments of `tool` aimed at `target` from perspective `at`.
fn arguments(tool: &str, target: Target, at: &Perspective, ids: &Ids) -> Value {
    let location = match target {
        Target::OwnLocation => at.location,
        Target::SiblingLocation => at.sibling,
        Target::OtherTenant => at.other_location,
        Target::OwnOrg | Target::Nonexistent => "loc_doesnotexist",
    };
    let org = match target {
        Target::OtherTenant => at.other_org,
        Target::Nonexistent => "org_doesnotexist",
        _ => at.org,
    };
    let id = |kind: Kind, prefix: &str| match target {
        Target::OwnOrg | Target::Nonexistent => format!("{prefix}_doesnotexist"),
        _ => ids.of(kind, location),
    };
    match tool {
        "chataigne_organizations_list" => json!({}),
        "chataigne_locations_list" => json!({"organization_id": org}),
        "chataigne_location_get"
        | "chataigne_location_status_get"
        | "chataigne_discounts_list"
        | "chataigne_integrations_list"
        | "chataigne_conversations_list"
        | "chataigne_catalog_items_list" => json!({"location_id": location}),
        "chataigne_location_settings_get" => {
            json!({"location_id": location, "sections": ["store"]})
        }
        // Every demo location accepts orders: setting what is there changes nothing.
        "chataigne_location_status_update" => json!({"location_id": location,
            "status": "accepting", "expected_status": "accepting"}),
        // The item is available: setting what is there changes nothing.
        "chataigne_catalog_item_availability_update" => json!({"item_id": id(Kind::Item, "itm"),
            "availability": "available", "expected_availability": "available"}),
        "chataigne_orders_list" => match target {
            Target::OwnOrg => json!({"limit": 5}),
            _ => json!({"location_id": location, "limit": 5}),
        },
        "chataigne_order_get" => json!({"order_id": id(Kind::Order, "ord")}),
        // A backward move: refused after authorization, nothing written.
        "chataigne_order_status_update" => json!({"order_id": id(Kind::Order, "ord"),
            "status": "received", "expected_status": "accepted"}),
        "chataigne_customers_list" => match target {
            Target::OwnLocation | Target::SiblingLocation => {
                json!({"organization_id": org, "location_id": location})
            }
            _ => json!({"organization_id": org}),
        },
        "chataigne_customer_get" => json!({"customer_id": id(Kind::Customer, "cus")}),
        "chataigne_conversation_get" => {
            json!({"conversation_id": id(Kind::Conversation, "conv")})
        }
        "chataigne_conversation_message_send" | "chataigne_conversation_instruction_send" => {
            json!({"conversation_id": id(Kind::Conversation, "conv"),
                   "text": "Authorization matrix check.", "idempotency_key": fresh_key()})
        }
        "chataigne_analytics_query" => json!({"location_id": location,
            "metrics": ["orders_count", "revenue"], "date_from": ids.day, "date_to": ids.day}),
        "chataigne_organization_create" => {
            json!({"name": "Matrix Organization", "idempotency_key": fresh_key()})
        }
        "chataigne_location_create" => json!({"organization_id": org,
            "name": "Matrix Location", "line1": "1 rue de la Matrice", "city": "Nantes",
            "postal_code": "44000", "country": "FR", "timezone": "Europe/Paris",
            "currency": "EUR", "idempotency_key": fresh_key()}),
        other => panic!("no argument builder for {other}"),
    }
}

/// The tool names `tools/list` shows `token`.
async fn listed(sandbox: &Sandbox, token: &str) -> BTreeSet<String> {
    let (status, body) = sandbox
        .mcp(
            token,
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("a tool list: {body}"))
        .iter()
        .map(|tool| tool["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

async fn matrix(backend: Backend) {
    let Some(sandbox) = Sandbox::start_with(backend, |config| {
        // About a thousand calls from one address: the pre-auth limit is not under test.
        config.gateway.rate_limits.per_ip_per_minute = 0;
    })
    .await
    else {
        return;
    };

    // The matrix covers exactly the catalogue a principal with every scope sees.
    let everything = sandbox
        .token_with(demo::USER_ADMIN, &Scopes::All.list())
        .await;
    let catalogue = listed(&sandbox, &everything).await;
    let covered: BTreeSet<String> = ROWS.iter().map(|(_, tool, _)| (*tool).to_owned()).collect();
    assert_eq!(
        covered, catalogue,
        "the matrix's tools differ from the catalogue"
    );

    let ids = Ids::load(&sandbox).await;
    let mut failures = Vec::new();
    let mut checked = 0;
    for principal in PRINCIPALS {
        let scopes = principal.scopes.list();
        let token = sandbox.token_with(principal.user, &scopes).await;
        for (name, tool, spec) in ROWS.iter().filter(|(name, ..)| *name == principal.name) {
            let scope = tool_scope(tool);
            // Second pass: the same calls with the tool's scope missing are
            // hidden (the revoked user stays unauthenticated).
            let narrow = if scopes.contains(&scope) {
                let without: Vec<&str> = scopes.iter().copied().filter(|s| *s != scope).collect();
                Some(sandbox.token_with(principal.user, &without).await)
            } else {
                None
            };
            for (target, expected) in TARGETS.iter().zip(cells(spec)) {
                let Some(expected) = expected else { continue };
                let args = arguments(tool, *target, principal.at, &ids);
                let (outcome, status, body) =
                    sandbox.call_outcome(&token, tool, args.clone()).await;
                checked += 1;
                let got = classify(outcome, &body);
                if got != expected {
                    failures.push(format!(
                        "{name} · {tool} · {target:?}: expected {expected:?}, got {got:?} ({status}) {body}"
                    ));
                }
                if let Some(narrow) = &narrow {
                    let (outcome, status, body) = sandbox.call_outcome(narrow, tool, args).await;
                    checked += 1;
                    let expected = if expected == Expect::Is(Outcome::Unauthenticated) {
                        Outcome::Unauthenticated
                    } else {
                        Outcome::Hidden
                    };
                    if outcome != expected {
                        failures.push(format!(
                            "{name} · {tool} · {target:?} without {scope}: expected {expected:?}, got {outcome:?} ({status}) {body}"
                        ));
                    }
                }
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} cells differ:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(checked > 1000, "only {checked} cells checked");
    sandbox.shutdown().await;
}

chataigne_common::on_both_backends! {
    runtime: (flavor = "multi_thread", worker_threads = 2),
    sqlite: Backend::Sqlite,
    postgres: Some(Backend::Postgres),
    run: |backend| (backend),
    tests: [
        every_principal_gets_exactly_its_authorization_matrix_cells = matrix,
    ],
}

#[test]
fn every_principal_has_one_row_per_tool() {
    let tools: BTreeSet<&str> = TOOLS.iter().map(|(name, _)| *name).collect();
    assert_eq!(tools.len(), TOOLS.len(), "a tool listed twice in TOOLS");
    for principal in PRINCIPALS {
        let rows: Vec<&str> = ROWS
            .iter()
            .filter(|(n, ..)| *n == principal.name)
            .map(|(_, t, _)| *t)
            .collect();
        let distinct: BTreeSet<&str> = rows.iter().copied().collect();
        assert_eq!(
            distinct.len(),
            rows.len(),
            "{}: a tool twice",
            principal.name
        );
        assert_eq!(distinct, tools, "{}", principal.name);
    }
    for (name, tool, spec) in ROWS {
        assert!(
            PRINCIPALS.iter().any(|p| p.name == *name),
            "unknown principal {name}"
        );
        assert_eq!(cells(spec).len(), TARGETS.len(), "{name} · {tool}");
    }
}

#[test]
fn every_tool_has_an_argument_builder() {
    let ids = Ids {
        by_location: demo::LOCATIONS
            .iter()
            .map(|l| (l.id, std::array::from_fn(|_| "id".to_owned())))
            .collect(),
        day: "2026-01-01".to_owned(),
    };
    for (tool, _) in TOOLS {
        for target in TARGETS {
            assert!(arguments(tool, target, &BISTRO, &ids).is_object(), "{tool}");
        }
    }
}
