"""The Starlette application: OpenAI-compatible endpoints, health, metrics, inspector."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
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

from copage.llm.errors import ModelError
from copage.server import chat_shapes as responses
from copage.server import inspector
from copage.server.body import BodyError, decode, match_known, parse_body
from copage.server.callers import Caller, ClientKeys, caller
from copage.server.error_body import ProxyError, from_model_error
from copage.server.formats.messages import error_for_path
from copage.server.logs import Redactor, install_redaction
from copage.server.metrics import Metrics
from copage.server.origin_guard import BrowserGuard
from copage.server.recognise import Ask
from copage.server.request import USER_HEADER, ChatCall, check_conversation_id, parse_call
from copage.server.service import ProxyService
from copage.server.settings import ServeSettings
from copage.server.streaming import ClientGone, EventStreamResponse, TurnStream
from copage.server.transcript import TranscriptIndex, index_for
from copage.server.upstream import Upstream
from copage.session.auth import KeyRing
from copage.stores.protocol import ConversationNotFound, PageStore, StoreError

log = logging.getLogger("copage.server")
STATIC = Path(__file__).parent / "static"
CONV_HEADER = "X-Copage-Conversation"
IDEMPOTENCY_HEADER = "Idempotency-Key"
#: Bodies up to this size are parsed on the event loop; larger ones in the pool.
INLINE_BODY = 256 * 1024
Handler = Callable[[Request], Awaitable[Response]]


class ProxyState:
    """Everything the handlers share (built once per worker process)."""

    def __init__(self, settings: ServeSettings, store: PageStore, index: TranscriptIndex,
                 upstream: Upstream) -> None:
        self.settings, self.store, self.index, self.upstream = settings, store, index, upstream
        self.keys = KeyRing(settings.keys)
        self.metrics = Metrics()
        self.executor = ThreadPoolExecutor(max_workers=64, thread_name_prefix="copage-store")
        self.redact = Redactor(settings.secrets(), self.keys.digests)
        #: Clients' own keys (``--upstream-key client``) by digest, for :meth:`caller`.
        self.client_keys = ClientKeys(self.redact)
        self.service = ProxyService(
            store=store, index=index, upstream=upstream, paging=settings.paging,
            metrics=self.metrics, executor=self.executor, max_recalls=settings.max_recalls,
            cache_size=settings.cache_conversations, lock_timeout=settings.lock_timeout,
            idempotency_window=settings.idempotency_window,
            recall_mode=settings.recall_mode, speculative_tokens=settings.speculative_tokens,
        )


def _error(e: ProxyError, state: ProxyState, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse(e.body(state.redact), status_code=e.status,
                        headers={**e.headers, **(headers or {})})


def proxy_error(exc: Exception, name: str) -> ProxyError:
    """The OpenAI-format error a failure is answered with (logged when unexpected)."""
    if isinstance(exc, ProxyError):
        return exc
    if isinstance(exc, ModelError):
        error = from_model_error(exc)
        # an operator sees upstream failures in the log (the client gets them as errors)
        log.log(logging.WARNING if error.status >= 500 or error.status == 429 else logging.INFO,
                "upstream failure on %s, answered %d: %s", name, error.status, exc)
        return error
    if isinstance(exc, StoreError):
        log.error("store error on %s: %s", name, exc)
        return ProxyError(503, "the conversation store is unavailable", type="server_error",
                          code="store_error")
    log.error("internal error on %s", name, exc_info=exc)
    return ProxyError(500, "internal error", type="server_error", code="internal_error")


def endpoint(name: str) -> Callable[[Handler], Handler]:
    """Wrap a handler: errors become OpenAI-format responses; requests are counted."""

    def wrap(fn: Handler) -> Handler:
        async def handler(request: Request) -> Response:
            state: ProxyState = request.app.state.proxy
            try:
                response = await fn(request)
            except Exception as e:  # noqa: BLE001 - every failure gets an OpenAI-format body
                response = _error(proxy_error(e, name), state)
            state.metrics.inc("copage_requests_total", endpoint=name,
                              status=str(response.status_code))
            return response

        return handler

    return wrap


def _tenant(request: Request) -> str:
    return _caller(request).tenant


def _caller(request: Request) -> Caller:
    state: ProxyState = request.app.state.proxy
    found = caller(state.settings, state.keys, state.client_keys,
                   request.headers.get("authorization"))
    if found is None:
        raise ProxyError(401, "invalid or missing proxy API key (Authorization: Bearer KEY)"
                         if not state.settings.client_key else
                         "missing API key: this proxy passes your own upstream key on "
                         "(Authorization: Bearer KEY)",
                         type="authentication_error", code="invalid_api_key")
    return found


async def _body(request: Request, limit: int) -> bytes:
    size = request.headers.get("content-length")
    too_big = ProxyError(413, f"request body larger than {limit} bytes",
                         code="request_too_large")
    if size and size.isdigit() and int(size) > limit:
        raise too_big
    parts, total = [], 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise too_big
        parts.append(chunk)
    return b"".join(parts)


@endpoint("chat")
async def chat_completions(request: Request) -> Response:
    state: ProxyState = request.app.state.proxy
    s = state.settings
    who = _caller(request)
    tenant = who.tenant
    raw = await _body(request, s.max_body_bytes)
    header = request.headers.get(CONV_HEADER)
    cid = check_conversation_id(header.strip()) if header is not None else None
    try:
        text = decode(raw)
        # A body that resends a history this worker saw: its messages are not parsed again.
        known = state.service.known(tenant, cid, text)
        match = match_known(text, known) if known else None
        small = len(text) - (len(match.prefix) if match else 0) <= INLINE_BODY
        body = parse_body(text, match) if small else await state.service._run(
            parse_body, text, match)  # a large body: parsed off the event loop
    except BodyError as e:
        raise ProxyError(400, str(e), code="invalid_json") from None
    call = parse_call(body.data, max_messages=s.max_messages, max_tools=s.max_tools,
                      user=request.headers.get(USER_HEADER))
    via = known.get(body.continues) if body.continues is not None else None
    if call.stream:
        return await _stream(request, state, who, call, cid, small=small, via=via)
    result = await state.service.chat(tenant, call, cid, _ask(request), small=small, via=via,
                                      upstream_key=who.upstream_key)
    headers = {CONV_HEADER: result.conversation_id,
               "X-Copage-Stats": json.dumps(result.stats, separators=(",", ":"))}
    env = responses.Envelope.new(result.outcome.model or call.model or "")
    return JSONResponse(responses.completion(env, result.outcome), headers=headers)


async def _stream(request: Request, state: ProxyState, who: Caller, call: ChatCall,
                  cid: str | None, *, small: bool, via: str | None) -> Response:
    """A streamed turn: errors until its first visible event are HTTP errors, later
    ones an SSE error event (see :mod:`copage.server.streaming`)."""
    events = state.service.turn(who.tenant, call, cid, _ask(request), small=small, via=via,
                                stream=True, upstream_key=who.upstream_key)
    stream = TurnStream(events, request.receive)
    try:
        opened, head = await stream.head()
    except ClientGone:
        await stream.close()
        return Response(status_code=499)  # nobody reads it; counted as such
    except BaseException:
        await stream.close()
        raise
    assert opened is not None, "a turn opens before its first event"
    env = responses.Envelope.new(opened.model or call.model or "")
    chunks = responses.Chunks(env, include_usage=call.include_usage)
    return EventStreamResponse(
        stream, head, chunks, error_of=lambda e: proxy_error(e, "chat"), clean=state.redact,
        metrics=state.metrics, headers={CONV_HEADER: opened.conversation_id})


@endpoint("models")
async def models(request: Request) -> Response:
    who = _caller(request)
    state: ProxyState = request.app.state.proxy
    return JSONResponse(await state.upstream.models(who.upstream_key))


async def healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def _ask(request: Request) -> Ask:
    key = request.headers.get(IDEMPOTENCY_HEADER)
    if key is not None and not 1 <= len(key.strip()) <= 255:
        raise ProxyError(400, "Idempotency-Key must be 1-255 characters",
                         code="invalid_idempotency_key")
    count = request.headers.get("x-stainless-retry-count", "")
    return Ask(key=key.strip() if key is not None else None,
               retry_count=int(count) if count.isdigit() else None)


@endpoint("metrics")
async def metrics(request: Request) -> Response:
    state: ProxyState = request.app.state.proxy
    mode = state.settings.metrics
    if mode == "off":
        raise ProxyError(404, f"no route {request.url.path}", code="not_found")
    if mode == "key":
        _tenant(request)
    return PlainTextResponse(state.metrics.render(), media_type="text/plain; version=0.0.4")


async def ui_page(request: Request) -> Response:
    return FileResponse(STATIC / "index.html")


@endpoint("ui_conversations")
async def ui_conversations(request: Request) -> Response:
    state: ProxyState = request.app.state.proxy
    tenant = _tenant(request)
    rows = await state.service._run(inspector.conversations, state.store, tenant, time.time())
    return JSONResponse({"tenant": tenant, "conversations": rows})


@endpoint("ui_conversation")
async def ui_conversation(request: Request) -> Response:
    state: ProxyState = request.app.state.proxy
    tenant = _tenant(request)
    cid = check_conversation_id(str(request.path_params["cid"]))
    try:
        data = await state.service._run(inspector.conversation, state.store, tenant, cid)
    except ConversationNotFound:
        raise ProxyError(404, "no such conversation", code="conversation_not_found") from None
    return JSONResponse(data)


@endpoint("delete_conversation")
async def delete_conversation(request: Request) -> Response:
    """``DELETE /v1/conversations/{cid}``: the caller's tenant's conversation, gone from
    the store and this worker's caches (OpenAI's ``conversation.deleted`` shape)."""
    state: ProxyState = request.app.state.proxy
    tenant = _tenant(request)
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

    from copage.server.formats.routes import routes as format_routes

    routes = [
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        *format_routes(),
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
