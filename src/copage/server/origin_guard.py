"""What keeps web pages from driving the proxy: Host, Origin and content-type checks.

A browser lets any page send a "simple" cross-origin request without asking the
server first: a ``POST`` with a ``text/plain`` body needs no preflight. With no
proxy keys the proxy trusts every caller on loopback, so a page the user opens
could spend the upstream key, and through DNS rebinding (a hostname that resolves
to 127.0.0.1, so the page counts as same-origin) read the inspector's API. This
ASGI middleware, in front of every route:

* with no proxy keys configured, answers only requests whose ``Host`` is a
  loopback name (``localhost``, ``127.x.x.x``, ``[::1]``): a rebound hostname is
  refused (403 ``host_not_allowed``);
* refuses a request carrying an ``Origin`` other than the server's own unless
  ``--cors`` lists it (403 ``cross_origin``), and answers allowed origins' CORS
  preflights; a cross-site ``Sec-Fetch-Site`` without ``Origin`` is refused too
  (except page navigations);
* requires ``Content-Type: application/json`` on a ``POST`` (415), which a page
  cannot send cross-origin without a preflight;
* adds ``X-Content-Type-Options: nosniff`` to every response and, under ``/ui``,
  a strict ``Content-Security-Policy`` and ``X-Frame-Options: DENY``.

Pure ASGI (no ``BaseHTTPMiddleware``): it adds no task or queue per request.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from copage.llm.guard import is_loopback

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
#: ``(path, status, code, message)`` -> the JSON body of a refusal.
ErrorBody = Callable[[str, int, str, str], dict[str, Any]]


def openai_error(path: str, status: int, code: str, message: str) -> dict[str, Any]:
    """OpenAI's error shape (every path)."""
    return {"error": {"message": message, "type": "invalid_request_error", "code": code,
                      "param": None}}

UI_HEADERS = [
    (b"content-security-policy", (b"default-src 'self'; script-src 'self'; style-src 'self'; "
     b"img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
     b"form-action 'none'")),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]
NOSNIFF = (b"x-content-type-options", b"nosniff")
ALLOW_METHODS = b"GET, POST, DELETE, OPTIONS"
ALLOW_HEADERS = (b"authorization, content-type, idempotency-key, x-copage-conversation, "
                 b"x-stainless-retry-count, x-api-key, anthropic-version, anthropic-beta")
EXPOSE_HEADERS = b"x-copage-conversation, x-copage-stats"


def host_name(host: str) -> str:
    """The name part of a ``Host`` header value (``[::1]:8787`` -> ``::1``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def loopback_host(host: str) -> bool:
    """True for ``localhost``, ``127.0.0.0/8`` and ``::1`` (with or without a port)."""
    name = host_name(host)
    return name == "localhost" or (name not in ("", "0.0.0.0") and is_loopback(name))


class BrowserGuard:
    """The middleware (see module docstring).

    Args:
        app: the wrapped ASGI app.
        loopback_only: refuse non-loopback ``Host`` names (no proxy keys configured).
        cors: origins allowed cross-origin (``"*"``: any).
        refused: called with a reason for every refused request (metrics).
        error_body: the JSON body of a refusal from ``(path, status, code, message)``, so
            each endpoint answers in its API's error shape (default: OpenAI's).
    """

    def __init__(self, app: ASGIApp, *, loopback_only: bool, cors: tuple[str, ...] = (),
                 refused: Callable[[str], None] | None = None,
                 error_body: ErrorBody | None = None) -> None:
        self.app, self.loopback_only = app, loopback_only
        self.cors = frozenset(cors)
        self.refused = refused or (lambda reason: None)
        self.error_body = error_body or openai_error

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k: v for k, v in scope["headers"]}
        host = headers.get(b"host", b"").decode("latin-1")
        if self.loopback_only and not loopback_host(host):
            await self._refuse(scope, send, 403, "host_not_allowed",
                               "this proxy has no API keys and answers only loopback host "
                               "names (localhost, 127.0.0.1, [::1])")
            return
        origin = headers.get(b"origin")
        allowed: bytes | None = None
        if origin is not None:
            text = origin.decode("latin-1").rstrip("/")
            same = text in (f"http://{host}", f"https://{host}")
            if not same:
                if "*" not in self.cors and text not in self.cors:
                    await self._refuse(scope, send, 403, "cross_origin",
                                       f"cross-origin requests from {text[:100]!r} are not "
                                       "allowed (start the proxy with --cors ORIGIN)")
                    return
                allowed = origin
                if scope["method"] == "OPTIONS":
                    await self._preflight(send, origin)
                    return
        elif (headers.get(b"sec-fetch-site") == b"cross-site"
              and headers.get(b"sec-fetch-mode") != b"navigate"):
            await self._refuse(scope, send, 403, "cross_origin", "cross-site requests are not allowed")
            return
        if scope["method"] == "POST":
            ctype = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if ctype != b"application/json":
                await self._refuse(scope, send, 415, "unsupported_media_type",
                                   "the request body must be sent as Content-Type: "
                                   "application/json")
                return
        ui = scope["path"] == "/ui" or scope["path"].startswith("/ui/")

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                extra = [NOSNIFF, *(UI_HEADERS if ui else ())]
                if allowed is not None:
                    extra += [(b"access-control-allow-origin", allowed), (b"vary", b"origin"),
                              (b"access-control-expose-headers", EXPOSE_HEADERS)]
                message["headers"] = [*message.get("headers", ()), *extra]
            await send(message)

        await self.app(scope, receive, send_with_headers)

    async def _preflight(self, send: Send, origin: bytes) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": [
            (b"access-control-allow-origin", origin), (b"vary", b"origin"),
            (b"access-control-allow-methods", ALLOW_METHODS),
            (b"access-control-allow-headers", ALLOW_HEADERS),
            (b"access-control-max-age", b"600"), NOSNIFF]})
        await send({"type": "http.response.body", "body": b""})

    async def _refuse(self, scope: Scope, send: Send, status: int, code: str, message: str
                      ) -> None:
        self.refused(code)
        body = json.dumps(self.error_body(str(scope.get("path", "")), status, code,
                                          message)).encode()
        await send({"type": "http.response.start", "status": status, "headers": [
            (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
            NOSNIFF]})
        await send({"type": "http.response.body", "body": body})
