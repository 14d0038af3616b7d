#!/usr/bin/env python3
"""Runs a plan of MCP tool calls with the official Python MCP SDK (1.x or 2.x).

  python sdk_session.py < plan.json > report.json

The plan is one JSON document:

  {"url": "<MCP endpoint>",
   "timeout": 60,
   "sessions": [{"name": "manager", "token": "<bearer token>",
                 "steps": [{"id": "orders", "tool": "<tool name>", "arguments": {...}}, ...]}]}

Each session is one SDK `ClientSession` over Streamable HTTP: initialize,
tools/list, then every step in order. A string argument of the exact form
"${STEP:/json/pointer}" is replaced by the value at that RFC 6901 pointer in
the `structuredContent` of the earlier step STEP of the same session, so
identifiers can come from earlier list results.

The report (stdout) is one JSON document:

  {"sdk": "...", "sessions": [{"name", "protocolVersion", "serverInfo",
   "tools": [...], "calls": [{"id", "tool", "arguments", "result"} |
   {"id", "tool", "error"}]}], "error"?: "..."}

A call the SDK rejects (for instance a `structuredContent` that does not
validate against the listed `outputSchema`) is reported with "error". Exit
code 0 when every session ran, 1 on a transport or protocol failure.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from importlib.metadata import version as dist_version
from typing import Any

REFERENCE = re.compile(r"^\$\{([A-Za-z0-9_\-]+):(/[^}]*)\}$")


def dump(model: Any) -> Any:
    """A pydantic model as the JSON the server sent."""
    if model is None:
        return None
    if hasattr(model, "model_dump"):
        return model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return model


def attr(obj: Any, snake: str, camel: str) -> Any:
    """mcp 2.x uses snake_case model attributes, mcp 1.x camelCase."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel, None)


def pointer(document: Any, path: str) -> Any:
    """The value at RFC 6901 `path` in `document`; KeyError when absent."""
    current = document
    for raw in path.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(current, list):
            current = current[int(token)]
        elif isinstance(current, dict):
            current = current[token]
        else:
            raise KeyError(path)
    return current


def resolve(value: Any, results: dict[str, Any]) -> Any:
    """`value` with every "${STEP:/pointer}" string replaced."""
    if isinstance(value, dict):
        return {k: resolve(v, results) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, results) for v in value]
    if isinstance(value, str):
        match = REFERENCE.match(value)
        if match:
            step, path = match.groups()
            if step not in results:
                raise KeyError(f"no result of step {step!r}")
            return pointer(results[step], path)
    return value


def exception_text(exc: BaseException) -> str:
    """Flattens exception groups (anyio task groups) into one message."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(exception_text(e) for e in exc.exceptions)
    return f"{exc.__class__.__name__}: {exc}"


def open_transport(url: str, headers: dict[str, str]):
    """The SDK's Streamable HTTP transport (and the HTTP client to close on 2.x)."""
    try:  # mcp >= 2: the transport takes a preconfigured httpx2 client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        client = create_mcp_http_client(headers=headers)
        return client, streamable_http_client(url, http_client=client)
    except ImportError:  # mcp 1.x
        from mcp.client.streamable_http import streamablehttp_client

        return None, streamablehttp_client(url, headers=headers)


async def run_session(url: str, timeout: float, session_plan: dict[str, Any]) -> dict[str, Any]:
    from mcp import ClientSession

    report: dict[str, Any] = {"name": session_plan.get("name"), "calls": []}
    headers = {"Authorization": f"Bearer {session_plan['token']}"}
    client, transport = open_transport(url, headers)
    if client is not None:
        await client.__aenter__()
    try:
        async with transport as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write) as session:
                init = await asyncio.wait_for(session.initialize(), timeout)
                report["protocolVersion"] = attr(init, "protocol_version", "protocolVersion")
                report["serverInfo"] = dump(attr(init, "server_info", "serverInfo"))
                listed = await asyncio.wait_for(session.list_tools(), timeout)
                report["tools"] = [dump(tool) for tool in listed.tools]
                results: dict[str, Any] = {}
                for step in session_plan.get("steps", []):
                    call: dict[str, Any] = {"id": step["id"], "tool": step["tool"]}
                    report["calls"].append(call)
                    try:
                        arguments = resolve(step.get("arguments", {}), results)
                        call["arguments"] = arguments
                        result = await asyncio.wait_for(session.call_tool(step["tool"], arguments), timeout)
                    except Exception as exc:  # noqa: BLE001 - reported, the test decides
                        call["error"] = exception_text(exc)
                        continue
                    call["result"] = dump(result)
                    structured = attr(result, "structured_content", "structuredContent")
                    if structured is not None:
                        results[step["id"]] = structured
    finally:
        if client is not None:
            await client.__aexit__(None, None, None)
    return report


async def main() -> int:
    plan = json.load(sys.stdin)
    out: dict[str, Any] = {"sdk": f"mcp {dist_version('mcp')}", "sessions": []}
    code = 0
    try:
        for session_plan in plan["sessions"]:
            out["sessions"].append(await run_session(plan["url"], float(plan.get("timeout", 60)), session_plan))
    except Exception as exc:  # noqa: BLE001 - report everything as JSON
        out["error"] = exception_text(exc)
        code = 1
    print(json.dumps(out, ensure_ascii=False))
    return code


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
