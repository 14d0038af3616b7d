"""Benchmark peer: the orders listing served by a single-process server built
with the official Python MCP SDK (MCPServer, streamable HTTP, stateless, JSON
responses) from the same PostgreSQL data and with the same query as the
tool-service's `chataigne_orders_list` with a location filter.

It performs no authentication or authorization: it is the floor of what an
MCP server written with the SDK costs for this query, not a peer of the
stack's security checks.

    python peer.py --port 8765 --database-url postgres://user@127.0.0.1:5432/db
"""

import argparse
import logging
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import asyncpg
import uvicorn
from mcp.server.mcpserver import MCPServer

# The tool-service's query for one location: one index-ordered page of ids,
# then joined to the location and the customer.
ORDERS_QUERY = """
SELECT o.id, o.number, o.organization_id, o.location_id, l.name AS location_name,
       l.timezone, o.currency, o.customer_id, c.display_name AS customer_name, o.status,
       o.fulfillment, o.total_minor, o.created_at_ms, o.updated_at_ms
FROM (SELECT id, created_at_ms FROM orders WHERE location_id = $1
      ORDER BY created_at_ms DESC, id DESC LIMIT $2) AS p
JOIN orders o ON o.id = p.id
JOIN locations l ON l.id = o.location_id
JOIN customers c ON c.id = o.customer_id
ORDER BY o.created_at_ms DESC, o.id DESC
"""

SYMBOLS = {"EUR": "€", "USD": "$", "GBP": "£"}

server = MCPServer(name="python-peer", version="1.0.0")
state: dict = {}


async def pool() -> asyncpg.Pool:
    if "pool" not in state:
        state["pool"] = await asyncpg.create_pool(state["database_url"], min_size=2, max_size=16)
    return state["pool"]


def timestamp(ms: int, zone: str) -> str:
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    return moment.astimezone(ZoneInfo(zone)).isoformat(timespec="seconds")


def money(amount_minor: int, currency: str) -> dict:
    units, cents = divmod(amount_minor, 100)
    symbol = SYMBOLS.get(currency, currency)
    display = f"{symbol}{units}.{cents:02d}"
    return {"amount_minor": amount_minor, "currency": currency, "display": display}


@server.tool()
async def chataigne_orders_list(location_id: str, limit: int = 20) -> dict:
    """Lists a restaurant's orders, newest first."""
    limit = max(1, min(limit, 50))
    rows = await (await pool()).fetch(ORDERS_QUERY, location_id, limit + 1)
    orders = [
        {
            "id": row["id"],
            "number": row["number"],
            "location_id": row["location_id"],
            "location_name": row["location_name"],
            "customer_id": row["customer_id"],
            "customer_name": row["customer_name"],
            "status": row["status"],
            "fulfillment": row["fulfillment"],
            "total": money(row["total_minor"], row["currency"]),
            "created_at": timestamp(row["created_at_ms"], row["timezone"]),
            "updated_at": timestamp(row["updated_at_ms"], row["timezone"]),
        }
        for row in rows[:limit]
    ]
    return {"orders": orders}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--database-url", required=True)
    args = parser.parse_args()
    state["database_url"] = args.database_url
    logging.getLogger("mcp").setLevel(logging.WARNING)
    app = server.streamable_http_app(
        streamable_http_path="/mcp", json_response=True, stateless_http=True
    )
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
