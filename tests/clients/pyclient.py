#!/usr/bin/env python3
"""One MCP tool call through the official Python SDK (mcp 2.x or 1.x).

  pyclient.py URL TOKEN TOOL [JSON_ARGS] [--expect-protocol V] [--list-only]
              [--mode legacy|auto] [--trace] [-H 'Name: value']...
              [--oauth [--oauth-client-id ID [--oauth-client-secret S]]
                       [--oauth-redirect URI] [--oauth-scope SCOPES]]

Connects over Streamable HTTP, initializes, lists the tools and calls TOOL
with JSON_ARGS (an object, default {}). TOKEN is sent as a bearer token; "-"
or "" sends none. Prints one JSON document on stdout:

  {"sdk", "url", "protocolVersion", "serverInfo", "capabilities", "tools",
   "call"?: <CallToolResult>, "http"?: [...], "oauth"?: {...}, "error"?: "..."}

--mode auto (mcp 2.x) uses the SDK's high-level Client, which first probes
revision 2026-07-28 (server/discover) and falls back to initialize.
--trace records every HTTP request and response (method, URL, status and the
MCP-relevant headers, the bearer token shortened) under "http".
--oauth (mcp 2.x) signs in with the SDK's OAuth provider instead of TOKEN:
401 challenge, protected-resource and authorization-server metadata, dynamic
registration unless --oauth-client-id, authorization code with PKCE, token.
The browser step is an HTTP client that follows the authorization endpoint's
redirects until one reaches the redirect URI, so it needs a server that
approves without a page (the test-only auto-approval).

Exit codes: 0 success; 1 transport, authentication or protocol failure;
2 the call returned isError; 3 TOOL not listed; 4 negotiated protocol is not
--expect-protocol; 64 usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from importlib.metadata import version as dist_version
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

TRACED_HEADERS = {
    "accept",
    "authorization",
    "content-type",
    "last-event-id",
    "mcp-protocol-version",
    "mcp-session-id",
    "www-authenticate",
}


def dump(model: Any) -> Any:
    """A pydantic model as the JSON the server sent (no client-side defaults)."""
    if model is None:
        return None
    if hasattr(model, "model_dump"):
        return model.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return model


def attr(obj: Any, snake: str, camel: str) -> Any:
    """mcp 2.x names model attributes in snake_case, mcp 1.x in camelCase."""
    return getattr(obj, snake) if hasattr(obj, snake) else getattr(obj, camel, None)


def exception_text(exc: BaseException) -> str:
    """One message for an exception, exception groups flattened."""
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(exception_text(e) for e in exc.exceptions)
    return f"{exc.__class__.__name__}: {exc or exc.__class__.__name__}"


def shortened(name: str, value: str) -> str:
    if name == "authorization" and " " in value:
        scheme, _, credential = value.partition(" ")
        return f"{scheme} {credential[:3]}…({len(credential)} chars)"
    return value


class Trace:
    """httpx event hooks that record the HTTP exchange."""

    def __init__(self, echo: bool) -> None:
        self.entries: list[dict[str, Any]] = []
        self.echo = echo

    def headers(self, headers: Any, shorten: bool) -> dict[str, str]:
        picked = {}
        for name, value in headers.items():
            name = name.lower()
            if name in TRACED_HEADERS:
                picked[name] = shortened(name, value) if shorten else value
        return picked

    async def request(self, request: Any) -> None:
        entry = {"dir": ">", "method": request.method, "url": str(request.url),
                 "headers": self.headers(request.headers, True)}
        self.entries.append(entry)
        if self.echo:
            print(f"> {entry['method']} {entry['url']} {entry['headers']}", file=sys.stderr)

    async def response(self, response: Any) -> None:
        entry = {"dir": "<", "status": response.status_code,
                 "for": f"{response.request.method} {response.request.url}",
                 "headers": self.headers(response.headers, False)}
        self.entries.append(entry)
        if self.echo:
            print(f"< {entry['status']} {entry['for']} {entry['headers']}", file=sys.stderr)

    def hooks(self) -> dict[str, list[Any]]:
        return {"request": [self.request], "response": [self.response]}


def oauth_provider(args: argparse.Namespace, out: dict[str, Any]) -> Any:
    """The SDK's OAuthClientProvider with an unattended browser step."""
    import httpx2
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata

    record: dict[str, Any] = out.setdefault("oauth", {"steps": []})
    redirect_uri = args.oauth_redirect
    landed: dict[str, str] = {}

    class Storage:
        def __init__(self) -> None:
            self.tokens = None
            self.client_info = None
            if args.oauth_client_id:
                self.client_info = OAuthClientInformationFull(
                    client_id=args.oauth_client_id,
                    client_secret=args.oauth_client_secret,
                    redirect_uris=[redirect_uri],
                    token_endpoint_auth_method="client_secret_post" if args.oauth_client_secret else "none",
                )

        async def get_tokens(self) -> Any:
            return self.tokens

        async def set_tokens(self, tokens: Any) -> None:
            self.tokens = tokens
            record["token"] = {"token_type": tokens.token_type, "scope": tokens.scope,
                               "expires_in": tokens.expires_in, "refresh_token": bool(tokens.refresh_token)}

        async def get_client_info(self) -> Any:
            return self.client_info

        async def set_client_info(self, client_info: Any) -> None:
            self.client_info = client_info
            record["client_id"] = client_info.client_id

    async def open_browser(authorization_url: str) -> None:
        record["steps"].append({"authorize": authorization_url.split("?")[0],
                                "params": sorted(parse_qs(urlsplit(authorization_url).query))})
        url = authorization_url
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as http:
            for _ in range(10):
                response = await http.get(url)
                location = response.headers.get("location")
                if response.status_code not in (301, 302, 303, 307, 308) or not location:
                    raise RuntimeError(
                        f"the authorization endpoint answered {response.status_code} without redirecting "
                        f"to {redirect_uri}: {response.text[:200]!r}"
                    )
                url = urljoin(url, location)
                if url.startswith(redirect_uri):
                    landed["url"] = url
                    return
        raise RuntimeError("too many redirects at the authorization endpoint")

    async def callback() -> Any:
        query = parse_qs(urlsplit(landed["url"]).query)
        if "error" in query:
            raise RuntimeError(f"authorization refused: {query['error'][0]} {query.get('error_description', [''])[0]}")
        record["steps"].append({"callback": sorted(query)})
        return AuthorizationCodeResult(code=query["code"][0], state=query.get("state", [None])[0],
                                       iss=query.get("iss", [None])[0])

    metadata = OAuthClientMetadata(
        client_name="Chataigne test client (Python MCP SDK)",
        redirect_uris=[redirect_uri],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=args.oauth_scope,
    )
    return OAuthClientProvider(server_url=args.url, client_metadata=metadata, storage=Storage(),
                               redirect_handler=open_browser, callback_handler=callback)


async def exercise(args: argparse.Namespace, out: dict[str, Any], session: Any, init: Any, negotiated: str) -> int:
    """tools/list, then tools/call, on an initialized session."""
    out["protocolVersion"] = negotiated
    if init is not None:
        out["serverInfo"] = dump(attr(init, "server_info", "serverInfo"))
        out["capabilities"] = dump(init.capabilities)
        if init.instructions:
            out["instructions"] = init.instructions
    listed = await asyncio.wait_for(session.list_tools(), args.timeout)
    out["tools"] = [dump(tool) for tool in listed.tools]
    if args.expect_protocol and negotiated != args.expect_protocol:
        out["error"] = f"negotiated {negotiated}, expected {args.expect_protocol}"
        return 4
    if args.list_only:
        return 0
    names = [tool.name for tool in listed.tools]
    if args.tool not in names:
        out["error"] = f"tool {args.tool!r} is not listed: {names}"
        return 3
    result = await asyncio.wait_for(session.call_tool(args.tool, args.arguments), args.timeout)
    out["call"] = dump(result)
    return 2 if attr(result, "is_error", "isError") else 0


async def run(args: argparse.Namespace) -> int:
    from mcp import ClientSession

    headers: dict[str, str] = {}
    if args.token not in ("", "-"):
        headers["Authorization"] = f"Bearer {args.token}"
    for line in args.header:
        name, _, value = line.partition(":")
        headers[name.strip()] = value.strip()
    trace = Trace(args.trace)
    out: dict[str, Any] = {"sdk": f"mcp {dist_version('mcp')}", "url": args.url}

    try:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        def transport() -> tuple[Any, Any]:
            auth = oauth_provider(args, out) if args.oauth else None
            client = create_mcp_http_client(headers=headers, auth=auth)
            client.event_hooks = trace.hooks()
            return client, streamable_http_client(args.url, http_client=client)

    except ImportError:  # mcp 1.x
        import httpx
        from mcp.client.streamable_http import streamablehttp_client

        if args.oauth or args.mode == "auto":
            print("--oauth and --mode auto need mcp 2.x", file=sys.stderr)
            return 64

        def factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
            return httpx.AsyncClient(headers=headers, timeout=timeout, auth=auth, follow_redirects=True,
                                     event_hooks=trace.hooks())

        def transport() -> tuple[Any, Any]:
            return None, streamablehttp_client(args.url, headers=headers, httpx_client_factory=factory)

    code = 0
    try:
        client, streams = transport()
        if client is not None:
            await client.__aenter__()
        try:
            if args.mode == "auto":
                from mcp.client import Client

                async with Client(streams, mode="auto") as high_level:
                    code = await exercise(args, out, high_level, high_level.session.initialize_result,
                                          high_level.protocol_version)
            else:
                async with streams as (read, write, *_):
                    async with ClientSession(read, write) as session:
                        init = await asyncio.wait_for(session.initialize(), args.timeout)
                        code = await exercise(args, out, session, init,
                                              attr(init, "protocol_version", "protocolVersion"))
        finally:
            if client is not None:
                await client.__aexit__(None, None, None)
    except BaseException as exc:  # noqa: BLE001 - every failure ends up in the JSON report
        if isinstance(exc, KeyboardInterrupt):
            raise
        out["error"] = exception_text(exc)
        challenge = next((e["headers"].get("www-authenticate") for e in trace.entries if e.get("status") == 401), None)
        if challenge is not None:
            out["error"] = f"HTTP 401 (WWW-Authenticate: {challenge}); {out['error']}"
        code = 1
    if args.trace:
        out["http"] = trace.entries
    print(json.dumps(out, indent=2, ensure_ascii=False))
    return code


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url")
    parser.add_argument("token", help="bearer token, '-' or '' for none")
    parser.add_argument("tool", nargs="?", default="")
    parser.add_argument("json_args", nargs="?", default="{}")
    parser.add_argument("-H", "--header", action="append", default=[], help="extra 'Name: value' header")
    parser.add_argument("--expect-protocol")
    parser.add_argument("--list-only", action="store_true")
    parser.add_argument("--mode", choices=["legacy", "auto"], default="legacy")
    parser.add_argument("--trace", action="store_true")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    parser.add_argument("--oauth", action="store_true")
    parser.add_argument("--oauth-client-id")
    parser.add_argument("--oauth-client-secret")
    parser.add_argument("--oauth-redirect", default="http://127.0.0.1:33418/callback")
    parser.add_argument("--oauth-scope")
    args = parser.parse_args()
    try:
        args.arguments = json.loads(args.json_args)
    except ValueError as exc:
        print(f"JSON_ARGS is not JSON: {exc}", file=sys.stderr)
        return 64
    if not isinstance(args.arguments, dict):
        print("JSON_ARGS must be a JSON object", file=sys.stderr)
        return 64
    if not args.tool and not args.list_only:
        print("TOOL is required unless --list-only", file=sys.stderr)
        return 64
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
