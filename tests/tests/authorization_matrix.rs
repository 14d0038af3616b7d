//! The authorization matrix through the real stack over MCP HTTP: principals
//! × tools × targets × granted scopes → outcome. Each row states, for one
//! principal and one tool, the outcome on the five targets as seen from that
//! principal; a second pass without the tool's scope expects the tool to be
//! hidden. Adding a tool means adding one argument builder and its rows.

use chataigne_tests::Outcome::{
    self, Forbidden as F, Hidden as H, NotFound as N, Ok as O, Unauthenticated as U,
};
use chataigne_tests::{Backend, Sandbox, demo};
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

/// A principal of the matrix.
struct Principal {
    name: &'static str,
    user: &'static str,
    /// Scopes of its token (before removing the tool's scope in the second pass).
    scopes: &'static [&'static str],
    at: &'static Perspective,
}

const ALL: &[&str] = &["businessOrganization.read", "location.read", "orders.read"];

const PRINCIPALS: &[Principal] = &[
    Principal {
        name: "manager (org-level)",
        user: demo::USER_MANAGER,
        scopes: ALL,
        at: &BISTRO,
    },
    Principal {
        name: "staff (location-level)",
        user: demo::USER_STAFF,
        scopes: ALL,
        at: &BISTRO,
    },
    Principal {
        name: "analyst (other tenant)",
        user: demo::USER_ANALYST,
        scopes: ALL,
        at: &HARBOR,
    },
    Principal {
        name: "owner (other tenant)",
        user: demo::USER_OWNER,
        scopes: ALL,
        at: &HARBOR,
    },
    Principal {
        name: "revoked user",
        user: demo::USER_REVOKED,
        scopes: ALL,
        at: &BISTRO,
    },
    Principal {
        name: "platform admin",
        user: demo::USER_ADMIN,
        scopes: ALL,
        at: &BISTRO,
    },
    Principal {
        name: "platform admin without scopes",
        user: demo::USER_ADMIN,
        scopes: &["openid"],
        at: &BISTRO,
    },
];

/// `None`: the target does not apply to the tool.
type Cells = [Option<Outcome>; 5];

/// Expected outcomes per principal and tool, on
/// [own org, own location, sibling location, other tenant, nonexistent].
const ROWS: &[(&str, &str, Cells)] = &[
    (
        "manager (org-level)",
        "chataigne_organizations_list",
        [Some(O), None, None, None, None],
    ),
    (
        "manager (org-level)",
        "chataigne_locations_list",
        [Some(O), None, None, Some(F), Some(F)],
    ),
    (
        "manager (org-level)",
        "chataigne_orders_list",
        [Some(O), Some(O), Some(O), Some(F), Some(F)],
    ),
    (
        "manager (org-level)",
        "chataigne_order_get",
        [None, Some(O), Some(O), Some(F), Some(F)],
    ),
    (
        "staff (location-level)",
        "chataigne_organizations_list",
        [Some(O), None, None, None, None],
    ),
    (
        "staff (location-level)",
        "chataigne_locations_list",
        [Some(O), None, None, Some(F), Some(F)],
    ),
    (
        "staff (location-level)",
        "chataigne_orders_list",
        [Some(O), Some(O), Some(F), Some(F), Some(F)],
    ),
    (
        "staff (location-level)",
        "chataigne_order_get",
        [None, Some(O), Some(F), Some(F), Some(F)],
    ),
    (
        "analyst (other tenant)",
        "chataigne_organizations_list",
        [Some(O), None, None, None, None],
    ),
    (
        "analyst (other tenant)",
        "chataigne_locations_list",
        [Some(O), None, None, Some(F), Some(F)],
    ),
    (
        "analyst (other tenant)",
        "chataigne_orders_list",
        [Some(O), Some(O), Some(O), Some(F), Some(F)],
    ),
    (
        "analyst (other tenant)",
        "chataigne_order_get",
        [None, Some(O), Some(O), Some(F), Some(F)],
    ),
    (
        "owner (other tenant)",
        "chataigne_organizations_list",
        [Some(O), None, None, None, None],
    ),
    (
        "owner (other tenant)",
        "chataigne_locations_list",
        [Some(O), None, None, Some(F), Some(F)],
    ),
    (
        "owner (other tenant)",
        "chataigne_orders_list",
        [Some(O), Some(O), Some(O), Some(F), Some(F)],
    ),
    (
        "owner (other tenant)",
        "chataigne_order_get",
        [None, Some(O), Some(O), Some(F), Some(F)],
    ),
    (
        "revoked user",
        "chataigne_organizations_list",
        [Some(U), None, None, None, None],
    ),
    (
        "revoked user",
        "chataigne_locations_list",
        [Some(U), None, None, Some(U), Some(U)],
    ),
    (
        "revoked user",
        "chataigne_orders_list",
        [Some(U), Some(U), Some(U), Some(U), Some(U)],
    ),
    (
        "revoked user",
        "chataigne_order_get",
        [None, Some(U), Some(U), Some(U), Some(U)],
    ),
    (
        "platform admin",
        "chataigne_organizations_list",
        [Some(O), None, None, None, None],
    ),
    (
        "platform admin",
        "chataigne_locations_list",
        [Some(O), None, None, Some(O), Some(N)],
    ),
    (
        "platform admin",
        "chataigne_orders_list",
        [Some(O), Some(O), Some(O), Some(O), Some(F)],
    ),
    (
        "platform admin",
        "chataigne_order_get",
        [None, Some(O), Some(O), Some(O), Some(F)],
    ),
    (
        "platform admin without scopes",
        "chataigne_organizations_list",
        [Some(H), None, None, None, None],
    ),
    (
        "platform admin without scopes",
        "chataigne_locations_list",
        [Some(H), None, None, Some(H), Some(H)],
    ),
    (
        "platform admin without scopes",
        "chataigne_orders_list",
        [Some(H), Some(H), Some(H), Some(H), Some(H)],
    ),
    (
        "platform admin without scopes",
        "chataigne_order_get",
        [None, Some(H), Some(H), Some(H), Some(H)],
    ),
];

/// Scope of each tool (for the hidden pass).
fn tool_scope(tool: &str) -> &'static str {
    match tool {
        "chataigne_organizations_list" => "businessOrganization.read",
        "chataigne_locations_list" => "location.read",
        _ => "orders.read",
    }
}

/// One order id per demo location, read by the platform admin.
struct Orders(Vec<(&'static str, String)>);

impl Orders {
    async fn load(sandbox: &Sandbox) -> Orders {
        let admin = sandbox.token(demo::USER_ADMIN).await;
        let mut ids = Vec::new();
        for location in demo::LOCATIONS {
            let result = sandbox
                .call_tool(
                    &admin,
                    "chataigne_orders_list",
                    json!({"location_id": location.id, "limit": 1}),
                )
                .await;
            let id = result["structuredContent"]["data"]["orders"][0]["id"]
                .as_str()
                .unwrap_or_else(|| panic!("an order in {}: {result}", location.id))
                .to_owned();
            ids.push((location.id, id));
        }
        Orders(ids)
    }

    fn of(&self, location: &str) -> String {
        self.0
            .iter()
            .find(|(l, _)| *l == location)
            .map(|(_, id)| id.clone())
            .unwrap_or_default()
    }
}

/// The arguments of `tool` aimed at `target` from perspective `at`.
fn arguments(tool: &str, target: Target, at: &Perspective, orders: &Orders) -> Value {
    let location = match target {
        Target::OwnLocation => at.location,
        Target::SiblingLocation => at.sibling,
        Target::OtherTenant => at.other_location,
        Target::OwnOrg | Target::Nonexistent => "loc_doesnotexist",
    };
    match tool {
        "chataigne_organizations_list" => json!({}),
        "chataigne_locations_list" => json!({"organization_id": match target {
            Target::OtherTenant => at.other_org,
            Target::Nonexistent => "org_doesnotexist",
            _ => at.org,
        }}),
        "chataigne_orders_list" => match target {
            Target::OwnOrg => json!({"limit": 5}),
            _ => json!({"location_id": location, "limit": 5}),
        },
        "chataigne_order_get" => json!({"order_id": match target {
            Target::Nonexistent => "ord_doesnotexist".to_owned(),
            _ => orders.of(location),
        }}),
        other => panic!("no argument builder for {other}"),
    }
}

async fn matrix(backend: Backend) {
    let Some(sandbox) = Sandbox::start(backend).await else {
        return;
    };
    let orders = Orders::load(&sandbox).await;
    let mut failures = Vec::new();
    let mut checked = 0;
    for principal in PRINCIPALS {
        let token = sandbox.token_with(principal.user, principal.scopes).await;
        for (name, tool, cells) in ROWS.iter().filter(|(name, ..)| *name == principal.name) {
            for (target, expected) in TARGETS.iter().zip(cells.iter()) {
                let Some(expected) = expected else { continue };
                let args = arguments(tool, *target, principal.at, &orders);
                let (outcome, status, body) =
                    sandbox.call_outcome(&token, tool, args.clone()).await;
                checked += 1;
                if outcome != *expected {
                    failures.push(format!("{name} · {tool} · {target:?}: expected {expected:?}, got {outcome:?} ({status}) {body}"));
                }
                // Second pass: the same call with the tool's scope missing is hidden
                // (the revoked user stays unauthenticated).
                if principal.scopes.contains(&tool_scope(tool)) {
                    let without: Vec<&str> = principal
                        .scopes
                        .iter()
                        .copied()
                        .filter(|s| *s != tool_scope(tool))
                        .collect();
                    let narrow = sandbox.token_with(principal.user, &without).await;
                    let (outcome, status, body) = sandbox.call_outcome(&narrow, tool, args).await;
                    checked += 1;
                    let expected = if *expected == U { U } else { H };
                    if outcome != expected {
                        failures.push(format!("{name} · {tool} · {target:?} without {}: expected {expected:?}, got {outcome:?} ({status}) {body}", tool_scope(tool)));
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
    assert!(checked > 150, "only {checked} cells checked");
    sandbox.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_matrix_sqlite() {
    matrix(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn authorization_matrix_postgres() {
    matrix(Backend::Postgres).await;
}

#[test]
fn every_principal_has_a_row_per_tool() {
    for principal in PRINCIPALS {
        let tools: Vec<&str> = ROWS
            .iter()
            .filter(|(n, ..)| *n == principal.name)
            .map(|(_, t, _)| *t)
            .collect();
        assert_eq!(tools.len(), 4, "{}", principal.name);
    }
}
