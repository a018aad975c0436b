"""The OpenAI Chat Completions API (``POST /v1/chat/completions``): endpoint and renderer.

The body is a Chat Completions call already (:func:`copage.server.request.parse_call`
validates it); everything shared with the other formats (keys, the body and its
known prefix, the turn streamed or whole) is :mod:`copage.server.edge`'s. The
answer is rendered from the turn's events
(:meth:`copage.server.service.ProxyService.turn`): a whole ``chat.completion``
from the committed :class:`~copage.server.proxy_loop.Outcome`, a streamed one as
``chat.completion.chunk`` server-sent events by :class:`Chunks` as the events arrive.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from copage.llm.chat_messages import tool_call_dict
from copage.server import edge
from copage.server.error_body import ProxyError
from copage.server.events import Opened, TurnResult
from copage.server.proxy_loop import Outcome
from copage.server.request import USER_HEADER, parse_call
from copage.session.engine import ClientToolDelta, TextDelta

DONE = "data: [DONE]\n\n"


@dataclass(frozen=True, slots=True)
class Envelope:
    """Id, creation time and model name shared by a completion's JSON and chunks."""

    id: str
    created: int
    model: str

    @classmethod
    def new(cls, model: str) -> Envelope:
        return cls("chatcmpl-" + secrets.token_hex(12), int(time.time()), model)


def usage(out: Outcome) -> dict[str, int]:
    """Usage summed over the turn's upstream calls."""
    return {"prompt_tokens": out.prompt_tokens, "completion_tokens": out.completion_tokens,
            "total_tokens": out.prompt_tokens + out.completion_tokens}


def message(out: Outcome) -> dict[str, Any]:
    """The assistant message returned to the client."""
    msg: dict[str, Any] = {"role": "assistant", "content": out.text if out.text or not
                           out.tool_calls else None, "refusal": None}
    if out.tool_calls:
        msg["tool_calls"] = [tool_call_dict(c) for c in out.tool_calls]
    return msg


def completion(env: Envelope, out: Outcome) -> dict[str, Any]:
    """A non-streaming ``chat.completion`` body."""
    return {
        "id": env.id, "object": "chat.completion", "created": env.created, "model": env.model,
        "choices": [{"index": 0, "message": message(out), "finish_reason": out.finish_reason,
                     "logprobs": None}],
        "usage": usage(out),
    }


def error_event(error: ProxyError, clean: Any) -> str:
    """An error after the stream began: the OpenAI error body as one SSE event (no
    ``[DONE]`` follows; the ``openai`` SDK raises it as an ``APIError``)."""
    return _data(error.body(clean))


class Chunks:
    """The SSE events of a streamed reply, made as the turn's events arrive.

    The first visible event is preceded by the role chunk; a client call's id, type
    and name are sent in its first delta only (clients concatenate repeated strings);
    :meth:`end` sends the finish chunk (carrying the turn's ``X-Copage-Stats`` values as
    ``copage_stats``), the usage chunk when asked for, and ``data: [DONE]``.
    """

    def __init__(self, env: Envelope, *, include_usage: bool) -> None:
        self.env, self.include_usage = env, include_usage
        self.started = False
        self.calls: set[int] = set()

    def event(self, event: object) -> list[str]:
        """The SSE text of one turn event (nothing for the events clients do not see)."""
        if isinstance(event, TextDelta):
            return self._start() + [self._chunk({"content": event.text})]
        if isinstance(event, ClientToolDelta):
            d = event.delta
            call: dict[str, Any] = {"index": d.index}
            fn: dict[str, Any] = {"arguments": d.arguments}
            if d.index not in self.calls:
                self.calls.add(d.index)
                call.update(id=d.id, type="function")
                fn = {"name": d.name, **fn}
            call["function"] = fn
            return self._start() + [self._chunk({"tool_calls": [call]})]
        return []

    def end(self, result: TurnResult) -> list[str]:
        """The finish chunk, the usage chunk (if asked for) and ``[DONE]``."""
        out = result.outcome
        body = self._body({}, out.finish_reason)
        body["copage_stats"] = result.stats
        events = self._start() + [_data(body)]
        if self.include_usage:
            events.append(_data({**self._head(), "choices": [], "usage": usage(out)}))
        return [*events, DONE]

    def _start(self) -> list[str]:
        if self.started:
            return []
        self.started = True
        return [self._chunk({"role": "assistant", "content": ""})]

    def _head(self) -> dict[str, Any]:
        return {"id": self.env.id, "object": "chat.completion.chunk",
                "created": self.env.created, "model": self.env.model}

    def _body(self, delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**self._head(), "choices": [{"index": 0, "delta": delta,
                                             "finish_reason": finish, "logprobs": None}]}

    def _chunk(self, delta: dict[str, Any]) -> str:
        return _data(self._body(delta))


def _data(body: dict[str, Any]) -> str:
    return f"data: {json.dumps(body, ensure_ascii=False, separators=(',', ':'))}\n\n"


@edge.endpoint("chat")
async def chat_completions(request: Request) -> Response:
    """``POST /v1/chat/completions``."""
    s = edge.state_of(request).settings
    who = edge.caller_of(request)
    incoming = await edge.read_body(request, who.tenant, header_first=True)
    cid = edge.conversation_header(request)
    call = parse_call(incoming.body.data, max_messages=s.max_messages, max_tools=s.max_tools,
                      user=request.headers.get(USER_HEADER))

    def output_of(opened: Opened) -> Chunks:
        env = Envelope.new(opened.model or call.model or "")
        return Chunks(env, include_usage=call.include_usage)

    def whole(output: Chunks, result: TurnResult) -> dict[str, Any]:
        return completion(Envelope.new(result.outcome.model or call.model or ""),
                          result.outcome)

    return await edge.run_turn(request, who, call, cid, incoming, name="chat",
                               output_of=output_of, whole=whole, error_event=error_event)


def routes() -> list[Route]:
    """This format's routes (added to the app by ``create_app``)."""
    return [Route("/v1/chat/completions", chat_completions, methods=["POST"])]
