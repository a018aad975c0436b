"""The OpenAI Responses API (``POST /v1/responses``, ``GET /v1/responses/{id}``): endpoints.

The body is parsed by :func:`copage.server.formats.responses_wire.to_chat` into a
Chat Completions call, and the turn's events are rendered by its
:class:`~copage.server.formats.responses_wire.Output`; everything shared with the
other formats (keys, the body, the turn streamed or whole) is
:mod:`copage.server.edge`'s. A ``previous_response_id`` names a stored answer; the
service's one conversation finder (:class:`copage.server.finder.Finder`) finds it:
continue its conversation, or fork from an older answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from copage.server import edge
from copage.server.error_body import ProxyError
from copage.server.events import Opened, TurnResult
from copage.server.finder import answer_at
from copage.server.formats import responses_wire as wire
from copage.server.formats.responses_wire import ResponseId
from copage.server.plan import At
from copage.server.recognise import RQ
from copage.server.request import USER_HEADER, parse_call
from copage.session.opening import read
from copage.stores.protocol import ConversationNotFound, PageStore

__all__ = ["ResponseId", "create_response", "retrieve_response", "routes"]


@edge.endpoint("responses")
async def create_response(request: Request) -> Response:
    """``POST /v1/responses``."""
    state = edge.state_of(request)
    s = state.settings
    who = edge.caller_of(request)
    incoming = await edge.read_body(request, who.tenant)
    req = wire.to_chat(incoming.body.data)
    call = parse_call(req.chat, max_messages=s.max_messages, max_tools=s.max_tools,
                      user=request.headers.get(USER_HEADER))
    cid = edge.conversation_header(request)
    at: At | None = None
    if req.previous is not None:
        if cid is not None and cid != req.previous.conversation_id:
            raise ProxyError(400, f"{edge.CONV_HEADER} names another conversation than "
                             "previous_response_id", code="conversation_mismatch",
                             param="previous_response_id")
        ask = replace(edge.ask_of(request), now=state.service.clock())
        finder = state.service.finder
        route = await state.service.run(finder.route, who.tenant, req.previous, call, ask)
        if route.history is None:
            cid = req.previous.conversation_id
            at = finder.at(req.previous, call, ask)
        else:  # a fork: the history up to that response, then the new input
            call = parse_call({**req.chat, "messages": route.history}, max_tools=s.max_tools,
                              user=request.headers.get(USER_HEADER))
            cid = None

    outputs: list[wire.Output] = []

    def made(opened: Opened) -> wire.Output:
        outputs.append(wire.Output(opened, req, model=opened.model or call.model or ""))
        return outputs[-1]

    def whole(output: wire.Output, result: TurnResult) -> dict[str, Any]:
        return dict(output.whole(result))

    def error_event(error: ProxyError, clean: Callable[[str], str]) -> str:
        return outputs[-1].error(error, clean) if outputs else wire.error_event(error, clean)

    return await edge.run_turn(request, who, call, cid, incoming, name="responses",
                               output_of=made, whole=whole, error_event=error_event, at=at)


@edge.endpoint("responses")
async def retrieve_response(request: Request) -> Response:
    """``GET /v1/responses/{id}``: a stored response of the caller's tenant, else a 404."""
    state = edge.state_of(request)
    tenant = edge.tenant_of(request)
    rid = str(request.path_params["rid"])
    try:
        ref = ResponseId.parse(rid)
    except ProxyError:
        raise wire.missing(rid) from None
    if not ref.stored:
        raise wire.missing(rid)
    return JSONResponse(await state.service.run(_stored, state.store, tenant, ref, rid))


def _stored(store: PageStore, tenant: str, ref: ResponseId, rid: str) -> dict[str, Any]:
    try:
        mem = read(store, ref.conversation_id, tenant=tenant)
    except ConversationNotFound:
        raise wire.missing(rid) from None
    turns = mem.turns
    at = answer_at(turns, ref)
    if at is None:
        raise wire.missing(rid)
    turn = turns[at]
    calls = [{"id": c.id, "function": {"name": c.name, "arguments": c.arguments}}
             for c in turn.tool_calls]
    return wire.stored_response(rid, turn.text, calls, turn.meta[RQ])


def routes() -> list[Route]:
    """This format's routes (added to the app by ``create_app``)."""
    return [Route("/v1/responses", create_response, methods=["POST"]),
            Route("/v1/responses/{rid}", retrieve_response, methods=["GET"])]
