"""The endpoints of the other client APIs: ``POST /v1/responses`` and ``POST /v1/messages``.

Each handler parses its format into a Chat Completions call
(:func:`copage.server.request.parse_call`), runs the one service's turn
(:meth:`copage.server.service.ProxyService.turn`, streamed or consumed whole)
and renders the turn's events in its format, errors included. Keys, tenants,
idempotency, limits and the browser guard are the Chat Completions endpoint's.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from copage.core.types import Turn as StoredTurn
from copage.memory import PagedMemory
from copage.server.app import (
    CONV_HEADER,
    INLINE_BODY,
    ProxyState,
    _ask,
    _body,
    _caller,
    _error,
    _tenant,
    proxy_error,
)
from copage.server.body import BodyError, decode, parse_body
from copage.server.callers import Caller, caller
from copage.server.error_body import ProxyError, bad_request
from copage.server.formats import messages as anthropic
from copage.server.formats import responses as oai
from copage.server.plan import At, last_rq
from copage.server.proxy_loop import closing
from copage.server.recognise import RQ, Ask, answer_of, is_retry
from copage.server.request import (
    USER_HEADER,
    ChatCall,
    Message,
    check_conversation_id,
    parse_call,
)
from copage.server.service import SMALL, Finished, Opened, TurnResult
from copage.server.streaming import ClientGone, EventStreamResponse, Renderer, TurnStream
from copage.server.transcript import chain
from copage.session.opening import read
from copage.stores.protocol import ConversationNotFound, PageStore

log = logging.getLogger("copage.server")
Handler = Callable[[Request], Awaitable[Response]]
ErrorBody = Callable[[ProxyError, Callable[[str], str]], dict[str, Any]]


def _openai_body(e: ProxyError, clean: Callable[[str], str]) -> dict[str, Any]:
    return e.body(clean)


def endpoint(name: str, error_body: ErrorBody) -> Callable[[Handler], Handler]:
    """Wrap a handler: failures answered in the format's error shape; requests counted."""

    def wrap(fn: Handler) -> Handler:
        async def handler(request: Request) -> Response:
            state: ProxyState = request.app.state.proxy
            try:
                response = await fn(request)
            except Exception as e:  # noqa: BLE001 - every failure gets a formatted body
                error = proxy_error(e, name)
                response = (_error(error, state) if error_body is _openai_body else
                            JSONResponse(error_body(error, state.redact), status_code=error.status,
                                         headers=error.headers))
            state.metrics.inc("copage_requests_total", endpoint=name,
                              status=str(response.status_code))
            return response

        return handler

    return wrap


@dataclass(slots=True)
class Turn:
    """A parsed request ready to run: the call and the conversation it names (if any)."""

    call: ChatCall
    conversation_id: str | None


async def _run(request: Request, state: ProxyState, who: Caller, turn: Turn,
               output_of: Callable[[Opened], Renderer],
               whole: Callable[[Any, TurnResult], dict[str, Any]],
               error_event: Callable[[ProxyError, Callable[[str], str]], str],
               name: str, at: At | None = None) -> Response:
    """Run the turn; the streamed or the whole response, rendered by ``output_of``'s renderer."""
    call = turn.call
    events = state.service.turn(who.tenant, call, turn.conversation_id, _ask(request),
                                small=len(call.raw) <= SMALL, stream=call.stream,
                                upstream_key=who.upstream_key, at=at)
    if call.stream:
        stream = TurnStream(events, request.receive)
        try:
            opened, head = await stream.head()
        except ClientGone:
            await stream.close()
            return Response(status_code=499)
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


async def _json(request: Request, state: ProxyState) -> dict[str, Any]:
    """The body as a JSON object (a large one parsed off the event loop), or a 400."""
    raw = await _body(request, state.settings.max_body_bytes)

    def parse() -> dict[str, Any]:
        try:
            return parse_body(decode(raw)).data
        except BodyError as e:
            raise bad_request(str(e), "invalid_json") from None

    return parse() if len(raw) <= INLINE_BODY else await state.service._run(parse)


def _header(request: Request) -> str | None:
    header = request.headers.get(CONV_HEADER)
    return check_conversation_id(header.strip()) if header is not None else None


# ------------------------------------------------------------------ Responses
@endpoint("responses", _openai_body)
async def create_response(request: Request) -> Response:
    state: ProxyState = request.app.state.proxy
    s = state.settings
    who = _caller(request)
    tenant = who.tenant
    data = await _json(request, state)
    req = oai.to_chat(data)
    call = parse_call(req.chat, max_messages=s.max_messages, max_tools=s.max_tools,
                      user=request.headers.get(USER_HEADER))
    cid = _header(request)
    at: At | None = None
    if req.previous is not None:
        if cid is not None and cid != req.previous.conversation_id:
            raise ProxyError(400, f"{CONV_HEADER} names another conversation than "
                             "previous_response_id", code="conversation_mismatch",
                             param="previous_response_id")
        ask = replace(_ask(request), now=state.service.clock())
        route = await state.service._run(_route, state, tenant, req.previous, call, ask)
        if route.history is None:
            cid = req.previous.conversation_id
            at = _at(req.previous, call, ask, state.service.idempotency_window)
        else:  # a fork: the history up to that response, then the new input
            call = parse_call({**req.chat, "messages": route.history}, max_tools=s.max_tools,
                              user=request.headers.get(USER_HEADER))
            cid = None

    def whole(output: Any, result: TurnResult) -> dict[str, Any]:
        return dict(output.whole(result))

    outputs: list[oai.Output] = []

    def made(opened: Opened) -> oai.Output:
        outputs.append(oai.Output(opened, req, model=opened.model or call.model or ""))
        return outputs[-1]

    def error_event(error: ProxyError, clean: Callable[[str], str]) -> str:
        return outputs[-1].error(error, clean) if outputs else oai.error_event(error, clean)

    return await _run(request, state, who, Turn(call, cid), made, whole, error_event,
                      "responses", at)


@dataclass(frozen=True, slots=True)
class _Route:
    """Where a request continuing ``previous_response_id`` goes: that conversation
    (``history`` None: send only the new input), or a new branch holding ``history``."""

    history: list[dict[str, Any]] | None


def _route(state: ProxyState, tenant: str, ref: oai.ResponseId, call: ChatCall, ask: Ask
           ) -> _Route:
    """The latest answer of its conversation by one index lookup (the chain through the
    last turn's request is the index's ``prev``), else by reading the conversation."""
    try:
        latest = state.index.find_prev(tenant, ref.point) == ref.conversation_id
    except Exception as e:  # noqa: BLE001 - the index is a lookup aid: read the store
        log.warning("transcript index lookup failed (%s)", type(e).__name__)
        latest = False
    if latest:
        return _Route(None)
    return _locate(state.store, tenant, ref, call, ask, state.service.idempotency_window)


def _at(ref: oai.ResponseId, call: ChatCall, ask: Ask, window: float) -> At:
    """The check, under the conversation's lock, of a request routed to continue it:
    ``ref`` is still its latest answer (or this is a retry of the turn after it), else
    the branch to start; the conversation gone: not found, as for an unknown id."""
    def check(mem: PagedMemory | None) -> tuple[Message, ...] | None:
        if mem is None:
            raise oai.not_found(str(ref))
        rq = last_rq(mem)
        if rq is not None and oai.point_digest(str(rq.get("prev") or "")) == ref.point:
            return None
        return _place(mem, ref, call, ask, window)

    return check


def _locate(store: PageStore, tenant: str, ref: oai.ResponseId, call: ChatCall, ask: Ask,
            window: float) -> _Route:
    """Find the response's point in its conversation (see module docstring of
    :mod:`copage.server.formats.responses`)."""
    try:
        mem = read(store, ref.conversation_id, tenant=tenant)
    except ConversationNotFound:
        raise oai.not_found(str(ref)) from None
    branch = _place(mem, ref, call, ask, window)
    return _Route(None if branch is None else [_chat_dict(m) for m in branch])


def _place(mem: PagedMemory, ref: oai.ResponseId, call: ChatCall, ask: Ask, window: float
           ) -> tuple[Message, ...] | None:
    """The latest answer: continue the conversation (None); the one before it asked
    again as a retry: the conversation too (the service answers from the store); an
    older one: the messages of a fork."""
    turns = mem.turns
    at = _answer_at(turns, ref)
    if at is None:
        raise oai.not_found(str(ref))
    if at == len(turns) - 1:
        return None
    new = call.messages
    last = turns[-1].meta.get(RQ)
    head = str(turns[at].meta.get("h") or "")
    if (isinstance(last, Mapping) and chain(new, head)[-1] == last.get("prev")
            and is_retry(last, call, ask, window)):
        return None
    system = [m for m in new if m.role == "system"][:1] or (
        [Message("system", mem.system)] if mem.system is not None else [])
    before = [answer_of(t) for t in turns[: at + 1]]
    rest = [m for m in new if m.role != "system"]
    return (*system, *before, *rest)


def _answer_at(turns: Sequence[StoredTurn], ref: oai.ResponseId) -> int | None:
    """The index of the answer turn ``ref`` names (the last one, if it was asked twice)."""
    return next((i for i in range(len(turns) - 1, -1, -1) if turns[i].role == "assistant"
                 and isinstance(rq := turns[i].meta.get(RQ), Mapping)
                 and oai.point_digest(str(rq.get("prev") or "")) == ref.point), None)


@endpoint("responses", _openai_body)
async def retrieve_response(request: Request) -> Response:
    """``GET /v1/responses/{id}``: a stored response of the caller's tenant, else a 404."""
    state: ProxyState = request.app.state.proxy
    tenant = _tenant(request)
    rid = str(request.path_params["rid"])
    try:
        ref = oai.ResponseId.parse(rid)
    except ProxyError:
        raise oai.missing(rid) from None
    if not ref.stored:
        raise oai.missing(rid)
    return JSONResponse(await state.service._run(_stored, state.store, tenant, ref, rid))


def _stored(store: PageStore, tenant: str, ref: oai.ResponseId, rid: str) -> dict[str, Any]:
    try:
        mem = read(store, ref.conversation_id, tenant=tenant)
    except ConversationNotFound:
        raise oai.missing(rid) from None
    turns = mem.turns
    at = _answer_at(turns, ref)
    if at is None:
        raise oai.missing(rid)
    turn = turns[at]
    calls = [{"id": c.id, "function": {"name": c.name, "arguments": c.arguments}}
             for c in turn.tool_calls]
    return oai.stored_response(rid, turn.text, calls, turn.meta[RQ])


def _chat_dict(m: Message) -> dict[str, Any]:
    d: dict[str, Any] = {"role": m.role, "content": m.text}
    if m.tool_calls:
        d["tool_calls"] = [dict(c) for c in m.tool_calls]
    if m.tool_call_id is not None:
        d["tool_call_id"] = m.tool_call_id
    return d


# ------------------------------------------------------------------ Messages
def _anthropic_caller(request: Request) -> Caller:
    state: ProxyState = request.app.state.proxy
    key = request.headers.get("x-api-key")
    auth = request.headers.get("authorization") or (f"Bearer {key}" if key else None)
    found = caller(state.settings, state.keys, state.client_keys, auth)
    if found is None:
        raise ProxyError(401, "invalid or missing proxy API key (x-api-key: KEY, or "
                         "Authorization: Bearer KEY)", type="authentication_error",
                         code="invalid_api_key")
    return found


@endpoint("messages", anthropic.error_body)
async def create_message(request: Request) -> Response:
    state: ProxyState = request.app.state.proxy
    s = state.settings
    who = _anthropic_caller(request)
    data = await _json(request, state)
    call = parse_call(anthropic.to_chat(data), max_messages=s.max_messages,
                      max_tools=s.max_tools, user=request.headers.get(USER_HEADER))

    def output_of(opened: Opened) -> anthropic.Output:
        return anthropic.Output(opened.model or call.model or "")

    def whole(output: Any, result: TurnResult) -> dict[str, Any]:
        return dict(output.message(result.outcome))

    return await _run(request, state, who, Turn(call, _header(request)), output_of, whole,
                      anthropic.error_event, "messages")


def routes() -> list[Route]:
    """The routes of the other client APIs (added to the app by ``create_app``)."""
    return [Route("/v1/responses", create_response, methods=["POST"]),
            Route("/v1/responses/{rid}", retrieve_response, methods=["GET"]),
            Route("/v1/messages", create_message, methods=["POST"])]

