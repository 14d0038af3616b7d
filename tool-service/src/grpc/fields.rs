//! How a typed service is declared, once per service: `typed_service!`
//! lists each RPC with its request, the tool it runs (whose kind and scope
//! are the RPC's), its response and the request fields it must carry, and
//! generates the service, whose every method is the runner running that
//! tool. The runner checks the fields before any authorization and refuses
//! empty ones with `INVALID_ARGUMENT` and a `BadRequest` violation per field.

use crate::tools::Tool;

/// What the runner needs to know about a typed request.
pub(super) trait TypedRequest: Send + 'static {
    /// The caller's locale for display strings, possibly empty.
    fn locale(&self) -> &str;
    /// The required fields left empty, in declaration order.
    fn missing(&self) -> Vec<&'static str>;
}

/// A tool served by a typed RPC: the request it is called with and the
/// response it answers (declared by `typed_service!`, never by hand).
pub(super) trait TypedRpc: Tool {
    type Request: TypedRequest;
    type Response: Send + 'static;
}

/// A field value that protobuf cannot distinguish from "not sent".
pub(super) trait Unset {
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

/// Declares one typed service:
///
/// ```text
/// typed_service! {
///     /// doc
///     Service serves module::Trait {
///         method: Request => Tool -> Response { required, fields };
///     }
/// }
/// ```
///
/// It generates the service type (built with `new(tools)`), the
/// [`TypedRequest`] of each request, the [`TypedRpc`] of each tool and the
/// server trait's methods, each of which is `runner.run::<Tool>(request)`:
/// a typed RPC cannot skip the credential, the deadline, the write switch,
/// the required fields or the error mapping. The tool's input converts from
/// the request (`TryFrom`), the response from its answer (`From`); `DECLARED`
/// lists (request, tool, required fields) for the tests.
macro_rules! typed_service {
    (
        $(#[$meta:meta])*
        $service:ident serves $server:ident :: $rpc_trait:ident {
            $($method:ident : $request:ident => $tool:ident -> $response:ident { $($field:ident),* };)*
        }
    ) => {
        $(#[$meta])*
        pub struct $service<S, A> {
            runner: $crate::grpc::runner::Runner<S, A>,
        }

        impl<S, A> $service<S, A> {
            pub fn new(tools: $crate::tools::Tools<S, A>) -> Self {
                $service {
                    runner: $crate::grpc::runner::Runner::new(tools),
                }
            }
        }

        $(
            impl $crate::grpc::fields::TypedRequest for ::chataigne_proto::tools::v1::$request {
                fn locale(&self) -> &str {
                    &self.locale
                }
                fn missing(&self) -> Vec<&'static str> {
                    #[allow(unused_imports)]
                    use $crate::grpc::fields::Unset as _;
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

            impl $crate::grpc::fields::TypedRpc for $crate::tools::$tool {
                type Request = ::chataigne_proto::tools::v1::$request;
                type Response = ::chataigne_proto::tools::v1::$response;
            }
        )*

        #[::tonic::async_trait]
        impl<S: $crate::store::Store, A: $crate::access::Access>
            ::chataigne_proto::tools::v1::$server::$rpc_trait for $service<S, A>
        {
            $(
                async fn $method(
                    &self,
                    request: ::tonic::Request<::chataigne_proto::tools::v1::$request>,
                ) -> Result<
                    ::tonic::Response<::chataigne_proto::tools::v1::$response>,
                    ::tonic::Status,
                > {
                    self.runner.run::<$crate::tools::$tool>(request).await
                }
            )*
        }

        /// Every typed request of this service: (request message, tool,
        /// required fields).
        #[cfg(test)]
        pub(super) const DECLARED: &[(&str, $crate::tools::ToolId, &[&str])] = &[
            $((
                stringify!($request),
                <$crate::tools::$tool as $crate::tools::Catalogued>::ID,
                &[$(stringify!($field)),*],
            ),)*
        ];
    };
}

pub(super) use typed_service;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::collections::BTreeMap;

    use prost::Message;
    use prost_types::FileDescriptorSet;

    use crate::grpc::{
        analytics, catalog_items, conversation_writes, conversations, customers, locations,
        order_updates, provisioning, restaurant,
    };
    use crate::tools::{ToolId, ToolKind, build_catalog};

    type Declared = &'static [(&'static str, ToolId, &'static [&'static str])];

    /// Each typed service's declarations, with the source of its file (whose
    /// module documentation holds the table of its RPCs).
    const SERVICES: &[(&str, Declared)] = &[
        (include_str!("restaurant.rs"), restaurant::DECLARED),
        (include_str!("locations.rs"), locations::DECLARED),
        (include_str!("catalog_items.rs"), catalog_items::DECLARED),
        (include_str!("order_updates.rs"), order_updates::DECLARED),
        (include_str!("customers.rs"), customers::DECLARED),
        (include_str!("conversations.rs"), conversations::DECLARED),
        (include_str!("analytics.rs"), analytics::DECLARED),
        (
            include_str!("conversation_writes.rs"),
            conversation_writes::DECLARED,
        ),
        (include_str!("provisioning.rs"), provisioning::DECLARED),
    ];

    /// Every declared typed request: (request message, tool, required fields).
    fn declared() -> impl Iterator<Item = (&'static str, ToolId, &'static [&'static str])> {
        SERVICES
            .iter()
            .flat_map(|(_, declared)| declared.iter().copied())
    }

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
        let mut by_rpc = BTreeMap::new();
        for (request, tool, required) in declared() {
            let rpc = tool.spec().rpc;
            assert!(
                by_rpc.insert(rpc, request).is_none(),
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
                by_rpc.contains_key(rpc.as_str()),
                "{rpc} is not declared by a typed_service!: every RPC runs through the runner \
                 with a declared tool (kind, scope) and required fields"
            );
        }
    }

    /// The fields the MCP tool's input schema requires are required in the
    /// typed request too, wherever the request carries them.
    #[test]
    fn required_fields_follow_the_tools_input_schemas() {
        let rpcs = typed_rpcs();
        let catalog = build_catalog().unwrap();
        for (request, tool, required) in declared() {
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

    /// The table of each service file says what its declarations say.
    #[test]
    fn the_documented_tables_match_the_declarations() {
        for &(source, declared) in SERVICES {
            for &(_, tool, required) in declared {
                let spec = tool.spec();
                let short = spec.rpc.strip_prefix("chataigne.tools.v1.").unwrap();
                let row = source
                    .lines()
                    .take_while(|line| line.starts_with("//!"))
                    .find(|line| line.contains(&format!("`{short}`")))
                    .unwrap_or_else(|| panic!("{short} has no row in its service's table"));
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
}
