"""The proxy's use of the one recall loop (:mod:`copage.session.engine`).

Like :class:`copage.session.PagedChat`, but the client owns the conversation's
tools: copage's recall tool is offered beside the client's; recall calls are run
here (``PagedMemory.recall_result`` through :func:`copage.session.tools.execute`)
and never reach the client; any other tool call ends the turn and goes back to
the client. Usage is summed over every upstream call of the turn.

:func:`loop_events` is the streaming form (the engine's events: text deltas,
client tool-call deltas, recalls served, the end); :func:`run_loop` consumes it
and returns the :class:`Outcome` the non-streaming responses are built from.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field

from copage.core.types import ToolCall
from copage.llm.errors import BadResponse
from copage.llm.types import ChatModel, ChatRequest, ChatResponse, StreamEvent, events_of
from copage.memory import PagedMemory
from copage.server.request import ChatCall
from copage.session.engine import LoopEnd, LoopEvent, LoopSettings, run_recall_loop
from copage.session.report import RecallRecord

Complete = Callable[[ChatModel, ChatRequest], Awaitable[tuple[ChatResponse, float]]]
"""One upstream call: the reply and its latency in seconds."""
Stream = Callable[[ChatModel, ChatRequest], AsyncIterator[StreamEvent]]
"""One streamed upstream call (the last event carries the whole reply)."""
#: Provider label in errors a tenant may see (a model's spec can hold the upstream URL).
UPSTREAM = "upstream"


@dataclass(slots=True)
class Outcome:
    """What the turn returns to the client."""

    text: str
    tool_calls: list[ToolCall]
    finish_reason: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    latencies: list[float] = field(default_factory=list)
    recalls: list[RecallRecord] = field(default_factory=list)


def settings_for(call: ChatCall, max_recalls: int) -> LoopSettings:
    """The engine settings of a proxied request: the client's tools end the turn."""
    client_tools = () if call.tool_choice == "none" else tuple(call.tools)
    choice = call.tool_choice if call.tool_choice not in (None, "auto", "none") else None
    return LoopSettings(
        max_recalls=max_recalls, client_tools=client_tools, client_choice=choice,
        temperature=call.temperature, max_tokens=call.max_tokens, extra=call.extra,
        provider=UPSTREAM,
    )


def loop_events(
    mem: PagedMemory, model: ChatModel, call: ChatCall, upstream: Stream, *, max_recalls: int,
) -> AsyncIterator[LoopEvent]:
    """The turn as engine events (``LoopEnd`` last). ``upstream`` streams one call; every
    reply is checked for text that cannot be stored (lone surrogates) first."""
    ctx = mem.context()

    async def checked(request: ChatRequest) -> AsyncIterator[StreamEvent]:
        async for event in upstream(model, request):
            if event.response is not None:
                _check_text(event.response)
            yield event

    return run_recall_loop(mem, ctx.messages, ctx.tools, settings_for(call, max_recalls), checked)


async def run_loop(
    mem: PagedMemory, model: ChatModel, call: ChatCall, complete: Complete, *,
    max_recalls: int,
) -> Outcome:
    """Run upstream calls until the model answers or calls a client tool."""
    latencies: list[float] = []

    async def one_chunk(m: ChatModel, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        response, latency = await complete(m, request)
        latencies.append(latency)
        for event in events_of(response):
            yield event

    async for event in loop_events(mem, model, call, one_chunk, max_recalls=max_recalls):
        if isinstance(event, LoopEnd):
            return outcome_of(event, model, latencies)
    raise BadResponse(UPSTREAM, "the recall loop ended without an outcome")


def outcome_of(end: LoopEnd, model: ChatModel, latencies: list[float]) -> Outcome:
    """The proxy's :class:`Outcome` of an engine outcome."""
    o = end.outcome
    return Outcome(
        text=o.text, tool_calls=list(o.tool_calls), finish_reason=o.finish_reason,
        model=o.response.model or model.name, prompt_tokens=sum(o.usage.prompt_tokens),
        completion_tokens=o.usage.completion_tokens, calls=o.usage.calls,
        latencies=list(latencies), recalls=list(o.records),
    )


def _check_text(response: ChatResponse) -> None:
    """A reply holding a lone surrogate cannot be stored or sent as UTF-8: a bad reply."""
    parts = [response.text, *(c.arguments for c in response.tool_calls),
             *(c.name for c in response.tool_calls), *(c.id for c in response.tool_calls)]
    for part in parts:
        try:
            str(part).encode("utf-8")
        except UnicodeEncodeError:
            raise BadResponse(UPSTREAM, "the reply contains a lone surrogate "
                              "(invalid Unicode text)") from None
