"""LangChain's model handler as the recall engine's :data:`~copage.session.engine.Caller`.

The middleware's model call is one run of :func:`copage.session.engine.run_recall_loop`,
the loop of ``PagedChat`` and the proxy. :class:`HandlerCall` stands between the two:

* the engine's :class:`~copage.llm.model_types.ChatRequest` becomes the agent's
  ``ModelRequest`` overridden with the paged view: the engine's first messages stand
  for the view's own message objects (the system text, then the visible messages and,
  in modes with the speculative step, the fill just before the latest human message:
  :func:`engine_messages`, :func:`filled_view`) and are replaced by them; the
  messages the engine appends (the model's recall calls and their results) become an ``AIMessage`` (the model's own reply object when its calls
  are exactly the native recall calls) and ``ToolMessage`` s. The tools are the agent's,
  then the recall tool when the engine offers it; ``tool_choice="none"`` (the request
  after the cap) is passed on, otherwise the agent's own choice is kept;
* the handler's reply (``AIMessage``, ``ModelResponse`` or ``ExtendedModelResponse``)
  becomes stream events: its text, its tool calls, then ``done`` with usage and
  finish reason (:func:`copage.llm.model_types.events_of`).

Each model call runs inside :func:`~copage.adapters.langchain.stream.held_stream`; the
held round is dropped when the engine calls the model again (its recalls were served
inside) and released without its recall calls by :meth:`HandlerCall.result` (the
round that ends the model call).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain.agents.middleware import ModelRequest, ModelResponse
from langchain.agents.middleware.types import ExtendedModelResponse
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages import ToolCall as LcToolCall

from copage.adapters.langchain.convert import without_calls
from copage.adapters.langchain.stream import HeldStream, held_stream
from copage.core.types import ToolCall
from copage.llm.model_types import ChatRequest, ChatResponse, Message, StreamEvent, Usage, events_of
from copage.session.engine import LoopOutcome
from copage.session.speculate import Filled, Speculation
from copage.session.textfilter import recall_stub


@dataclass(frozen=True, slots=True)
class View:
    """The paged view of one model call."""

    system: str  # copage's system text ("" while no page is evicted)
    messages: list[AnyMessage]  # the speculative fill included, where the engine put it
    tool: dict[str, Any] | None  # the recall tool (modes with ``tool``, once a page is evicted)
    tool_name: str
    speculation: Speculation | None = None  # the speculative step's plan (modes with it)


def engine_messages(system: str, messages: Sequence[BaseMessage]) -> list[Message]:
    """The engine's form of a view: the system text, then each message's role and text."""
    return [{"role": "system", "content": system},
            *({"role": _role(m), "content": m.text} for m in messages)]


def filled_view(messages: Sequence[AnyMessage], sent: Sequence[Message],
                filled: Filled) -> list[AnyMessage]:
    """``messages`` (whose engine form is ``sent``, :func:`engine_messages`) with the
    speculative fill where :func:`copage.session.speculate.speculate` put it in ``sent``
    (``filled``), as a ``HumanMessage``; unchanged when nothing was paged in."""
    spec, out = filled.speculation, filled.messages
    if not spec.paged_in:
        return list(messages)
    if len(out) != len(sent) + 1:
        raise AssertionError("the speculative fill is not one message added to the view")
    at = next((i for i, (a, b) in enumerate(zip(out, sent)) if a != b), len(sent))
    return [*messages[:at - 1], HumanMessage(content=spec.text), *messages[at - 1:]]


class HandlerCall:
    """One model call of the agent, as the engine's caller (see module docstring).

    :attr:`messages` and :attr:`recall_tools` are what the engine is given;
    :meth:`sync` or :meth:`async_` is its caller; :meth:`result` the agent's answer.
    """

    def __init__(self, request: ModelRequest[Any], view: View) -> None:
        self.base = request
        self.take(view)

    def take(self, view: View) -> None:
        """Stand for ``view`` (at the start, or made again before any reply: the
        conversation paged down after the model refused the request for its length)."""
        self.view = view
        self.name = view.tool_name
        parts = [p for p in (self.base.system_prompt, view.system) if p]
        system = SystemMessage(content="\n\n".join(parts)) if parts else None
        self.system = system
        # the engine's first messages stand for the system message and the view's messages
        self.messages: list[Message] = engine_messages(system.text if system else "",
                                                       view.messages)
        self.recall_tools: list[dict[str, Any]] = [view.tool] if view.tool is not None else []
        self.text_tools = self.recall_tools or [recall_stub(self.name)]
        self.extra: list[AnyMessage] = []  # the engine's appended messages, converted
        self.last: Any = None  # the latest reply
        self.last_ai: AIMessage | None = None
        self.last_text = ""
        self.held: HeldStream | None = None
        self.streamed = ""  # the text streamed by earlier rounds

    # ----------------------------------------------------------- the engine's caller
    def sync(self, handler: Callable[[ModelRequest[Any]], Any]
             ) -> Callable[[ChatRequest], AsyncIterator[StreamEvent]]:
        """A caller calling the blocking ``handler`` (it never suspends)."""
        async def call(request: ChatRequest) -> AsyncIterator[StreamEvent]:
            lc = self._begin(request)
            with held_stream(self.name, self.text_tools, self.streamed) as held:
                reply = handler(lc)
            for event in self._end(reply, held):
                yield event
        return call

    def async_(self, handler: Callable[[ModelRequest[Any]], Awaitable[Any]]
               ) -> Callable[[ChatRequest], AsyncIterator[StreamEvent]]:
        """A caller awaiting ``handler``."""
        async def call(request: ChatRequest) -> AsyncIterator[StreamEvent]:
            lc = self._begin(request)
            with held_stream(self.name, self.text_tools, self.streamed) as held:
                reply = await handler(lc)
            for event in self._end(reply, held):
                yield event
        return call

    def _begin(self, request: ChatRequest) -> ModelRequest[Any]:
        if self.held is not None:  # the engine calls again: the last round was served inside
            self.held.finish(keep=False)
            self.streamed += self.held.shown
            self.held = None
        return self._request(request)

    def _end(self, reply: Any, held: HeldStream | None) -> list[StreamEvent]:
        self.held, self.last = held, reply
        self.last_ai = ai = _ai_of(reply)
        self.last_text = "" if ai is None else (
            ai.content if isinstance(ai.content, str) else ai.text)
        return events_of(_response(ai, self.last_text))

    def _request(self, request: ChatRequest) -> ModelRequest[Any]:
        base = len(self.messages)
        sent = request.messages
        if len(sent) < base or any(a is not b for a, b in zip(sent, self.messages)):
            raise AssertionError("the engine's request does not start with the paged view")
        self.extra.extend(self._converted(sent[base + len(self.extra):]))
        tools = list(self.base.tools)
        offered = any(t.get("function", {}).get("name") == self.name for t in request.tools)
        if offered and self.view.tool is not None:
            tools.append(self.view.tool)
        choice = "none" if request.tool_choice == "none" else self.base.tool_choice
        return self.base.override(system_message=self.system, tools=tools, tool_choice=choice,
                                  messages=[*self.view.messages, *self.extra])

    def _converted(self, added: Sequence[Message]) -> list[AnyMessage]:
        """The engine's appended messages (a reply's recall calls, their results)."""
        out: list[AnyMessage] = []
        for m in added:
            if m["role"] == "assistant":
                calls = [_lc_call(c) for c in m.get("tool_calls") or ()]
                ai = self.last_ai  # the reply these calls came from: kept when unchanged
                if ai is not None and _call_keys(ai.tool_calls) == _call_keys(calls):
                    out.append(ai)
                else:
                    out.append(AIMessage(content=str(m.get("content") or ""), tool_calls=calls))
            else:
                out.append(ToolMessage(content=str(m.get("content") or ""), name=self.name,
                                       tool_call_id=str(m.get("tool_call_id") or "")))
        return out

    # ----------------------------------------------------------- the end of the call
    def result(self, outcome: LoopOutcome) -> Any:
        """The agent's answer: the last reply without recall calls, its text the
        engine's answer when that differs (call-shaped text left out, text written
        before a recall kept); its held stream released the same way."""
        if self.held is not None:
            self.held.finish(keep=True)
            self.held = None
        rest = None if outcome.text == self.last_text.strip() else outcome.text
        return _strip_recalls(self.last, self.name, rest)


def _role(m: BaseMessage) -> str:
    if isinstance(m, AIMessage):
        return "assistant"
    if isinstance(m, ToolMessage):
        return "tool"
    return "system" if isinstance(m, SystemMessage) else "user"


def _lc_call(raw: Mapping[str, Any]) -> LcToolCall:
    fn = raw.get("function") or {}
    try:
        args = json.loads(fn.get("arguments") or "{}")
    except ValueError:
        args = {}
    return LcToolCall(name=str(fn.get("name") or ""), id=str(raw.get("id") or ""),
                      args=args if isinstance(args, dict) else {}, type="tool_call")


def _call_keys(calls: Sequence[LcToolCall]) -> list[tuple[str, str]]:
    return [(str(c.get("id") or ""), c["name"]) for c in calls]


def _response(ai: AIMessage | None, text: str) -> ChatResponse:
    """A LangChain reply as the engine's :class:`ChatResponse`."""
    if ai is None:
        return ChatResponse("")
    calls = tuple(ToolCall(str(c.get("id") or ""), c["name"],
                           json.dumps(c.get("args") or {}, ensure_ascii=False))
                  for c in ai.tool_calls)
    usage = ai.usage_metadata
    tokens = Usage(usage["input_tokens"], usage["output_tokens"]) if usage else Usage()
    finish = ai.response_metadata.get("finish_reason")
    return ChatResponse(
        text, calls, finish_reason=str(finish) if finish else ("tool_calls" if calls else "stop"),
        usage=tokens,
        model=str(ai.response_metadata.get("model_name") or ""), raw=ai)


def _ai_of(response: Any) -> AIMessage | None:
    if isinstance(response, ExtendedModelResponse):
        response = response.model_response
    if isinstance(response, AIMessage):
        return response
    if isinstance(response, ModelResponse):
        return next((m for m in reversed(response.result) if isinstance(m, AIMessage)), None)
    return None


def _strip_recalls(response: Any, name: str, rest: str | None = None) -> Any:
    """``response`` without recall calls (they were served here); with ``rest`` as the
    text of its last AI message when the engine's answer differs from it."""
    if isinstance(response, ExtendedModelResponse):
        return ExtendedModelResponse(_strip_recalls(response.model_response, name, rest),
                                     response.command)
    if isinstance(response, AIMessage):
        out = without_calls(response, name)
        return out if rest is None else out.model_copy(update={"content": rest})
    if isinstance(response, ModelResponse):
        last = next((i for i in range(len(response.result) - 1, -1, -1)
                     if isinstance(response.result[i], AIMessage)), None)
        return ModelResponse([_strip_recalls(m, name, rest if i == last else None)
                              if isinstance(m, AIMessage) else m
                              for i, m in enumerate(response.result)],
                             response.structured_response)
    return response
