//! The MCP tool catalogue. Each tool lives in its own module beside the typed
//! RPC it maps to, declaring once its name, description, scope, class, input
//! and output types; `tools/list`, the JSON Schemas and the gRPC API all derive
//! from that declaration.

pub mod analytics_query;
pub mod catalog_item_availability_update;
pub mod catalog_items_list;
pub mod conversation_get;
pub mod conversation_instruction_send;
pub mod conversation_message_send;
pub mod conversation_post;
pub mod conversations_list;
pub mod customer_get;
mod customer_view;
pub mod customers_list;
pub mod deadline;
pub mod discounts_list;
pub mod idempotency;
pub mod integrations_list;
pub mod location_create;
pub mod location_get;
pub mod location_settings_get;
pub mod location_status_get;
pub mod location_status_update;
mod locations_list;
mod order_get;
pub mod order_status_update;
mod orders_list;
pub mod organization_create;
mod organizations_list;
pub mod schema;
mod support;
mod venue_view;

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use locations_list::{LocationsListInput, LocationsListOutput};
pub use order_get::{OrderGetInput, OrderGetOutput};
pub use orders_list::{OrdersListInput, OrdersListOutput};
pub use organizations_list::{OrganizationsListInput, OrganizationsListOutput};

use crate::access::{Access, Credential};
use crate::cursor::CursorCodec;
use crate::domain::DomainError;
use crate::store::Store;
use schema::InputValidator;

/// Whether a tool only reads or changes state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    Read,
    Write,
}

/// Which deadline applies (SPEC §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeadlineClass {
    Read,
    Analytics,
    Write,
}

/// The static declaration of one tool.
#[derive(Debug, Clone, Copy)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// OAuth scope needed to see and call the tool.
    pub scope: &'static str,
    pub kind: ToolKind,
    pub deadline: DeadlineClass,
    pub idempotency_key_required: bool,
    /// Whether the tool reaches people outside the restaurant (customers).
    pub open_world: bool,
    /// The typed RPC it maps to, `package.Service/Method`.
    pub rpc: &'static str,
}

/// The catalogue: one line per tool, `Variant => module, Input, Output`.
/// It generates `ToolId` (with `ALL`, `spec`, `by_name`), the schemas of each
/// tool and the exhaustive dispatch from a name to the tool's method, which
/// is named like its module.
macro_rules! catalogue {
    ($($variant:ident => $module:ident, $input:ty, $output:ty;)*) => {
        /// Every tool, by identity; dispatch matches on it exhaustively.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ToolId { $($variant,)* }

        impl ToolId {
            pub const ALL: &'static [ToolId] = &[$(ToolId::$variant,)*];

            pub fn spec(self) -> &'static ToolSpec {
                match self { $(ToolId::$variant => &$module::SPEC,)* }
            }

            fn schemas(self) -> (Value, Value) {
                match self {
                    $(ToolId::$variant => (
                        schema::schema_of::<$input>(),
                        schema::output_schema_of::<$output>(),
                    ),)*
                }
            }
        }

        impl<S: Store, A: Access> Tools<S, A> {
            async fn dispatch(
                &self,
                id: ToolId,
                arguments: Value,
                ctx: &CallContext,
            ) -> Result<CallResult, DomainError> {
                match id {
                    $(ToolId::$variant => finish(self.$module(parse(arguments)?, ctx).await?),)*
                }
            }
        }
    };
}

catalogue! {
    OrganizationsList => organizations_list, OrganizationsListInput, OrganizationsListOutput;
    LocationsList => locations_list, LocationsListInput, LocationsListOutput;
    OrdersList => orders_list, OrdersListInput, OrdersListOutput;
    OrderGet => order_get, OrderGetInput, OrderGetOutput;
    LocationGet => location_get, location_get::LocationGetInput, location_get::LocationGetOutput;
    LocationSettingsGet => location_settings_get, location_settings_get::LocationSettingsGetInput, location_settings_get::LocationSettingsGetOutput;
    LocationStatusGet => location_status_get, location_status_get::LocationStatusGetInput, location_status_get::LocationStatusGetOutput;
    LocationStatusUpdate => location_status_update, location_status_update::LocationStatusUpdateInput, location_status_update::LocationStatusUpdateOutput;
    CatalogItemsList => catalog_items_list, catalog_items_list::CatalogItemsListInput, catalog_items_list::CatalogItemsListOutput;
    CatalogItemAvailabilityUpdate => catalog_item_availability_update, catalog_item_availability_update::CatalogItemAvailabilityUpdateInput, catalog_item_availability_update::CatalogItemAvailabilityUpdateOutput;
    DiscountsList => discounts_list, discounts_list::DiscountsListInput, discounts_list::DiscountsListOutput;
    IntegrationsList => integrations_list, integrations_list::IntegrationsListInput, integrations_list::IntegrationsListOutput;
    ConversationMessageSend => conversation_message_send, conversation_post::MessageSendInput, conversation_post::MessageSendOutput;
    ConversationInstructionSend => conversation_instruction_send, conversation_post::InstructionSendInput, conversation_post::MessageSendOutput;
    OrganizationCreate => organization_create, organization_create::OrganizationCreateInput, organization_create::OrganizationCreateOutput;
    LocationCreate => location_create, location_create::LocationCreateInput, location_create::LocationCreateOutput;
    OrderStatusUpdate => order_status_update, order_status_update::OrderStatusUpdateInput, order_status_update::OrderStatusUpdateOutput;
    CustomersList => customers_list, customers_list::CustomersListInput, customers_list::CustomersListOutput;
    CustomerGet => customer_get, customer_get::CustomerGetInput, customer_get::CustomerGetOutput;
    ConversationsList => conversations_list, conversations_list::ConversationsListInput, conversations_list::ConversationsListOutput;
    ConversationGet => conversation_get, conversation_get::ConversationGetInput, conversation_get::ConversationGetOutput;
    AnalyticsQuery => analytics_query, analytics_query::AnalyticsQueryInput, analytics_query::AnalyticsQueryOutput;
}

impl ToolId {
    pub fn by_name(name: &str) -> Option<ToolId> {
        ToolId::ALL
            .iter()
            .copied()
            .find(|id| id.spec().name == name)
    }
}

/// One catalogue entry with its schemas, serialized once at start-up.
pub struct CatalogEntry {
    pub id: ToolId,
    pub spec: &'static ToolSpec,
    /// The input schema as listed (`tools/list`, the catalogue RPC).
    pub input_schema: Value,
    pub output_schema: Value,
    validator: InputValidator,
}

/// Who calls, in which locale, and when.
#[derive(Debug, Clone)]
pub struct CallContext {
    pub credential: Credential,
    /// "fr" or "en".
    pub locale: &'static str,
    pub now_ms: i64,
}

/// What a tool returns before the gateway wraps it in the envelope.
#[derive(Debug)]
pub struct ToolOutput<T> {
    pub data: T,
    /// Short summary for people (bounded by `support::TEXT_LIMIT`).
    pub text: String,
    pub next_cursor: Option<String>,
}

/// A finished call, serialized.
#[derive(Debug, Clone, PartialEq)]
pub struct CallResult {
    pub data_json: String,
    pub text: String,
    pub next_cursor: Option<String>,
    pub truncated: bool,
    /// An idempotent write answered from its stored result.
    pub replayed: bool,
}

/// Structured output bound (SPEC §6).
pub const OUTPUT_LIMIT: usize = 128 * 1024;

/// The tools with what they need to run: store, access control, cursor keys.
pub struct Tools<S, A> {
    pub(crate) store: S,
    pub(crate) access: A,
    pub(crate) cursors: CursorCodec,
    pub(crate) idempotency: idempotency::IdempotencyKeys,
    catalog: Arc<Vec<CatalogEntry>>,
}

impl<S: Clone, A: Clone> Clone for Tools<S, A> {
    fn clone(&self) -> Self {
        Tools {
            store: self.store.clone(),
            access: self.access.clone(),
            cursors: self.cursors.clone(),
            idempotency: self.idempotency.clone(),
            catalog: self.catalog.clone(),
        }
    }
}

/// Builds every catalogue entry: schemas generated and validators compiled.
pub fn build_catalog() -> anyhow::Result<Vec<CatalogEntry>> {
    ToolId::ALL
        .iter()
        .map(|&id| {
            let (validated, output_schema) = id.schemas();
            Ok(CatalogEntry {
                id,
                spec: id.spec(),
                validator: InputValidator::new(&validated)?,
                input_schema: schema::listed_input_schema(&validated),
                output_schema,
            })
        })
        .collect()
}

impl<S: Store, A: Access> Tools<S, A> {
    pub fn new(store: S, access: A, cursors: CursorCodec) -> anyhow::Result<Tools<S, A>> {
        let catalog = build_catalog()?;
        Ok(Tools {
            store,
            access,
            cursors,
            idempotency: idempotency::IdempotencyKeys::new(
                None,
                std::time::Duration::from_secs(24 * 3600),
            ),
            catalog: Arc::new(catalog),
        })
    }

    /// Uses `keys` for idempotent writes (the configured secret and window).
    pub fn with_idempotency(mut self, keys: idempotency::IdempotencyKeys) -> Self {
        self.idempotency = keys;
        self
    }

    pub fn catalog(&self) -> &[CatalogEntry] {
        &self.catalog
    }

    pub fn store(&self) -> &S {
        &self.store
    }

    /// Whether the operator's write switch allows writes now, read live.
    pub async fn writes_enabled(&self) -> Result<bool, DomainError> {
        Ok(self.store.writes_switch().await?.enabled)
    }

    /// The gate of every write, on the MCP bridge and the typed RPCs alike:
    /// refuses with `WritesDisabled` while the operator's switch is off. One
    /// primary-key read per write, nothing cached, so a change applies at the
    /// next call on every replica.
    pub async fn ensure_writes_enabled(&self) -> Result<(), DomainError> {
        if self.writes_enabled().await? {
            Ok(())
        } else {
            Err(DomainError::WritesDisabled)
        }
    }

    /// Calls the tool `name` with JSON `arguments`: the write switch for write
    /// tools, schema validation, then the tool, then serialization within the
    /// output bound.
    pub async fn call(
        &self,
        name: &str,
        arguments: Value,
        ctx: &CallContext,
    ) -> Result<CallResult, DomainError> {
        let entry = self
            .catalog
            .iter()
            .find(|entry| entry.spec.name == name)
            .ok_or_else(|| DomainError::UnknownTool(name.to_owned()))?;
        if entry.spec.kind == ToolKind::Write {
            self.ensure_writes_enabled().await?;
        }
        let arguments = without_nulls(arguments);
        entry.validator.check(&arguments)?;
        self.dispatch(entry.id, arguments, ctx).await
    }
}

/// `arguments` with top-level `null`s left out: an optional argument passed
/// as `null` (as models often do) means the same as an absent one; a required
/// one is then reported missing.
fn without_nulls(arguments: Value) -> Value {
    match arguments {
        Value::Object(mut map) => {
            map.retain(|_, value| !value.is_null());
            Value::Object(map)
        }
        other => other,
    }
}

fn parse<T: DeserializeOwned>(arguments: Value) -> Result<T, DomainError> {
    serde_json::from_value(arguments).map_err(|error| {
        // Schema validation ran first, so this is rare; serde's text may
        // quote the value or name Rust types, so only its position is kept.
        tracing::debug!(
            line = error.line(),
            column = error.column(),
            "arguments do not deserialize"
        );
        DomainError::invalid(
            "",
            "the arguments do not match the tool's input; check each argument's type",
        )
    })
}

/// Where the valid values of each identifier argument come from.
const ID_SOURCES: &[(&str, &str)] = &[
    ("organization_id", "chataigne_organizations_list"),
    ("location_id", "chataigne_locations_list"),
    ("order_id", "chataigne_orders_list"),
    ("item_id", "chataigne_catalog_items_list"),
    ("category_id", "chataigne_catalog_items_list"),
    ("customer_id", "chataigne_customers_list"),
    ("conversation_id", "chataigne_conversations_list"),
];

/// The message of an unknown or inaccessible identifier among the
/// identifier arguments of `arguments`, naming the tool each comes from (the
/// same text whether the identifier does not exist or belongs to another
/// tenant); `None` when the call has no identifier argument.
pub fn unknown_id_message(arguments: &Value) -> Option<String> {
    let present: Vec<(&str, &str)> = ID_SOURCES
        .iter()
        .copied()
        .filter(|(name, _)| arguments.get(name).is_some_and(Value::is_string))
        .collect();
    let sources: Vec<String> = present
        .iter()
        .map(|(name, tool)| format!("{name} from {tool}"))
        .collect();
    match present.as_slice() {
        [] => None,
        [(name, _)] => Some(format!(
            "The {name} is unknown or outside the signed-in user's access. Take {} \
             instead of guessing it.",
            sources.join("")
        )),
        _ => Some(format!(
            "One of {} is unknown or outside the signed-in user's access. Take {} \
             instead of guessing them.",
            present
                .iter()
                .map(|(name, _)| *name)
                .collect::<Vec<_>>()
                .join(", "),
            sources.join(" and ")
        )),
    }
}

fn finish(output: impl idempotency::Finish) -> Result<CallResult, DomainError> {
    output.finish()
}

impl<T: Serialize> idempotency::Finish for ToolOutput<T> {
    fn finish(self) -> Result<CallResult, DomainError> {
        let output = self;
        let data_json = serde_json::to_string(&output.data)
            .map_err(|e| DomainError::Internal(format!("serializing output: {e}")))?;
        if data_json.len() > OUTPUT_LIMIT {
            return Err(DomainError::OutputTooLarge);
        }
        Ok(CallResult {
            data_json,
            text: support::bound_text(output.text),
            next_cursor: output.next_cursor,
            truncated: false,
            replayed: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_unknown_id_message_names_where_valid_ids_come_from() {
        assert_eq!(
            unknown_id_message(&json!({"order_id": "ord_x", "limit": 3})).as_deref(),
            Some(
                "The order_id is unknown or outside the signed-in user's access. Take order_id \
                 from chataigne_orders_list instead of guessing it."
            )
        );
        let both = unknown_id_message(&json!({"location_id": "l", "item_id": "i"})).unwrap();
        assert!(
            both.starts_with("One of location_id, item_id is unknown"),
            "{both}"
        );
        assert!(
            both.contains("location_id from chataigne_locations_list and item_id from chataigne_catalog_items_list"),
            "{both}"
        );
        assert_eq!(unknown_id_message(&json!({"limit": 3})), None);
    }

    #[test]
    fn null_arguments_mean_absent() {
        assert_eq!(without_nulls(json!({"a": null, "b": 1})), json!({"b": 1}));
    }
}
