"""Benchmark peer: the orders listing served by a server built with the
official Python MCP SDK (MCPServer, streamable HTTP, stateless, JSON
responses) from the same PostgreSQL data and with the same query as the
tool-service's `chataigne_orders_list` with a location filter. It runs one
worker process per core by default (`--workers`), so that the interpreter's
single core per process does not cap it below the machine.

It performs no authentication or authorization: it is the floor of what an
MCP server written with the SDK costs for this query, not a peer of the
stack's security checks.

    python peer.py --port 8765 --database-url postgres://user@127.0.0.1:5432/db
"""

import argparse
import logging
import os
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

import asyncpg
import uvicorn
from mcp.server.mcpserver import MCPServer

# The tool-service's query for one location: one index-ordered page of ids,
# then joined to the location and the customer. The page size is written into
# the text as the tool-service does (a bound LIMIT is planned at every call).
ORDERS_QUERY = """
SELECT o.id, o.number, o.organization_id, o.location_id, l.name AS location_name,
       l.timezone, o.currency, o.customer_id, c.display_name AS customer_name, o.status,
       o.fulfillment, o.total_minor, o.created_at_ms, o.updated_at_ms
FROM (SELECT id, created_at_ms FROM orders WHERE location_id = $1
      ORDER BY created_at_ms DESC, id DESC LIMIT {fetch}) AS p
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
    rows = await (await pool()).fetch(ORDERS_QUERY.format(fetch=limit + 1), location_id)
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


def create_app():
    """The ASGI app of one worker process (uvicorn's factory)."""
    state["database_url"] = os.environ["CHATAIGNE_PEER_DATABASE_URL"]
    logging.getLogger("mcp").setLevel(logging.WARNING)
    return server.streamable_http_app(
        streamable_http_path="/mcp", json_response=True, stateless_http=True
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    # Worker processes read it from the environment they inherit.
    os.environ["CHATAIGNE_PEER_DATABASE_URL"] = args.database_url
    uvicorn.run(
        "peer:create_app",
        factory=True,
        app_dir=os.path.dirname(os.path.abspath(__file__)),
        host="127.0.0.1",
        port=args.port,
        workers=max(1, args.workers),
        log_level="warning",
        access_log=False,
    )


if __name__ == "__main__":
    main()
