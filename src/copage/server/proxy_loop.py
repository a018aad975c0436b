"""The proxy's use of the one recall loop (:mod:`copage.session.engine`).

Like :class:`copage.session.PagedChat`, but the client owns the conversation's
tools: copage's recall tool is offered beside the client's; recall calls are run
here (``PagedMemory.recall_result`` through :func:`copage.session.tools.execute`)
and never reach the client; any other tool call ends the turn and goes back to
the client. Usage is summed over every upstream call of the turn.

:func:`loop_events` gives the turn as the engine's events (text deltas, client
tool-call deltas, recalls served, the end), shaped as the client will see them:
the text deltas add up to exactly the stored answer (the engine strips the
answer's surrounding whitespace, so leading whitespace is dropped and trailing
whitespace held until more text follows), and every client call has its id in
its first delta, the same id as the stored call. Streamed and non-streamed
responses are both built from these events (:mod:`copage.server.service`);
only how one upstream call is made differs (streamed, or one whole reply).
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from copage.core.types import ToolCall
from copage.llm.errors import BadResponse
from copage.llm.model_types import (
    ChatModel,
    ChatRequest,
    ChatResponse,
    Message,
    StreamEvent,
    ToolCallDelta,
)
from copage.memory import PagedMemory
from copage.server.request import ChatCall
from copage.session.engine import (
    ClientToolDelta,
    LoopEnd,
    LoopEvent,
    LoopSettings,
    TextDelta,
    run_recall_loop,
)
from copage.session.modes import RecallMode
from copage.session.overflow import KnownWindows, fitted, refit
from copage.session.prepare import Prepared, prepare
from copage.session.records import RecallRecord
from copage.session.speculate import Speculator
from copage.session.trace import NULL, TurnTrace

Complete = Callable[[ChatModel, ChatRequest], Awaitable[tuple[ChatResponse, float]]]
"""One upstream call: the reply and its latency in seconds."""
Stream = Callable[[ChatModel, ChatRequest], AsyncIterator[StreamEvent]]
"""One upstream call as stream events (the last one, ``done``, carries the whole reply)."""
T = TypeVar("T")
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
    filled: list[str] = field(default_factory=list)  # pages the speculative fill showed


@asynccontextmanager
async def closing(events: AsyncIterator[T]) -> AsyncIterator[AsyncIterator[T]]:
    """``events``, closed on leaving (its ``aclose``: an async generator's cleanup runs now,
    not when it is collected; a turn rolls back at once)."""
    try:
        yield events
    finally:
        close = getattr(events, "aclose", None)
        if close is not None:
            await close()


def settings_for(call: ChatCall, max_recalls: int, *, offer_recall: bool = True) -> LoopSettings:
    """The engine settings of a proxied request: the client's tools end the turn."""
    client_tools = () if call.tool_choice == "none" else tuple(call.tools)
    choice = call.tool_choice if call.tool_choice not in (None, "auto", "none") else None
    return LoopSettings(
        max_recalls=max_recalls, offer_recall=offer_recall, client_tools=client_tools,
        client_choice=choice,
        temperature=call.temperature, max_tokens=call.max_tokens, extra=call.extra,
        provider=UPSTREAM,
    )


def loop_events(
    mem: PagedMemory, model: ChatModel, call: ChatCall, upstream: Stream, *, max_recalls: int,
    mode: RecallMode | None = None, speculator: Speculator | None = None,
    trace: TurnTrace = NULL, windows: KnownWindows | None = None,
) -> AsyncIterator[LoopEvent]:
    """The turn as engine events (``LoopEnd`` last), as the client sees them (see module
    docstring). ``upstream`` makes one call; every reply is checked for text that cannot
    be stored (lone surrogates) first.

    ``mode`` (default: the recall tool only) runs the same steps as :class:`PagedChat`
    in that mode, prepared by the one turn preparation (:func:`copage.session.prepare.prepare`):
    the speculative fill (with ``speculator``) before the latest user message, and the
    recall tool offered or not (without it, the answer-only prompt).
    The ``choose`` step is not run by the proxy (its settings refuse it). ``trace`` gets
    the fill, each upstream call and each recall (:mod:`copage.session.trace`).
    ``windows``: the models' known windows; a refusal teaches them, and a request that
    would not fit a known one is paged down before it is sent
    (:mod:`copage.session.overflow`)."""
    mode = mode or RecallMode()
    # the one turn preparation: context, the "paper" style of the mode, the fill for the
    # latest user message, the meter (what is sent, fill included)
    spec = (speculator or Speculator()) if mode.speculative else None
    window = windows.get(model.spec) if windows is not None else None
    prep = prepare(mem, offer_tool=mode.tool, speculator=spec, trace=trace, meter=window is None)
    shown = [prep]  # the request last prepared (its fill is the turn's)

    def remake() -> Prepared:  # after a page-down
        shown.append(prepare(mem, offer_tool=mode.tool, speculator=spec, trace=trace,
                             meter=False))
        return shown[-1]

    if window is not None:  # paged down before it is sent if it would not fit
        fitted(mem, window, prep, remake)

    def again(error: BaseException) -> tuple[list[Message], list[dict[str, Any]]] | None:
        if not refit(mem, error, shown[-1].messages, shown[-1].tools, known=windows,
                     model=model.spec):
            return None  # not the model's window, or nothing left to evict
        made = remake()
        return list(made.messages), [dict(t) for t in made.tools]

    async def checked(request: ChatRequest) -> AsyncIterator[StreamEvent]:
        async with closing(upstream(model, request)) as events:
            async for event in events:
                if event.response is not None:
                    _check_text(event.response)
                yield event

    return _with_fill(_as_sent(run_recall_loop(
        mem, shown[-1].messages, shown[-1].tools,
        settings_for(call, max_recalls, offer_recall=mode.tool), checked, trace=trace,
        refit=again)), shown)


@dataclass(frozen=True, slots=True)
class FilledEnd(LoopEnd):
    """The engine's last event, with the pages the turn's speculative fill showed."""

    filled: tuple[str, ...] = ()


async def _with_fill(events: AsyncIterator[LoopEvent], shown: list[Prepared]
                     ) -> AsyncIterator[LoopEvent]:
    async with closing(events):
        async for event in events:
            yield (FilledEnd(event.outcome, shown[-1].filled) if isinstance(event, LoopEnd)
                   else event)


def replay_events(out: Outcome) -> list[TextDelta | ClientToolDelta]:
    """A stored answer (a retry's) as the events of a turn: its text, its calls."""
    events: list[TextDelta | ClientToolDelta] = [TextDelta(out.text)] if out.text else []
    events += [ClientToolDelta(ToolCallDelta(i, c.id, c.name, c.arguments))
               for i, c in enumerate(out.tool_calls)]
    return events


def outcome_of(end: LoopEnd, model: ChatModel, latencies: list[float]) -> Outcome:
    """The proxy's :class:`Outcome` of an engine outcome."""
    o = end.outcome
    return Outcome(
        text=o.text, tool_calls=list(o.tool_calls), finish_reason=o.finish_reason,
        model=o.response.model or model.name, prompt_tokens=sum(o.usage.prompt_tokens),
        completion_tokens=o.usage.completion_tokens, calls=o.usage.calls,
        latencies=list(latencies), recalls=list(o.records),
        filled=list(end.filled) if isinstance(end, FilledEnd) else [],
    )


class _Trim:
    """Streams ``"".join(parts).strip()``: leading whitespace dropped, trailing held back."""

    def __init__(self) -> None:
        self.started = False
        self.held = ""

    def feed(self, text: str) -> str:
        if not self.started:
            text = text.lstrip()
            if not text:
                return ""
            self.started = True
        text = self.held + text
        shown = text.rstrip()
        self.held = text[len(shown):]
        return shown


async def _as_sent(events: AsyncIterator[LoopEvent]) -> AsyncIterator[LoopEvent]:
    trim = _Trim()
    ids: dict[int, str] = {}
    async with closing(events):
        async for event in events:
            if isinstance(event, TextDelta):
                shown = trim.feed(event.text)
                if shown:
                    yield TextDelta(shown)
            elif isinstance(event, ClientToolDelta):
                d = event.delta
                if d.index not in ids:  # a call's first delta: it carries the id
                    ids[d.index] = d.id or "call_" + secrets.token_hex(12)
                    d = replace(d, id=ids[d.index])
                yield ClientToolDelta(d)
            elif isinstance(event, LoopEnd):
                o = event.outcome
                # A call streamed without an upstream id is stored under the id sent.
                calls = tuple(replace(c, id=ids.get(i, c.id))
                              for i, c in enumerate(o.tool_calls))
                if calls != o.tool_calls:
                    o = replace(o, tool_calls=calls)
                yield LoopEnd(o)
                return
            else:
                yield event


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
