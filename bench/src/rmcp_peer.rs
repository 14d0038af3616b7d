//! The Rust anchor of the comparison: `chataigne_orders_list` served by a
//! minimal single-process server on `rmcp` (the official Rust MCP SDK,
//! Streamable HTTP, stateless, JSON responses) with sqlx and the same SQL as
//! the tool-service (and the Python peer), page size written as a literal.
//!
//! Like the Python peer it performs no authentication or authorization: it
//! is the floor of what an SDK-built Rust MCP server costs for this query.

use std::borrow::Cow;
use std::sync::Arc;

use anyhow::Context;
use chrono::{TimeZone, Utc};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};
use sqlx::postgres::{PgPool, PgPoolOptions, PgRow};
use sqlx::{AssertSqlSafe, Row as _};

/// The tool-service's orders query for one location (see `peer.py`): one
/// index-ordered page of ids, then joined to the location and the customer.
fn orders_query(fetch: u32) -> String {
    format!(
        "SELECT o.id, o.number, o.organization_id, o.location_id, l.name AS location_name, \
         l.timezone, o.currency, o.customer_id, c.display_name AS customer_name, o.status, \
         o.fulfillment, o.total_minor, o.created_at_ms, o.updated_at_ms \
         FROM (SELECT id, created_at_ms FROM orders WHERE location_id = $1 \
               ORDER BY created_at_ms DESC, id DESC LIMIT {fetch}) AS p \
         JOIN orders o ON o.id = p.id \
         JOIN locations l ON l.id = o.location_id \
         JOIN customers c ON c.id = o.customer_id \
         ORDER BY o.created_at_ms DESC, o.id DESC"
    )
}

const TOOL: &str = "chataigne_orders_list";

/// The server: a connection pool shared by every request's handler.
#[derive(Clone)]
struct Peer {
    pool: PgPool,
    tool: Arc<Tool>,
}

impl Peer {
    async fn orders(&self, arguments: &serde_json::Map<String, Value>) -> Result<Value, ErrorData> {
        let location = arguments
            .get("location_id")
            .and_then(Value::as_str)
            .ok_or_else(|| ErrorData::invalid_params("location_id is required", None))?;
        let limit = arguments
            .get("limit")
            .and_then(Value::as_u64)
            .unwrap_or(20)
            .clamp(1, 50) as u32;
        let rows = sqlx::query(AssertSqlSafe(orders_query(limit + 1)))
            .bind(location)
            .fetch_all(&self.pool)
            .await
            .map_err(|_| ErrorData::internal_error("database error", None))?;
        let orders: Vec<Value> = rows.iter().take(limit as usize).map(order).collect();
        Ok(json!({ "orders": orders }))
    }
}

fn order(row: &PgRow) -> Value {
    let text = |column: &str| row.try_get::<String, _>(column).unwrap_or_default();
    let int = |column: &str| row.try_get::<i64, _>(column).unwrap_or_default();
    let zone = text("timezone");
    json!({
        "id": text("id"),
        "number": text("number"),
        "location_id": text("location_id"),
        "location_name": text("location_name"),
        "customer_id": text("customer_id"),
        "customer_name": text("customer_name"),
        "status": text("status"),
        "fulfillment": text("fulfillment"),
        "total": money(int("total_minor"), &text("currency")),
        "created_at": timestamp(int("created_at_ms"), &zone),
        "updated_at": timestamp(int("updated_at_ms"), &zone),
    })
}

fn money(amount_minor: i64, currency: &str) -> Value {
    let symbol = match currency {
        "EUR" => "€",
        "USD" => "$",
        "GBP" => "£",
        other => other,
    };
    let (units, cents) = (amount_minor / 100, (amount_minor % 100).abs());
    json!({
        "amount_minor": amount_minor,
        "currency": currency,
        "display": format!("{symbol}{units}.{cents:02}"),
    })
}

/// RFC 3339 in the location's time zone, to the second (UTC when unknown).
fn timestamp(ms: i64, zone: &str) -> String {
    let Some(utc) = Utc.timestamp_millis_opt(ms).single() else {
        return String::new();
    };
    match zone.parse::<chrono_tz::Tz>() {
        Ok(tz) => utc
            .with_timezone(&tz)
            .to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
        Err(_) => utc.to_rfc3339_opts(chrono::SecondsFormat::Secs, false),
    }
}

impl ServerHandler for Peer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(vec![(*self.tool).clone()]))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if request.name != TOOL {
            return Err(ErrorData::invalid_params("unknown tool", None));
        }
        let arguments = request.arguments.unwrap_or_default();
        let data = self.orders(&arguments).await?;
        Ok(CallToolResult::structured(data).into())
    }
}

fn tool() -> Tool {
    let schema = json!({
        "type": "object",
        "properties": {
            "location_id": {"type": "string"},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50},
        },
        "required": ["location_id"],
    });
    let schema = match schema {
        Value::Object(map) => map,
        _ => serde_json::Map::new(),
    };
    Tool::new(
        Cow::Borrowed(TOOL),
        Cow::Borrowed("Lists a restaurant's orders, newest first."),
        Arc::new(schema),
    )
}

/// Serves the peer on `127.0.0.1:port` at `/mcp` until the process ends.
pub async fn serve(port: u16, database_url: &str) -> anyhow::Result<()> {
    let pool = PgPoolOptions::new()
        .max_connections(16)
        .min_connections(2)
        .connect(database_url)
        .await
        .context("connecting the rmcp peer to PostgreSQL")?;
    let peer = Peer {
        pool,
        tool: Arc::new(tool()),
    };
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None)
        .with_sse_retry(None);
    let service: StreamableHttpService<Peer, NeverSessionManager> = StreamableHttpService::new(
        move || Ok(peer.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .with_context(|| format!("binding 127.0.0.1:{port}"))?;
    axum::serve(listener, app).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn money_and_timestamps_read_like_the_python_peers() {
        assert_eq!(money(1234, "EUR")["display"], "€12.34");
        assert_eq!(money(5, "CHF")["display"], "CHF0.05");
        assert_eq!(
            timestamp(1_767_225_600_000, "Europe/Paris"),
            "2026-01-01T01:00:00+01:00"
        );
        assert!(orders_query(21).contains("LIMIT 21)"));
    }
}
