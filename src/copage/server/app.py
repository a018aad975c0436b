"""The Starlette application: app assembly only (routes, middleware, lifespan).

The wire formats are sibling modules (:mod:`copage.server.formats.chat`,
:mod:`~copage.server.formats.responses`, :mod:`~copage.server.formats.messages`),
each built on the shared HTTP edge (:mod:`copage.server.edge`); the small routes
here (models, health, metrics, the inspector, deleting a conversation) use the
same edge.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    FileResponse,
    JSONResponse,
    PlainTextResponse,
    Response,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from copage.server import inspector
from copage.server.edge import ProxyState, caller_of, endpoint, state_of, tenant_of
from copage.server.error_body import ProxyError
from copage.server.formats import chat, messages, responses
from copage.server.formats.messages import error_for_path
from copage.server.logs import install_redaction
from copage.server.origin_guard import BrowserGuard
from copage.server.request import check_conversation_id
from copage.server.settings import ServeSettings
from copage.server.transcript import index_for
from copage.server.upstream import Upstream
from copage.stores.protocol import ConversationNotFound, PageStore

__all__ = ["app_from_env", "create_app"]

log = logging.getLogger("copage.server")
STATIC = Path(__file__).parent / "static"


@endpoint("models")
async def models(request: Request) -> Response:
    who = caller_of(request)
    state = state_of(request)
    return JSONResponse(await state.upstream.models(who.upstream_key))


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


@endpoint("metrics")
async def metrics(request: Request) -> Response:
    state = state_of(request)
    mode = state.settings.metrics
    if mode == "off":
        raise ProxyError(404, f"no route {request.url.path}", code="not_found")
    if mode == "key":
        tenant_of(request)
    return PlainTextResponse(state.metrics.render(), media_type="text/plain; version=0.0.4")


async def ui_page(request: Request) -> Response:
    return FileResponse(STATIC / "index.html")


@endpoint("ui_conversations")
async def ui_conversations(request: Request) -> Response:
    state = state_of(request)
    tenant = tenant_of(request)
    rows = await state.service.run(inspector.conversations, state.store, tenant, time.time())
    return JSONResponse({"tenant": tenant, "conversations": rows})


@endpoint("ui_conversation")
async def ui_conversation(request: Request) -> Response:
    state = state_of(request)
    tenant = tenant_of(request)
    cid = check_conversation_id(str(request.path_params["cid"]))
    try:
        data = await state.service.run(inspector.conversation, state.store, tenant, cid)
    except ConversationNotFound:
        raise ProxyError(404, "no such conversation", code="conversation_not_found") from None
    return JSONResponse(data)


@endpoint("delete_conversation")
async def delete_conversation(request: Request) -> Response:
    """``DELETE /v1/conversations/{cid}``: the caller's tenant's conversation, gone from
    the store and this worker's caches (OpenAI's ``conversation.deleted`` shape)."""
    state = state_of(request)
    tenant = tenant_of(request)
    cid = check_conversation_id(str(request.path_params["cid"]))
    try:
        await state.service.delete(tenant, cid)
    except ConversationNotFound:
        raise ProxyError(404, "no such conversation", code="conversation_not_found") from None
    return JSONResponse({"id": cid, "object": "conversation.deleted", "deleted": True})


def create_app(
    settings: ServeSettings, *, store: PageStore | None = None,
    upstream: Upstream | None = None,
) -> Starlette:
    """The proxy app. ``store``/``upstream`` default to the ones the settings name."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        from copage.session.trace import setup_from_env
        from copage.stores import open_store

        setup_from_env()  # OpenTelemetry traces when configured (--otel, OTEL_EXPORTER_OTLP_*)
        st = store or open_store(settings.store)
        up = upstream or Upstream(
            base_url=settings.upstream, model=settings.model,
            api_key=None if settings.client_key else settings.upstream_key,
            timeout=settings.upstream_timeout, retries=settings.upstream_retries,
            api=settings.upstream_api,
        )
        state = ProxyState(settings, st, index_for(st), up)
        install_redaction(state.redact)
        warning = settings.keyless_warning()
        if warning:
            log.warning("%s", warning)
        app.state.proxy = state
        try:
            yield
        finally:
            await up.aclose()
            state.executor.shutdown(wait=True)
            state.index.close()
            if store is None:
                st.close()

    routes = [
        *chat.routes(),
        *responses.routes(),
        *messages.routes(),
        Route("/v1/conversations/{cid}", delete_conversation, methods=["DELETE"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/ui", ui_page, methods=["GET"]),
        Route("/ui/", ui_page, methods=["GET"]),
        Route("/ui/api/conversations", ui_conversations, methods=["GET"]),
        Route("/ui/api/conversations/{cid}", ui_conversation, methods=["GET"]),
        Mount("/ui/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={
        404: _not_found, 405: _not_allowed,
    })

    def refused(reason: str) -> None:
        state = getattr(app.state, "proxy", None)
        if state is not None:
            state.metrics.inc("copage_requests_refused_total", reason=reason)

    # Under --upstream-key client the upstream checks every key (and each key is its own
    # tenant), so the proxy may listen beyond loopback as it does with proxy keys.
    app.add_middleware(BrowserGuard, loopback_only=not settings.keys and not settings.client_key,
                       cors=settings.cors, refused=refused, error_body=error_for_path)
    return app


async def _not_found(request: Request, exc: Any) -> Response:
    path = request.url.path
    return JSONResponse(error_for_path(path, 404, "not_found", f"no route {path}"),
                        status_code=404)


async def _not_allowed(request: Request, exc: Any) -> Response:
    return JSONResponse(error_for_path(request.url.path, 405, "method_not_allowed",
                                       f"{request.method} not allowed here"), status_code=405)


def app_from_env() -> Starlette:
    """Factory for ``uvicorn --factory`` workers: the command-line flags from
    ``COPAGE_SERVE_FLAGS`` (JSON, set by ``copage serve --workers N``) merged with the
    environment and config file as :func:`~copage.server.settings.build_settings` does."""
    import os

    from copage.server.settings import build_settings

    flags = json.loads(os.environ.get("COPAGE_SERVE_FLAGS", "{}"))
    return create_app(build_settings(flags))
