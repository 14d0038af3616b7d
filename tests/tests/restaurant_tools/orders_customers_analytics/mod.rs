//! The order status write, customer, conversation and analytics tools end to
//! end over MCP HTTP and over the typed gRPC API (`OrderUpdates`, `Customers`,
//! `Conversations`, `Analytics`), on SQLite and PostgreSQL: output conforming
//! to each tool's output schema, forward-only transitions with the observed
//! status enforced atomically, masked contacts, transcript search, message
//! paging, analytics limits and a rollup agreeing with the orders, and
//! cross-tenant identifiers answered like unknown ones.
//!
//! Each behaviour runs on a fresh sandbox of each backend ([`Scene`]), so no
//! test depends on what another one wrote.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod analytics;
mod conversations;
mod customers;
mod order_numbers;
mod order_status;
mod typed_api;

use std::collections::HashMap;

use chataigne_tests::{Backend, Sandbox, demo, envelope};
use serde_json::{Value, json};

const MINE: [&str; 6] = [
    "chataigne_order_status_update",
    "chataigne_customers_list",
    "chataigne_customer_get",
    "chataigne_conversations_list",
    "chataigne_conversation_get",
    "chataigne_analytics_query",
];

/// Calls tools (optionally with a `_meta.user_locale`) and checks every
/// successful result against the tool's output schema from `tools/list`.
struct Client<'a> {
    sandbox: &'a Sandbox,
    schemas: HashMap<String, jsonschema::Validator>,
}

impl Client<'_> {
    async fn call(&self, token: &str, name: &str, arguments: Value) -> Value {
        self.call_in(token, name, arguments, None).await
    }

    async fn call_in(
        &self,
        token: &str,
        name: &str,
        arguments: Value,
        locale: Option<&str>,
    ) -> Value {
        let result = self
            .sandbox
            .call_tool_in(token, locale, name, arguments)
            .await;
        assert!(result.is_object(), "{name}: {result}");
        if result["isError"] != true {
            let errors: Vec<String> = self.schemas[name]
                .iter_errors(&result["structuredContent"])
                .map(|e| format!("{} at {}", e, e.instance_path()))
                .collect();
            assert!(
                errors.is_empty(),
                "{name} output off its schema: {errors:?}"
            );
        }
        result
    }
}

fn error_code(result: &Value) -> String {
    assert_eq!(result["isError"], true, "expected an error: {result}");
    envelope(result)["data"]["error"]["code"]
        .as_str()
        .unwrap_or("")
        .to_owned()
}

fn error_message(result: &Value) -> Value {
    envelope(result)["data"]["error"]["message"].clone()
}

fn data(result: &Value) -> &Value {
    assert_ne!(result["isError"], true, "unexpected error: {result}");
    &result["structuredContent"]["data"]
}

fn next_cursor(result: &Value) -> Option<String> {
    result["structuredContent"]["meta"]["next_cursor"]
        .as_str()
        .map(str::to_owned)
}

async fn client<'a>(sandbox: &'a Sandbox, token: &str) -> Client<'a> {
    let (_, list) = sandbox
        .mcp(token, json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}))
        .await;
    let tools: HashMap<String, Value> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| (t["name"].as_str().unwrap().to_owned(), t.clone()))
        .collect();
    for name in MINE {
        let tool = tools.get(name).unwrap_or_else(|| panic!("{name} listed"));
        assert_eq!(tool["inputSchema"]["additionalProperties"], false, "{name}");
        let write = name.ends_with("_update");
        assert_eq!(tool["annotations"]["readOnlyHint"], !write, "{name}");
        assert_eq!(tool["annotations"]["destructiveHint"], write, "{name}");
        assert_eq!(tool["annotations"]["openWorldHint"], false, "{name}");
    }
    Client {
        sandbox,
        schemas: tools
            .iter()
            .map(|(name, tool)| {
                let validator = jsonschema::options()
                    .build(&tool["outputSchema"])
                    .expect("output schema compiles");
                (name.clone(), validator)
            })
            .collect(),
    }
}

/// Orders of `location` currently in `status`, newest first.
async fn orders_in(c: &Client<'_>, token: &str, location: &str, status: &str) -> Vec<String> {
    let listed = c
        .call(
            token,
            "chataigne_orders_list",
            json!({"location_id": location, "statuses": [status], "limit": 50}),
        )
        .await;
    data(&listed)["orders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap().to_owned())
        .collect()
}

async fn order_status(c: &Client<'_>, token: &str, order_id: &str) -> String {
    let order = c
        .call(token, "chataigne_order_get", json!({"order_id": order_id}))
        .await;
    data(&order)["order"]["status"].as_str().unwrap().to_owned()
}

/// One sandbox with the demo tokens of a manager, a location staff member and
/// an analyst: the fixture of every test here.
struct Scene {
    sandbox: Sandbox,
    manager: String,
    staff: String,
    analyst: String,
}

impl Scene {
    /// Starts the sandbox on `backend`; `None` only for PostgreSQL outside CI
    /// when no server is reachable.
    async fn start(backend: Backend) -> Option<Scene> {
        let sandbox = Sandbox::start(backend).await?;
        let manager = sandbox.token(demo::USER_MANAGER).await;
        let staff = sandbox.token(demo::USER_STAFF).await;
        let analyst = sandbox.token(demo::USER_ANALYST).await;
        Some(Scene {
            sandbox,
            manager,
            staff,
            analyst,
        })
    }

    /// The schema-checking client, for the manager's view of `tools/list`.
    async fn client(&self) -> Client<'_> {
        client(&self.sandbox, &self.manager).await
    }

    async fn shutdown(self) {
        self.sandbox.shutdown().await;
    }
}
