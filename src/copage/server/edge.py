"""The HTTP edge every wire format shares: state, errors, callers, bodies, one runner.

Each format module in :mod:`copage.server.formats` (Chat Completions, Responses,
Anthropic Messages) parses its body into a Chat Completions call and renders the
turn's events in its own shape; everything else about a request is here, once:

- :class:`ProxyState`: what the handlers share (built once per worker process);
- :func:`endpoint`: wraps a handler so that every failure is answered in the
  format's own error body (:func:`proxy_error` maps it) and requests are counted;
- :func:`caller_of`, :func:`conversation_header`, :func:`ask_of`: the caller and
  tenant behind a key, the ``X-Copage-Conversation`` header, idempotency;
- :func:`read_body`: the body, parsed once, reusing the known prefix of a
  resent history (:mod:`copage.server.body`), and the one "small body" rule;
- :func:`run_turn`: the service's turn, streamed as server-sent events or
  consumed whole, rendered by the format's renderer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from copage.core.dense_rank import DenseRanker
from copage.llm.errors import ModelError
from copage.server.body import Body, BodyError, decode, match_known, parse_body
from copage.server.callers import Caller, ClientKeys, caller
from copage.server.error_body import ProxyError, from_model_error
from copage.server.events import Finished, Opened, TurnResult
from copage.server.logs import Redactor
from copage.server.metrics import Metrics
from copage.server.plan import At
from copage.server.proxy_loop import closing
from copage.server.recognise import Ask
from copage.server.request import ChatCall, check_conversation_id
from copage.server.service import ProxyService
from copage.server.settings import ServeSettings
from copage.server.streaming import (
    ClientGone,
    ErrorEvent,
    EventStreamResponse,
    Renderer,
    TurnStream,
)
from copage.server.transcript import TranscriptIndex
from copage.server.upstream import Upstream
from copage.session.auth import KeyRing
from copage.stores.protocol import PageStore, StoreError

log = logging.getLogger("copage.server")
CONV_HEADER = "X-Copage-Conversation"
IDEMPOTENCY_HEADER = "Idempotency-Key"
#: A body whose new part (after a known prefix) is at most this many characters is
#: "small": parsed on the event loop, and its turn's store work may run there too
#: (the service also counts its messages); a larger one is parsed in the pool.
INLINE_BODY = 256 * 1024
Handler = Callable[[Request], Awaitable[Response]]
ErrorBody = Callable[[ProxyError, Callable[[str], str]], dict[str, Any]]


class ProxyState:
    """Everything the handlers share (built once per worker process)."""

    def __init__(self, settings: ServeSettings, store: PageStore, index: TranscriptIndex,
                 upstream: Upstream) -> None:
        self.settings, self.store, self.index, self.upstream = settings, store, index, upstream
        self.keys = KeyRing(settings.keys)
        self.metrics = Metrics()
        self.executor = ThreadPoolExecutor(max_workers=64, thread_name_prefix="copage-store")
        self.redact = Redactor(settings.secrets(), self.keys.digests)
        #: Clients' own keys (``--upstream-key client``) by digest, for :func:`caller_of`.
        self.client_keys = ClientKeys(self.redact)
        self.service = ProxyService(
            store=store, index=index, upstream=upstream, paging=settings.paging,
            metrics=self.metrics, executor=self.executor, max_recalls=settings.max_recalls,
            cache_size=settings.cache_conversations, lock_timeout=settings.lock_timeout,
            idempotency_window=settings.idempotency_window,
            recall_mode=settings.recall_mode, speculative_tokens=settings.speculative_tokens,
            dense=dense_ranker(settings.dense),
        )


def dense_ranker(setting: str | None) -> DenseRanker | None:
    """The fill's meaning channel for ``ServeSettings.dense`` (None: copage's default, on
    when the model's files are installed; ``off``: none), its embeddings kept in
    copage.dense's default cache file."""
    from copage.dense.default_channel import default_ranker

    return default_ranker(setting, cache=True)


def state_of(request: Request) -> ProxyState:
    """The worker's :class:`ProxyState`."""
    state: ProxyState = request.app.state.proxy
    return state


def openai_body(e: ProxyError, clean: Callable[[str], str]) -> dict[str, Any]:
    """OpenAI's error body (Chat Completions, Responses and every other route)."""
    return e.body(clean)


def proxy_error(exc: Exception, name: str) -> ProxyError:
    """The proxy error a failure is answered with (logged when unexpected)."""
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


def endpoint(name: str, error_body: ErrorBody = openai_body) -> Callable[[Handler], Handler]:
    """Wrap a handler: failures answered in the format's error body; requests counted."""

    def wrap(fn: Handler) -> Handler:
        async def handler(request: Request) -> Response:
            state = state_of(request)
            try:
                response = await fn(request)
            except Exception as e:  # noqa: BLE001 - every failure gets a formatted body
                error = proxy_error(e, name)
                response = JSONResponse(error_body(error, state.redact),
                                        status_code=error.status, headers=error.headers)
            state.metrics.inc("copage_requests_total", endpoint=name,
                              status=str(response.status_code))
            return response

        return handler

    return wrap


REFUSED = "invalid or missing proxy API key (Authorization: Bearer KEY)"
REFUSED_CLIENT = ("missing API key: this proxy passes your own upstream key on "
                  "(Authorization: Bearer KEY)")


def caller_of(request: Request) -> Caller:
    """The caller (tenant and upstream key) behind ``Authorization: Bearer KEY``, or a 401."""
    return caller_for(request, request.headers.get("authorization"))


def caller_for(request: Request, authorization: str | None, refused: str | None = None
               ) -> Caller:
    """The caller presenting ``authorization`` (a format's own key header, as a bearer
    value), or a 401 with ``refused`` (default: the message naming ``Authorization``)."""
    state = state_of(request)
    found = caller(state.settings, state.keys, state.client_keys, authorization)
    if found is None:
        message = refused or (REFUSED_CLIENT if state.settings.client_key else REFUSED)
        raise ProxyError(401, message, type="authentication_error", code="invalid_api_key")
    return found


def tenant_of(request: Request) -> str:
    """The tenant of the request's key (a 401 without a valid one)."""
    return caller_of(request).tenant


def conversation_header(request: Request) -> str | None:
    """The ``X-Copage-Conversation`` header's conversation id (a 400 if malformed)."""
    header = request.headers.get(CONV_HEADER)
    return check_conversation_id(header.strip()) if header is not None else None


def ask_of(request: Request) -> Ask:
    """How the request asks: its ``Idempotency-Key`` and the SDK's retry counter."""
    key = request.headers.get(IDEMPOTENCY_HEADER)
    if key is not None and not 1 <= len(key.strip()) <= 255:
        raise ProxyError(400, "Idempotency-Key must be 1-255 characters",
                         code="invalid_idempotency_key")
    count = request.headers.get("x-stainless-retry-count", "")
    return Ask(key=key.strip() if key is not None else None,
               retry_count=int(count) if count.isdigit() else None)


async def _raw(request: Request, limit: int) -> bytes:
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


@dataclass(frozen=True, slots=True)
class Incoming:
    """A parsed request body and how the turn treats it.

    Attributes:
        body: the parsed body (its ``data`` is what the format's parser reads).
        small: the one "small body" rule: the new part of the body (after the known
            prefix of a resent history) is at most :data:`INLINE_BODY` characters.
        via: the conversation whose last request's prefix the body continued.
    """

    body: Body
    small: bool
    via: str | None


async def read_body(request: Request, tenant: str, *, header_first: bool = False) -> Incoming:
    """The request's body, parsed once (a 413 over the limit, a 400 if not a JSON object).

    A body that resends a history this worker saw (the named conversation's, else a
    recent one starting alike) has its known prefix's messages skipped, not parsed
    again (:func:`copage.server.body.match_known`); a large new part is parsed in the
    pool, off the event loop. ``header_first``: a malformed conversation header is
    refused before the body is parsed (Chat Completions' order of errors; the other
    formats check the header after parsing theirs)."""
    state = state_of(request)
    raw = await _raw(request, state.settings.max_body_bytes)
    try:
        cid = conversation_header(request)
    except ProxyError:
        if header_first:
            raise
        cid = None  # the format's handler answers a malformed header
    try:
        text = decode(raw)
        known = state.service.known(tenant, cid, text)
        match = match_known(text, known) if known else None
        small = len(text) - (len(match.prefix) if match else 0) <= INLINE_BODY
        body = parse_body(text, match) if small else await state.service.run(
            parse_body, text, match)
    except BodyError as e:
        raise ProxyError(400, str(e), code="invalid_json") from None
    via = known.get(body.continues) if body.continues is not None else None
    return Incoming(body, small, via)


async def run_turn(request: Request, who: Caller, call: ChatCall, cid: str | None,
                   incoming: Incoming, *, name: str, output_of: Callable[[Opened], Renderer],
                   whole: Callable[[Any, TurnResult], dict[str, Any]],
                   error_event: ErrorEvent, at: At | None = None) -> Response:
    """Run the turn: streamed (its events as server-sent events, errors until the first
    visible event as HTTP errors, later ones as ``error_event``) or whole (the events
    fed to the same renderer, then ``whole(renderer, result)`` as the JSON body)."""
    state = state_of(request)
    events = state.service.turn(who.tenant, call, cid, ask_of(request), small=incoming.small,
                                via=incoming.via, stream=call.stream,
                                upstream_key=who.upstream_key, at=at)
    if call.stream:
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
        return EventStreamResponse(
            stream, head, output_of(opened), error_of=lambda e: proxy_error(e, name),
            clean=state.redact, metrics=state.metrics, error_event=error_event,
            headers={CONV_HEADER: opened.conversation_id})
    output: Renderer | None = None
    result: TurnResult | None = None
    async with closing(events) as it:
        async for event in it:
            if isinstance(event, Opened):
                output = output_of(event)
            elif isinstance(event, Finished):
                result = event.result
            elif output is not None:
                output.event(event)
    assert output is not None and result is not None, "a turn opens and finishes"
    headers = {CONV_HEADER: result.conversation_id,
               "X-Copage-Stats": json.dumps(result.stats, separators=(",", ":"))}
    return JSONResponse(whole(output, result), headers=headers)
