//! The MCP methods the gateway knows, parsed once from the JSON-RPC message:
//! dispatch matches on them, the request log and the telemetry name them
//! (a bounded label set), and an unknown method is one variant.

/// A JSON-RPC method name, as far as the gateway knows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McpMethod {
    Initialize,
    Initialized,
    Cancelled,
    Ping,
    ToolsList,
    ToolsCall,
    /// `server/discover` (MCP 2026-07-28).
    ServerDiscover,
    ResourcesList,
    ResourcesRead,
    /// Any other method: answered "method not found", logged as `other`.
    Other,
}

impl McpMethod {
    /// Every known method, `Other` excepted.
    const KNOWN: [McpMethod; 9] = [
        McpMethod::Initialize,
        McpMethod::Initialized,
        McpMethod::Cancelled,
        McpMethod::Ping,
        McpMethod::ToolsList,
        McpMethod::ToolsCall,
        McpMethod::ServerDiscover,
        McpMethod::ResourcesList,
        McpMethod::ResourcesRead,
    ];

    /// The method named `name` on the wire.
    pub fn parse(name: &str) -> McpMethod {
        McpMethod::KNOWN
            .into_iter()
            .find(|known| known.name() == name)
            .unwrap_or(McpMethod::Other)
    }

    /// The wire name; `other` for an unknown method (a bounded label).
    pub fn name(self) -> &'static str {
        match self {
            McpMethod::Initialize => "initialize",
            McpMethod::Initialized => "notifications/initialized",
            McpMethod::Cancelled => "notifications/cancelled",
            McpMethod::Ping => "ping",
            McpMethod::ToolsList => "tools/list",
            McpMethod::ToolsCall => "tools/call",
            McpMethod::ServerDiscover => "server/discover",
            McpMethod::ResourcesList => "resources/list",
            McpMethod::ResourcesRead => "resources/read",
            McpMethod::Other => "other",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_round_trip_and_the_rest_is_other() {
        for method in McpMethod::KNOWN {
            assert_eq!(McpMethod::parse(method.name()), method);
        }
        assert_eq!(McpMethod::parse("resources/subscribe"), McpMethod::Other);
        assert_eq!(McpMethod::parse("other"), McpMethod::Other);
        assert_eq!(McpMethod::parse("Tools/Call"), McpMethod::Other);
    }
}
