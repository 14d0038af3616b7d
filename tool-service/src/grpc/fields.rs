//! Each typed request's declaration, once: the tool it runs (whose kind and
//! scope are the RPC's) and the fields it must carry. The runner checks the
//! fields before any authorization and refuses empty ones with
//! `INVALID_ARGUMENT` and a `BadRequest` violation per field.

use chataigne_proto::tools::v1 as pb;

use crate::tools::ToolId;

/// What the runner needs to know about a typed request.
pub(super) trait TypedRequest: Send + 'static {
    /// The tool this RPC runs; its kind (read or write, so the write switch
    /// and the deadline's error), its scope and its RPC name are the RPC's.
    const TOOL: ToolId;
    /// The caller's locale for display strings, possibly empty.
    fn locale(&self) -> &str;
    /// The required fields left empty, in declaration order.
    fn missing(&self) -> Vec<&'static str>;
}

/// A field value that protobuf cannot distinguish from "not sent".
trait Unset {
    fn is_unset(&self) -> bool;
}

impl Unset for String {
    fn is_unset(&self) -> bool {
        self.is_empty()
    }
}

/// An enum field: 0 is each enum's `*_UNSPECIFIED`.
impl Unset for i32 {
    fn is_unset(&self) -> bool {
        *self == 0
    }
}

impl<T> Unset for Vec<T> {
    fn is_unset(&self) -> bool {
        self.is_empty()
    }
}

/// `Request => Tool { required fields };` for every typed request, plus the
/// list of declarations the tests and the documentation table check.
macro_rules! typed_requests {
    ($($request:ident => $tool:ident { $($field:ident),* };)*) => {
        $(
            impl TypedRequest for pb::$request {
                const TOOL: ToolId = ToolId::$tool;
                fn locale(&self) -> &str {
                    &self.locale
                }
                fn missing(&self) -> Vec<&'static str> {
                    #[allow(unused_mut)]
                    let mut missing = Vec::new();
                    $(
                        if self.$field.is_unset() {
                            missing.push(stringify!($field));
                        }
                    )*
                    missing
                }
            }
        )*

        /// Every typed request: (request message, tool, required fields).
        #[cfg(test)]
        pub(super) const DECLARED: &[(&str, ToolId, &[&str])] = &[
            $((stringify!($request), ToolId::$tool, &[$(stringify!($field)),*]),)*
        ];
    };
}

typed_requests! {
    ListOrganizationsRequest => OrganizationsList {};
    ListLocationsRequest => LocationsList { organization_id };
    ListOrdersRequest => OrdersList {};
    GetOrderRequest => OrderGet { order_id };
    GetLocationRequest => LocationGet { location_id };
    GetLocationSettingsRequest => LocationSettingsGet { location_id, sections };
    GetLocationStatusRequest => LocationStatusGet { location_id };
    UpdateLocationStatusRequest => LocationStatusUpdate { location_id, status, expected_status };
    ListDiscountsRequest => DiscountsList { location_id };
    ListIntegrationsRequest => IntegrationsList { location_id };
    ListCatalogItemsRequest => CatalogItemsList { location_id };
    UpdateCatalogItemAvailabilityRequest => CatalogItemAvailabilityUpdate {
        item_id, availability, expected_availability
    };
    UpdateOrderStatusRequest => OrderStatusUpdate { order_id, status, expected_status };
    ListCustomersRequest => CustomersList { organization_id };
    GetCustomerRequest => CustomerGet { customer_id };
    ListConversationsRequest => ConversationsList { location_id };
    GetConversationRequest => ConversationGet { conversation_id };
    QueryAnalyticsRequest => AnalyticsQuery { location_id, metrics, date_from, date_to };
    SendMessageRequest => ConversationMessageSend { conversation_id, text, idempotency_key };
    SendInstructionRequest => ConversationInstructionSend {
        conversation_id, text, idempotency_key
    };
    CreateOrganizationRequest => OrganizationCreate { name, idempotency_key };
    CreateLocationRequest => LocationCreate {
        organization_id, name, line1, city, postal_code, country, timezone, currency,
        idempotency_key
    };
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::collections::BTreeMap;

    use prost::Message;
    use prost_types::FileDescriptorSet;

    use super::DECLARED;
    use crate::tools::{ToolKind, build_catalog};

    const PACKAGE: &str = "chataigne.tools.v1";
    /// The MCP bridge: its calls run through the runner by the called tool.
    const BRIDGE: &str = "ToolCatalog";

    /// Every typed RPC of the contracts → (its request message, the fields of
    /// that message).
    fn typed_rpcs() -> BTreeMap<String, (String, Vec<String>)> {
        let set = FileDescriptorSet::decode(chataigne_proto::FILE_DESCRIPTOR_SET).unwrap();
        let mut messages = BTreeMap::new();
        for file in &set.file {
            if file.package() != PACKAGE {
                continue;
            }
            for message in &file.message_type {
                let fields = message.field.iter().map(|f| f.name().to_owned()).collect();
                messages.insert(format!(".{PACKAGE}.{}", message.name()), fields);
            }
        }
        let mut rpcs = BTreeMap::new();
        for file in set.file.iter().filter(|f| f.package() == PACKAGE) {
            for service in file.service.iter().filter(|s| s.name() != BRIDGE) {
                for method in &service.method {
                    let input = method.input_type().to_owned();
                    let fields: Vec<String> = messages.get(&input).cloned().unwrap_or_default();
                    let name = input.rsplit('.').next().unwrap_or_default().to_owned();
                    rpcs.insert(
                        format!("{PACKAGE}.{}/{}", service.name(), method.name()),
                        (name, fields),
                    );
                }
            }
        }
        rpcs
    }

    #[test]
    fn every_typed_rpc_is_declared_once_with_its_request_tool_and_existing_fields() {
        let rpcs = typed_rpcs();
        assert!(rpcs.len() >= 20, "the contracts were read: {rpcs:?}");
        let mut declared = BTreeMap::new();
        for &(request, tool, required) in DECLARED {
            let rpc = tool.spec().rpc;
            assert!(
                declared.insert(rpc, request).is_none(),
                "{rpc} is declared twice"
            );
            let (message, fields) = rpcs
                .get(rpc)
                .unwrap_or_else(|| panic!("{request} runs {rpc}, which is not a typed RPC"));
            assert_eq!(message, request, "{rpc} takes {message}");
            for field in required {
                assert!(
                    fields.iter().any(|f| f == field),
                    "{request} has no {field}"
                );
            }
            assert!(fields.iter().any(|f| f == "locale"), "{request}.locale");
        }
        for rpc in rpcs.keys() {
            assert!(
                declared.contains_key(rpc.as_str()),
                "{rpc} is not declared in fields.rs: every RPC runs through the runner with a \
                 declared tool (kind, scope) and required fields"
            );
        }
    }

    /// The fields the MCP tool's input schema requires are required in the
    /// typed request too, wherever the request carries them.
    #[test]
    fn required_fields_follow_the_tools_input_schemas() {
        let rpcs = typed_rpcs();
        let catalog = build_catalog().unwrap();
        for &(request, tool, required) in DECLARED {
            let entry = catalog.iter().find(|e| e.id == tool).unwrap();
            let (_, fields) = &rpcs[tool.spec().rpc];
            let schema_required: Vec<&str> = entry.input_schema["required"]
                .as_array()
                .map(|names| names.iter().filter_map(|n| n.as_str()).collect())
                .unwrap_or_default();
            for name in schema_required {
                if fields.iter().any(|f| f == name) {
                    assert!(
                        required.contains(&name),
                        "{request}.{name} is required by {}",
                        entry.spec.name
                    );
                }
            }
        }
    }

    /// The table of `grpc/mod.rs` says what the declarations say.
    #[test]
    fn the_documented_table_matches_the_declarations() {
        let doc = include_str!("mod.rs");
        for &(_, tool, required) in DECLARED {
            let spec = tool.spec();
            let short = spec.rpc.strip_prefix("chataigne.tools.v1.").unwrap();
            let row = doc
                .lines()
                .find(|line| line.contains(&format!("`{short}`")))
                .unwrap_or_else(|| panic!("{short} has no row in grpc/mod.rs"));
            let cells: Vec<&str> = row.split('|').map(str::trim).collect();
            let kind = match spec.kind {
                ToolKind::Read => "read",
                ToolKind::Write => "write",
            };
            let fields = if required.is_empty() {
                "—".to_owned()
            } else {
                required.join(", ")
            };
            assert_eq!(cells[2..5], [kind, spec.scope, fields.as_str()], "{row}");
        }
    }
}
