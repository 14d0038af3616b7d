//! The MCP Apps views (extension `io.modelcontextprotocol/ui`): one
//! self-contained HTML document per view, served as a `ui://chataigne/…`
//! resource beside the tools and linked from the tools whose results it shows
//! (`ToolFacts::view`). A host renders it in a sandboxed frame and hands it the
//! tool's result; the view calls tools back through the host.
//!
//! The documents are plain HTML, CSS and JavaScript in `tool-service/views/`,
//! with no build step: the catalogue inlines the shared parts (`bridge.js`,
//! the view side of the protocol; `base.css`) and the labels of the tool
//! results (`domain::labels`) into each document once, at start-up. Every
//! document only runs its inline script and style and reaches no network
//! (seed 004: no external script, `'unsafe-inline'` is all it needs), so its
//! declared CSP lists no origin at all; its bytes are the same for every
//! caller (the platform fetches it once, at ingestion).

use serde_json::{Map, Value, json};

use crate::domain::OrderStatus;
use crate::domain::labels::all_labels;

/// The MIME type of an MCP Apps HTML view.
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// One view: its resource identity and its source document.
#[derive(Debug)]
pub struct View {
    /// `ui://chataigne/…`.
    pub uri: &'static str,
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// The document with its placeholders (see [`View::document`]).
    source: &'static str,
}

/// The view side of the MCP Apps protocol, shared by every view.
const BRIDGE: &str = include_str!("../../views/bridge.js");
/// The styles every view shares.
const BASE_STYLE: &str = include_str!("../../views/base.css");

/// Where each shared part goes in a view's source.
const STYLE_SLOT: &str = "/*@style@*/";
const BRIDGE_SLOT: &str = "/*@bridge@*/";
const CATALOGUE_SLOT: &str = "/*@catalogue@*/null";

/// The order board, for `chataigne_orders_list`.
pub const ORDER_BOARD: View = View {
    uri: "ui://chataigne/order-board",
    name: "order_board",
    title: "Order board",
    description: "The listed orders grouped by status, each with its number, customer, total \
and age, and a button that moves it to its next status (only from the status shown).",
    source: include_str!("../../views/order-board.html"),
};

/// The conversation, for `chataigne_conversation_get`.
pub const CONVERSATION: View = View {
    uri: "ui://chataigne/conversation",
    name: "conversation",
    title: "Conversation",
    description: "A conversation's transcript with a reply box; a reply is sent once, even \
when it is sent again after a lost answer.",
    source: include_str!("../../views/conversation.html"),
};

/// The analytics chart, for `chataigne_analytics_query`.
pub const ANALYTICS_CHART: View = View {
    uri: "ui://chataigne/analytics-chart",
    name: "analytics_chart",
    title: "Analytics chart",
    description: "The requested metrics per day, week or month as bar charts, with their \
units and the location's currency, and the figures as a table.",
    source: include_str!("../../views/analytics-chart.html"),
};

impl View {
    /// The document as served: the shared style and script and the
    /// catalogue's labels inlined. Depends on nothing but the catalogue.
    pub fn document(&self) -> String {
        // `<` is escaped so that no value can close the script element.
        let catalogue = view_catalogue().to_string().replace('<', "\\u003c");
        self.source
            .replacen(STYLE_SLOT, BASE_STYLE, 1)
            .replacen(BRIDGE_SLOT, BRIDGE, 1)
            .replacen(CATALOGUE_SLOT, &catalogue, 1)
    }

    /// The resource's `_meta`: its content security policy lists no origin
    /// (inline script and style only, no network), and it asks for a border.
    pub fn meta(&self) -> Value {
        json!({
            "ui": {
                "csp": {
                    "connectDomains": [],
                    "resourceDomains": [],
                },
                "prefersBorder": true,
            }
        })
    }
}

/// What every view knows of the catalogue: the labels of each labelled type
/// by wire value (`{type: {value: {en, fr}}}`), and each order status's
/// next forward steps.
fn view_catalogue() -> Value {
    let mut labels: Map<String, Value> = Map::new();
    for (ty, wire, en, fr) in all_labels() {
        let by_value = labels
            .entry(ty.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(by_value) = by_value {
            by_value.insert(wire.to_owned(), json!({"en": en, "fr": fr}));
        }
    }
    let steps: Map<String, Value> = OrderStatus::ALL
        .iter()
        .map(|from| {
            let next: Vec<&str> = OrderStatus::ALL
                .iter()
                .filter(|to| from.can_step_to(**to))
                .map(|to| to.as_str())
                .collect();
            (from.as_str().to_owned(), json!(next))
        })
        .collect();
    json!({"labels": labels, "order_steps": steps})
}

/// A view as served: identity, document and `_meta`.
#[derive(Debug, Clone, PartialEq)]
pub struct BuiltView {
    pub uri: &'static str,
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub mime_type: &'static str,
    pub text: String,
    pub meta: Value,
}

/// Every view some tool of `views` links to, once each, in that order.
pub fn build<'a>(views: impl IntoIterator<Item = &'a View>) -> Vec<BuiltView> {
    let mut built: Vec<BuiltView> = Vec::new();
    for view in views {
        if built.iter().any(|b| b.uri == view.uri) {
            continue;
        }
        built.push(BuiltView {
            uri: view.uri,
            name: view.name,
            title: view.title,
            description: view.description,
            mime_type: MIME_TYPE,
            text: view.document(),
            meta: view.meta(),
        });
    }
    built
}

#[cfg(test)]
mod tests {
    //! Seed 004's constraints on UI resources, checked on the resources the
    //! catalogue serves.

    use super::*;
    use crate::tools::ToolId;

    /// The views as the catalogue serves them.
    fn served() -> Vec<BuiltView> {
        build(ToolId::ALL.iter().filter_map(|id| id.spec().facts.view))
    }

    /// The inline scripts of a document.
    fn scripts(text: &str) -> Vec<&str> {
        text.split("<script")
            .skip(1)
            .filter_map(|rest| rest.split_once("</script>").map(|(script, _)| script))
            .collect()
    }

    #[test]
    fn each_view_is_linked_once_and_every_tool_link_resolves() {
        let served = served();
        let uris: Vec<&str> = served.iter().map(|v| v.uri).collect();
        assert_eq!(
            uris,
            [
                "ui://chataigne/order-board",
                "ui://chataigne/conversation",
                "ui://chataigne/analytics-chart",
            ]
        );
        let linked = |id: ToolId| id.spec().facts.view.map(|v| v.uri);
        assert_eq!(linked(ToolId::OrdersList), Some(ORDER_BOARD.uri));
        assert_eq!(linked(ToolId::ConversationGet), Some(CONVERSATION.uri));
        assert_eq!(linked(ToolId::AnalyticsQuery), Some(ANALYTICS_CHART.uri));
        for view in &served {
            assert!(view.uri.starts_with("ui://chataigne/"), "{}", view.uri);
        }
    }

    #[test]
    fn sizes_stay_within_fifteen_megabytes_each_and_a_hundred_in_all() {
        let served = served();
        let mut all = 0;
        for view in &served {
            assert!(view.text.len() <= 15 * 1024 * 1024, "{}", view.uri);
            all += view.text.len();
        }
        assert!(all <= 100 * 1024 * 1024);
        // And well below: a view that grew by orders of magnitude has a bug.
        assert!(all < 256 * 1024, "{all} bytes");
    }

    #[test]
    fn the_mime_type_is_exactly_one_the_platform_accepts() {
        const ACCEPTED: [&str; 4] = [
            "text/html",
            "text/javascript",
            "text/css",
            "text/html;profile=mcp-app",
        ];
        for view in served() {
            assert_eq!(
                ACCEPTED.iter().filter(|m| **m == view.mime_type).count(),
                1,
                "{}",
                view.uri
            );
            assert_eq!(view.mime_type, MIME_TYPE);
        }
    }

    #[test]
    fn every_script_and_style_is_inline_and_nothing_is_loaded_from_anywhere() {
        for view in served() {
            let text = &view.text;
            assert!(text.starts_with("<!DOCTYPE html>"), "{}", view.uri);
            // Every placeholder was filled.
            assert!(!text.contains("/*@"), "{}", view.uri);
            let lower = text.to_ascii_lowercase();
            for loading in [
                " src=", " href=", "srcset=", "url(", "@import", "<link", "<iframe", "<object",
                "<embed", "<img", "<base", "http://", "https://", "//cdn",
            ] {
                // The SVG namespace is a name, not a location the browser loads.
                let hits = lower.matches(loading).count();
                let namespace = if loading == "http://" {
                    lower.matches("http://www.w3.org/2000/svg").count()
                } else {
                    0
                };
                assert_eq!(hits, namespace, "{} loads with {loading:?}", view.uri);
            }
            let scripts = scripts(text);
            assert_eq!(scripts.len(), 1, "{}: one inline script", view.uri);
            for script in scripts {
                assert!(script.starts_with('>'), "{}: no attributes", view.uri);
            }
        }
    }

    #[test]
    fn no_view_reaches_the_network() {
        for view in served() {
            for script in scripts(&view.text) {
                for api in [
                    "fetch(",
                    "XMLHttpRequest",
                    "WebSocket",
                    "EventSource",
                    "sendBeacon",
                    "import(",
                    "Worker(",
                    "RTCPeerConnection",
                    "window.open",
                    "location.href",
                    "eval(",
                    "Function(",
                ] {
                    assert!(!script.contains(api), "{} uses {api}", view.uri);
                }
            }
            let csp = &view.meta["ui"]["csp"];
            assert_eq!(csp["connectDomains"], json!([]), "{}", view.uri);
        }
    }

    #[test]
    fn the_declared_csp_is_exactly_what_the_document_uses() {
        for view in served() {
            // Inline script and style and nothing from anywhere (checked
            // above): no origin to declare for any directive, no permission.
            assert_eq!(
                view.meta,
                json!({"ui": {"csp": {"connectDomains": [], "resourceDomains": []}, "prefersBorder": true}}),
                "{}",
                view.uri
            );
            assert!(view.text.contains("<style>"), "{}", view.uri);
        }
    }

    #[test]
    fn the_bytes_do_not_depend_on_the_caller_or_the_moment() {
        let first = served();
        let second = served();
        assert_eq!(first, second);
        // Nothing of a caller (no locale picked, no time): both languages'
        // labels are in, and the view picks one from the host's context.
        for view in &first {
            assert!(view.text.contains("\"fr\":\"reçue\""), "{}", view.uri);
            assert!(view.text.contains("\"en\":\"received\""), "{}", view.uri);
        }
    }

    #[test]
    fn the_views_show_the_labels_of_the_tool_results() {
        let catalogue = view_catalogue();
        for (ty, wire, en, fr) in all_labels() {
            assert_eq!(catalogue["labels"][ty][wire], json!({"en": en, "fr": fr}));
        }
        assert_eq!(
            catalogue["order_steps"]["ready"],
            json!(["out_for_delivery", "completed"])
        );
        assert_eq!(catalogue["order_steps"]["completed"], json!([]));
    }
}
