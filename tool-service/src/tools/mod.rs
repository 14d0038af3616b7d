//! The MCP tool catalogue. Each tool is a zero-sized type implementing
//! [`Tool`] in its own module (name, description, scope, class, typed RPC,
//! input, output and body), listed once in `catalogue!`; `tools/list`, the
//! JSON Schemas, the MCP dispatch and the typed gRPC services all derive from
//! that trait. [`Tools`] holds what the bodies need (store, access control,
//! cursor and idempotency keys) and the built catalogue.

pub mod admission;
pub mod analytics_query;
pub mod catalog_item_availability_update;
pub mod catalog_items_list;
pub mod conversation_get;
pub mod conversation_instruction_send;
pub mod conversation_message_send;
pub mod conversation_post;
pub mod conversations_list;
pub mod customer_get;
pub mod customers_list;
pub mod deadline;
pub mod discounts_list;
mod facts;
pub mod idempotency;
pub mod integrations_list;
mod location_access;
pub mod location_create;
pub mod location_get;
pub mod location_settings_get;
pub mod location_status_get;
pub mod location_status_update;
pub mod locations_list;
pub mod order_get;
pub mod order_status_update;
pub mod orders_list;
pub mod organization_create;
pub mod organizations_list;
pub mod schema;
mod support;
pub use support::DEFAULT_LIMIT;
mod tool;
pub mod views;

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use facts::{AbsentValues, Lifecycle, StateGuard, ToolFacts, WriteEffect};
pub use tool::{Answered, Catalogued, Reply, Tool};

use crate::access::{Access, Credential};
use crate::cursor::CursorCodec;
use crate::domain::{AbsentOperation, DomainError, Locale};
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
    /// Its other static facts (absent operations, effect, identifiers listed).
    pub facts: ToolFacts,
}

/// The catalogue: one line per tool, `Variant => module;`, where the module
/// holds the tool's type, named like the variant, implementing [`Tool`].
/// It generates `ToolId` (with `ALL`, `spec`, `by_name`), re-exports each
/// tool's type, the schemas of each tool and the exhaustive dispatch from a
/// name to the tool's body, all from the trait.
macro_rules! catalogue {
    ($($variant:ident => $module:ident;)*) => {
        /// Every tool, by identity; dispatch matches on it exhaustively.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ToolId { $($variant,)* }

        $(
            pub use $module::$variant;

            impl Catalogued for $variant {
                const ID: ToolId = ToolId::$variant;
            }
        )*

        impl ToolId {
            pub const ALL: &'static [ToolId] = &[$(ToolId::$variant,)*];

            pub fn spec(self) -> &'static ToolSpec {
                match self { $(ToolId::$variant => &<$variant as Tool>::SPEC,)* }
            }

            fn schemas(self) -> (Value, Value) {
                match self {
                    $(ToolId::$variant => (
                        schema::schema_of::<<$variant as Tool>::Input>(),
                        schema::output_schema_of::<<$variant as Tool>::Output>(),
                    ),)*
                }
            }
        }

        impl<S: Store, A: Access> Tools<S, A> {
            async fn dispatch(
                &self,
                id: ToolId,
                arguments: &Value,
                ctx: &CallContext,
            ) -> Result<CallResult, DomainError> {
                // Each tool's future is boxed: the states of the largest tools
                // would otherwise be copied through every layer above on
                // each call (the deadline, the runner, the gRPC handler).
                match id {
                    $(ToolId::$variant => finish(Box::pin($variant::run(self, parse(arguments)?, ctx)).await?),)*
                }
            }
        }
    };
}

catalogue! {
    OrganizationsList => organizations_list;
    LocationsList => locations_list;
    OrdersList => orders_list;
    OrderGet => order_get;
    LocationGet => location_get;
    LocationSettingsGet => location_settings_get;
    LocationStatusGet => location_status_get;
    LocationStatusUpdate => location_status_update;
    CatalogItemsList => catalog_items_list;
    CatalogItemAvailabilityUpdate => catalog_item_availability_update;
    DiscountsList => discounts_list;
    IntegrationsList => integrations_list;
    ConversationMessageSend => conversation_message_send;
    ConversationInstructionSend => conversation_instruction_send;
    OrganizationCreate => organization_create;
    LocationCreate => location_create;
    OrderStatusUpdate => order_status_update;
    CustomersList => customers_list;
    CustomerGet => customer_get;
    ConversationsList => conversations_list;
    ConversationGet => conversation_get;
    AnalyticsQuery => analytics_query;
}

impl ToolId {
    pub fn by_name(name: &str) -> Option<ToolId> {
        ToolId::ALL
            .iter()
            .copied()
            .find(|id| id.spec().name == name)
    }

    /// The limits this tool enforces, by the name of the constant that holds
    /// each: its description and input schema state exactly these numbers
    /// (checked by the catalogue tests).
    pub fn limits(self) -> Vec<(&'static str, u64)> {
        use crate::domain::{MAX_METRICS, MAX_RANGE_DAYS, OrderStatus, PREVIEW_CHARS};
        let n = |v: usize| v as u64;
        let page = vec![
            ("DEFAULT_LIMIT", u64::from(support::DEFAULT_LIMIT)),
            ("MAX_LIMIT", u64::from(support::MAX_LIMIT)),
        ];
        let key = vec![
            ("KEY_CHARS.start", n(*idempotency::KEY_CHARS.start())),
            ("KEY_CHARS.end", n(*idempotency::KEY_CHARS.end())),
        ];
        let text = vec![("MAX_TEXT_CHARS", n(conversation_post::MAX_TEXT_CHARS))];
        let with = |mut a: Vec<(&'static str, u64)>, b: Vec<(&'static str, u64)>| {
            a.extend(b);
            a
        };
        match self {
            ToolId::OrganizationsList
            | ToolId::LocationsList
            | ToolId::DiscountsList
            | ToolId::IntegrationsList => page,
            ToolId::OrdersList => with(page, vec![("OrderStatus::ALL", n(OrderStatus::ALL.len()))]),
            ToolId::CatalogItemsList => with(
                page,
                vec![("MAX_TEXT_FILTER", n(crate::domain::MAX_TEXT_FILTER))],
            ),
            ToolId::CustomersList => with(
                page,
                vec![
                    (
                        "NAME_QUERY_CHARS.start",
                        n(*customers_list::NAME_QUERY_CHARS.start()),
                    ),
                    (
                        "NAME_QUERY_CHARS.end",
                        n(*customers_list::NAME_QUERY_CHARS.end()),
                    ),
                ],
            ),
            ToolId::ConversationsList => with(
                page,
                vec![
                    ("PREVIEW_CHARS", n(PREVIEW_CHARS)),
                    (
                        "QUERY_CHARS.start",
                        n(*conversations_list::QUERY_CHARS.start()),
                    ),
                    ("QUERY_CHARS.end", n(*conversations_list::QUERY_CHARS.end())),
                ],
            ),
            ToolId::ConversationGet => vec![
                (
                    "DEFAULT_MESSAGES",
                    u64::from(conversation_get::DEFAULT_MESSAGES),
                ),
                ("MAX_MESSAGES", u64::from(conversation_get::MAX_MESSAGES)),
            ],
            ToolId::CustomerGet => vec![("RECENT_ORDERS", u64::from(customer_get::RECENT_ORDERS))],
            ToolId::AnalyticsQuery => vec![
                ("MAX_METRICS", n(MAX_METRICS)),
                ("MAX_RANGE_DAYS", MAX_RANGE_DAYS.unsigned_abs()),
            ],
            ToolId::LocationSettingsGet => vec![(
                "SettingsSection::ALL",
                n(crate::domain::SettingsSection::ALL.len()),
            )],
            ToolId::LocationStatusUpdate => vec![(
                "MAX_PAUSE_MS in days",
                (crate::domain::MAX_PAUSE_MS / 86_400_000).unsigned_abs(),
            )],
            ToolId::ConversationMessageSend | ToolId::ConversationInstructionSend => {
                with(key, text)
            }
            ToolId::OrganizationCreate => with(
                key,
                vec![("NAME_MAX_CHARS", n(organization_create::NAME_MAX_CHARS))],
            ),
            ToolId::LocationCreate => with(
                key,
                vec![
                    ("NAME_MAX_CHARS", n(location_create::NAME_MAX_CHARS)),
                    ("LINE1_MAX_CHARS", n(location_create::LINE1_MAX_CHARS)),
                    ("CITY_MAX_CHARS", n(location_create::CITY_MAX_CHARS)),
                    (
                        "POSTAL_CODE_MAX_CHARS",
                        n(location_create::POSTAL_CODE_MAX_CHARS),
                    ),
                ],
            ),
            ToolId::OrderGet
            | ToolId::LocationGet
            | ToolId::LocationStatusGet
            | ToolId::CatalogItemAvailabilityUpdate
            | ToolId::OrderStatusUpdate => Vec::new(),
        }
    }

    /// Arguments whose listed schema offers fewer values than the tool
    /// accepts: (argument, offered values). The tool answers the others
    /// itself, with a message saying what is allowed.
    pub fn offered(self) -> Vec<(&'static str, Vec<&'static str>)> {
        match self {
            ToolId::OrderStatusUpdate => order_status_update::offered(),
            _ => Vec::new(),
        }
    }
}

/// Where a failed MCP call happened, so that its message can name the next
/// call: the tool and its arguments (only their names and identifier
/// arguments are read; values are never repeated).
#[derive(Debug, Clone, Copy)]
pub struct CallSite<'a> {
    pub tool: &'static ToolSpec,
    pub arguments: &'a Value,
}

/// The guarded state of the write `tool`, and the tool that reads it.
pub fn state_source(tool: &ToolSpec) -> Option<(StateGuard, &'static ToolSpec)> {
    let effect = tool.facts.effect?;
    Some((effect.guard?, effect.read_with.spec()))
}

/// The read tool that shows the effect of the write `tool`.
pub fn write_read(tool: &ToolSpec) -> Option<&'static str> {
    tool.facts.effect.map(|effect| effect.read_with.spec().name)
}

/// The absent operation an argument of `arguments` names for `tool`, if any.
fn absent_operation(tool: &ToolSpec, arguments: &Value) -> Option<AbsentOperation> {
    tool.facts
        .absent
        .iter()
        .find(|absent| {
            arguments
                .get(absent.argument)
                .and_then(Value::as_str)
                .is_some_and(|value| absent.names(value))
        })
        .map(|absent| absent.operation)
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
    /// The language of the display strings, parsed once from the caller's tag.
    pub locale: Locale,
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

/// The server instructions of the catalogue: what its tools give access to
/// and on whose behalf. Clients add them to the model's context, so they
/// describe rather than instruct, and name no tool.
pub const INSTRUCTIONS: &str = "Chataigne restaurant operations: a restaurant's orders, \
catalog availability, location settings and status, customer conversations and analytics. \
Every read and action is performed on behalf of the signed-in restaurant staff member, limited \
to the organizations and locations of their memberships and to the scopes they consented to. \
Identifiers are opaque strings; amounts carry their currency and timestamps their UTC offset.";

/// The tools with what they need to run: store, access control, cursor keys.
pub struct Tools<S, A> {
    pub(crate) store: S,
    pub(crate) access: A,
    pub(crate) cursors: CursorCodec,
    pub(crate) idempotency: idempotency::IdempotencyKeys,
    pub(crate) admission: admission::Admission,
    catalog: Arc<Vec<CatalogEntry>>,
}

impl<S: Clone, A: Clone> Clone for Tools<S, A> {
    fn clone(&self) -> Self {
        Tools {
            store: self.store.clone(),
            access: self.access.clone(),
            cursors: self.cursors.clone(),
            idempotency: self.idempotency.clone(),
            admission: self.admission.clone(),
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
            let offered = id.offered();
            Ok(CatalogEntry {
                id,
                spec: id.spec(),
                validator: InputValidator::new(&validated, &offered)?,
                input_schema: schema::listed_input_schema(&validated, &offered),
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
            admission: admission::Admission::unlimited(),
            catalog: Arc::new(catalog),
        })
    }

    /// Admits calls per deadline class through `admission` (the configured
    /// slots of each class).
    pub fn with_admission(mut self, admission: admission::Admission) -> Self {
        self.admission = admission;
        self
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
        mut arguments: Value,
        ctx: &CallContext,
    ) -> Result<CallResult, DomainError> {
        let writes = ToolId::by_name(name).is_some_and(|id| id.spec().kind == ToolKind::Write);
        if writes {
            self.ensure_writes_enabled().await?;
        }
        self.call_past_the_switch(name, &mut arguments, ctx).await
    }

    /// [`Tools::call`] for a caller that has read the write switch itself
    /// (the gRPC runner, which gates every RPC in one place). The arguments,
    /// parsed once by the caller, are checked and read in place (top-level
    /// `null`s taken out): the schema validates them and the tool's input is
    /// read from the same value, which the caller keeps for its error
    /// messages.
    pub(crate) async fn call_past_the_switch(
        &self,
        name: &str,
        arguments: &mut Value,
        ctx: &CallContext,
    ) -> Result<CallResult, DomainError> {
        let entry = self
            .catalog
            .iter()
            .find(|entry| entry.spec.name == name)
            .ok_or_else(|| DomainError::UnknownTool(name.to_owned()))?;
        drop_nulls(arguments);
        let arguments: &Value = arguments;
        if let Some(operation) = absent_operation(entry.spec, arguments) {
            return Err(DomainError::Unavailable(operation));
        }
        entry.validator.check(arguments)?;
        self.dispatch(entry.id, arguments, ctx).await
    }
}

/// Leaves the top-level `null`s out of `arguments`: an optional argument
/// passed as `null` (as models often do) means the same as an absent one; a
/// required one is then reported missing.
fn drop_nulls(arguments: &mut Value) {
    if let Value::Object(map) = arguments {
        map.retain(|_, value| !value.is_null());
    }
}

/// The tool's input read from the validated `arguments`, in place (nothing
/// is parsed again or copied but the values the input keeps).
fn parse<T: DeserializeOwned>(arguments: &Value) -> Result<T, DomainError> {
    <T as serde::Deserialize>::deserialize(arguments).map_err(|error| {
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

/// How to find the record of an identifier argument from what people say,
/// after the message of an unknown one; empty when there is no such search.
fn id_search_hint(name: &str) -> &'static str {
    match name {
        "order_id" => {
            " To find an order by the number staff or customers give, call \
             chataigne_orders_list with number, e.g. \"PAR-261130-010\" or \"261130-010\"."
        }
        _ => "",
    }
}

/// The message of an unknown or inaccessible identifier among the
/// identifier arguments of `arguments`, naming the tool each comes from (the
/// same text whether the identifier does not exist or belongs to another
/// tenant); `None` when the call has no identifier argument.
pub fn unknown_id_message(arguments: &Value) -> Option<String> {
    let present: Vec<(&str, &str)> = ToolId::ALL
        .iter()
        .map(|tool| tool.spec())
        .flat_map(|tool| tool.facts.lists_ids.iter().map(move |id| (*id, tool.name)))
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
             instead of guessing it.{}",
            sources.join(""),
            id_search_hint(name)
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
            return Err(DomainError::OutputTooLarge {
                bytes: data_json.len(),
                limit: OUTPUT_LIMIT,
            });
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
    fn instructions_stay_short_and_declarative() {
        assert!(INSTRUCTIONS.len() < 600);
        for imperative in ["You must", "Always", "Never", "Use the", "call "] {
            assert!(!INSTRUCTIONS.contains(imperative), "{imperative}");
        }
        assert!(!INSTRUCTIONS.contains("chataigne_"), "no tool names");
    }

    #[test]
    fn an_unknown_id_message_names_where_valid_ids_come_from() {
        assert_eq!(
            unknown_id_message(&json!({"order_id": "ord_x", "limit": 3})).as_deref(),
            Some(
                "The order_id is unknown or outside the signed-in user's access. Take order_id \
                 from chataigne_orders_list instead of guessing it. To find an order by the \
                 number staff or customers give, call chataigne_orders_list with number, e.g. \
                 \"PAR-261130-010\" or \"261130-010\"."
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
        let mut arguments = json!({"a": null, "b": 1});
        drop_nulls(&mut arguments);
        assert_eq!(arguments, json!({"b": 1}));
    }
}
