"""Streamable HTTP for the MCP server, with tenants by API key.

Each request's ``Authorization: Bearer KEY`` is looked up in a
:class:`~copage.session.auth.KeyRing` (the proxy's keys: same files, same
``COPAGE_KEYS``); the tenant goes into the ASGI scope, where the tools read it.
Every request is checked, not only the one that opened the MCP session, so a
session id never carries one tenant's access to another caller.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.server import MCPServer
from starlette.types import ASGIApp, Receive, Scope, Send

from copage.adapters.mcp.server import TENANT_KEY
from copage.session.auth import DEFAULT_TENANT, KeyRing


class TenantKeys:
    """ASGI middleware: refuse HTTP requests without a known key (401), tag the rest."""

    def __init__(self, app: ASGIApp, keys: KeyRing, *, tenant: str = DEFAULT_TENANT) -> None:
        self.app, self.keys, self.tenant = app, keys, tenant

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):  # lifespan
            await self.app(scope, receive, send)
            return
        header = next((v.decode("latin-1") for k, v in scope.get("headers", ())
                       if k == b"authorization"), None)
        tenant = self.tenant if self.keys.open else self.keys.tenant(header)
        if tenant is None and scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        if tenant is None:
            body = json.dumps({"error": "a valid API key is required: "
                               "Authorization: Bearer <key>"}).encode()
            await send({"type": "http.response.start", "status": 401, "headers": [
                (b"content-type", b"application/json"),
                (b"www-authenticate", b'Bearer realm="copage"')]})
            await send({"type": "http.response.body", "body": body})
            return
        scope[TENANT_KEY] = tenant
        await self.app(scope, receive, send)


def http_app(server: MCPServer, keys: KeyRing | None = None, *, host: str = "127.0.0.1",
             path: str = "/mcp", tenant: str = DEFAULT_TENANT, **options: Any) -> ASGIApp:
    """The streamable HTTP ASGI app at ``path``, behind the key check.

    ``options`` go to the SDK's ``streamable_http_app`` (``stateless_http``,
    ``json_response``, ...). With no keys every caller is ``tenant``.
    """
    app = server.streamable_http_app(streamable_http_path=path, host=host, **options)
    return TenantKeys(app, keys or KeyRing({}), tenant=tenant)


def serve_http(server: MCPServer, keys: KeyRing | None = None, *, host: str = "127.0.0.1",
               port: int = 8788, path: str = "/mcp", log_level: str = "info",
               **options: Any) -> None:
    """Serve :func:`http_app` with uvicorn until interrupted."""
    import uvicorn

    app = http_app(server, keys, host=host, path=path, **options)
    uvicorn.run(app, host=host, port=port, log_level=log_level)
