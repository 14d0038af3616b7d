#!/usr/bin/env python3
"""Runs a plan of MCP tool calls with the official Python MCP SDK (2.x or 1.x).

  python sdk_session.py < plan.json > report.json

The plan (the same for ts_session.mjs and inspector_session.mjs):

  {"url": "<MCP endpoint>",
   "timeout": 60,
   "protocolVersion": "2025-06-18",            (optional: the version offered
                                                in initialize; default the SDK's)
   "sessions": [{"name": "manager", "token": "<bearer token>",
                 "steps": [{"id": "orders", "tool": "<tool name>",
                            "arguments": {...}}, ...]}]}

Each session is one SDK `ClientSession` over Streamable HTTP: initialize,
tools/list, then every step in order. A string argument of the exact form
"${STEP:/json/pointer}" is replaced by the value at that RFC 6901 pointer in
the result of the earlier step STEP of the same session: in its
`structuredContent` when it has one, else in the JSON object parsed from its
first text block that holds a JSON object with a "data" member (a result that
carries its payload only as text).

The report (stdout) is one JSON document:

  {"sdk": "mcp 2.3.0", "sessions": [{"name", "protocolVersion", "serverInfo",
   "tools": [...], "calls": [{"id", "tool", "arguments", "result"} |
   {"id", "tool", "arguments"?, "error", "rpc_error"?}]}], "error"?: "..."}

A call the SDK raised on (a JSON-RPC error response, or a result the SDK
rejects, such as a `structuredContent` that does not validate against the
listed `outputSchema`) is reported with "error", and with "rpc_error"
{"code", "message", "data"} when it was a JSON-RPC error. Exit code 0 when
every session ran, 1 on a transport or protocol failure (including a server
that did not answer the offered protocol version).
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


def offer_protocol_version(version: str) -> None:
    """Makes `ClientSession.initialize` offer `version` instead of the SDK's newest.

    Both SDK lines read a module-level constant when they build the
    initialize request: mcp 2.x `LATEST_HANDSHAKE_VERSION`, imported into
    `mcp.client.session`; mcp 1.x `mcp.types.LATEST_PROTOCOL_VERSION`.
    """
    import mcp.client.session as session_module

    if hasattr(session_module, "LATEST_HANDSHAKE_VERSION"):
        session_module.LATEST_HANDSHAKE_VERSION = version
    else:
        import mcp.types

        mcp.types.LATEST_PROTOCOL_VERSION = version


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


def resolve(value: Any, documents: dict[str, Any]) -> Any:
    """`value` with every "${STEP:/pointer}" string replaced."""
    if isinstance(value, dict):
        return {k: resolve(v, documents) for k, v in value.items()}
    if isinstance(value, list):
        return [resolve(v, documents) for v in value]
    if isinstance(value, str):
        match = REFERENCE.match(value)
        if match:
            step, path = match.groups()
            if step not in documents:
                raise KeyError(f"no result of step {step!r} to resolve {value}")
            try:
                return pointer(documents[step], path)
            except (KeyError, IndexError, ValueError) as exc:
                raise KeyError(f"{value} does not resolve in the result of {step!r}") from exc
    return value


def reference_document(result: dict[str, Any]) -> Any:
    """What "${STEP:/pointer}" resolves in: structuredContent, else a JSON text payload."""
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    for block in result.get("content") or []:
        if block.get("type") != "text":
            continue
        try:
            parsed = json.loads(block.get("text", ""))
        except ValueError:
            continue
        if isinstance(parsed, dict) and "data" in parsed:
            return parsed
    return None


def exception_text(exc: BaseException) -> str:
    """Flattens exception groups (anyio task groups) into one message."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(exception_text(e) for e in exc.exceptions)
    return f"{exc.__class__.__name__}: {exc}"


def rpc_error(exc: BaseException) -> dict[str, Any] | None:
    """The JSON-RPC error an SDK exception carries (McpError/MCPError.error)."""
    if isinstance(exc, BaseExceptionGroup):
        return next((e for e in map(rpc_error, exc.exceptions) if e is not None), None)
    error = getattr(exc, "error", None)
    if error is None or not hasattr(error, "code"):
        return None
    return {"code": error.code, "message": error.message, "data": getattr(error, "data", None)}


def open_transport(url: str, headers: dict[str, str]) -> tuple[Any, Any]:
    """The SDK's Streamable HTTP transport (and the HTTP client to close on 2.x)."""
    try:  # mcp >= 2: the transport takes a preconfigured HTTP client
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        client = create_mcp_http_client(headers=headers)
        return client, streamable_http_client(url, http_client=client)
    except ImportError:  # mcp 1.x
        from mcp.client.streamable_http import streamablehttp_client

        return None, streamablehttp_client(url, headers=headers)


async def run_session(plan: dict[str, Any], session_plan: dict[str, Any], report: dict[str, Any]) -> None:
    """Runs one planned session, filling `report` as it goes."""
    from mcp import ClientSession

    timeout = float(plan.get("timeout", 60))
    offered = plan.get("protocolVersion")
    headers = {"Authorization": f"Bearer {session_plan['token']}"}
    client, transport = open_transport(plan["url"], headers)
    if client is not None:
        await client.__aenter__()
    try:
        async with transport as (read, write, *_):
            async with ClientSession(read, write) as session:
                init = await asyncio.wait_for(session.initialize(), timeout)
                negotiated = attr(init, "protocol_version", "protocolVersion")
                report["protocolVersion"] = negotiated
                report["serverInfo"] = dump(attr(init, "server_info", "serverInfo"))
                if offered and negotiated != offered:
                    raise RuntimeError(f"offered protocol {offered}, the server answered {negotiated}")
                listed = await asyncio.wait_for(session.list_tools(), timeout)
                report["tools"] = [dump(tool) for tool in listed.tools]
                documents: dict[str, Any] = {}
                for step in session_plan.get("steps", []):
                    call: dict[str, Any] = {"id": step["id"], "tool": step["tool"]}
                    report["calls"].append(call)
                    try:
                        arguments = resolve(step.get("arguments", {}), documents)
                        call["arguments"] = arguments
                        result = await asyncio.wait_for(session.call_tool(step["tool"], arguments), timeout)
                    except Exception as exc:  # noqa: BLE001 - reported, the test decides
                        call["error"] = exception_text(exc)
                        error = rpc_error(exc)
                        if error is not None:
                            call["rpc_error"] = error
                        continue
                    call["result"] = dump(result)
                    document = reference_document(call["result"])
                    if document is not None:
                        documents[step["id"]] = document
    finally:
        if client is not None:
            await client.__aexit__(None, None, None)


async def main() -> int:
    plan = json.load(sys.stdin)
    if plan.get("protocolVersion"):
        offer_protocol_version(plan["protocolVersion"])
    out: dict[str, Any] = {"sdk": f"mcp {dist_version('mcp')}", "sessions": []}
    code = 0
    try:
        for session_plan in plan["sessions"]:
            report: dict[str, Any] = {"name": session_plan.get("name"), "calls": []}
            out["sessions"].append(report)
            await run_session(plan, session_plan, report)
    except Exception as exc:  # noqa: BLE001 - report everything as JSON
        out["error"] = exception_text(exc)
        code = 1
    print(json.dumps(out, ensure_ascii=False))
    return code


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
