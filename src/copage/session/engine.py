"""The one recall loop, streaming: used by :class:`PagedChat` and by the proxy.

:func:`run_recall_loop` is an async generator. It calls the model (streaming
when the caller streams), yields the answer's text as it arrives, serves every
recall call itself (page in through the pager, tool result back to the model,
next model call), and ends with one :class:`LoopEnd` carrying the outcome:

* :class:`TextDelta` - text to show. The answer is the concatenation of every
  delta (text written before a recall is kept, separated by a blank line).
* :class:`ClientToolDelta` - a piece of a call of one of the *client's* tools
  (proxy only); client calls end the turn and are returned in the outcome.
* :class:`RecallServed` - a recall call was answered (its :class:`RecallRecord`).
* :class:`LoopEnd` - always last: the :class:`LoopOutcome`.

Recall calls are never emitted: a native recall tool call is held from its
first delta, and a call written as text (``RECALL p3``, ``<tool_call>...``, or a
whole reply that is only a page id such as ``p3``) is held back by
:class:`~copage.session.textfilter.CallTextFilter` and parsed when the reply
ends, in every tool protocol. After the per-turn cap, or when recall
is not offered, call-shaped text is refused and never kept as the answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from copage.core.types import ToolCall
from copage.llm.chat_messages import assistant_message, tool_message
from copage.llm.errors import BadResponse, EmptyReply
from copage.llm.model_types import ChatRequest, ChatResponse, Message, StreamEvent, ToolCallDelta
from copage.memory import PagedMemory
from copage.session.cap import CALLS_AFTER_CAP, RecallCap, RecallLoopError, Verdict
from copage.session.overflow import REFITS
from copage.session.records import RecallRecord, UsageSum
from copage.session.textfilter import CallTextFilter, recall_stub, text_calls
from copage.session.trace import NULL, TurnTrace, now_ns

__all__ = [
    "CALLS_AFTER_CAP", "Caller", "ClientToolDelta", "LoopEnd", "LoopEvent", "LoopOutcome",
    "LoopSettings", "RecallLoopError", "RecallServed", "TextDelta", "run_recall_loop",
    "separated",
]

Caller = Callable[[ChatRequest], AsyncIterator[StreamEvent]]
"""Sends one request and streams the reply (``copage.llm.stream`` or a one-chunk fallback)."""

Refit = Callable[[BaseException], "tuple[Sequence[Message], Sequence[Mapping[str, Any]]] | None"]
"""Given the error of the turn's first request, the request made again (messages, recall
tools; not metered: the engine meters it as a follow-up) after paging the conversation
down, or None to raise the error (:func:`copage.session.overflow.refit`: the model's
window was too small)."""


@dataclass(frozen=True, slots=True)
class LoopSettings:
    """What varies between the loop's users.

    Attributes:
        max_recalls: tool calls served per turn (the cap).
        offer_recall: offer the recall tool at all (False: answer-only modes).
        force_recall: the first call names the recall tool in ``tool_choice``.
        client_tools: the client's own tools (proxy). When not None, every call of
            a tool other than recall is the client's: it ends the turn and is returned.
        client_choice: the client's ``tool_choice`` (proxy): ``"required"`` holds on
            every call, a named tool on the first call only.
        temperature, max_tokens, logprobs, extra: request fields of every call.
        provider: the name used in errors raised by the loop.
        enum_pages: list the evicted page ids as an ``enum`` in the recall schema.
    """

    max_recalls: int = 3
    offer_recall: bool = True
    force_recall: bool = False
    client_tools: tuple[Mapping[str, Any], ...] | None = None
    client_choice: Any = None
    temperature: float | None = None
    max_tokens: int | None = None
    logprobs: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)
    provider: str = "model"


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Answer text to show now."""

    text: str


@dataclass(frozen=True, slots=True)
class ClientToolDelta:
    """A piece of a call of a client tool (OpenAI streaming shape; indexes count client calls)."""

    delta: ToolCallDelta


@dataclass(frozen=True, slots=True)
class RecallServed:
    """A recall call was answered."""

    record: RecallRecord


@dataclass(slots=True)
class LoopOutcome:
    """The end of a turn.

    Attributes:
        text: the answer: every text delta emitted, joined, stripped.
        tool_calls: client tool calls that ended the turn (proxy).
        finish_reason: ``tool_calls`` when client calls end the turn, else the last reply's.
        response: the last model reply.
        records: every recall call answered this turn.
        usage: tokens and cost over the turn's calls (cached replies counted apart).
        capped: the recall cap was reached.
        empty_retries: empty replies asked again.
    """

    text: str
    tool_calls: tuple[ToolCall, ...]
    finish_reason: str
    response: ChatResponse
    records: list[RecallRecord]
    usage: UsageSum
    capped: bool = False
    empty_retries: int = 0


@dataclass(frozen=True, slots=True)
class LoopEnd:
    """Always the last event."""

    outcome: LoopOutcome


LoopEvent = TextDelta | ClientToolDelta | RecallServed | LoopEnd


@dataclass(slots=True)
class _Reply:
    """One model reply as the loop saw it while streaming."""

    response: ChatResponse
    emitted: str  # text released to the caller during this reply
    held: str  # text held back by the filter


class _Loop:
    def __init__(
        self, mem: PagedMemory, messages: Sequence[Message], recall_tools: Sequence[Mapping[str, Any]],
        settings: LoopSettings, call: Caller, records: list[RecallRecord] | None,
        usage: UsageSum | None, trace: TurnTrace = NULL, refit: Refit | None = None,
    ) -> None:
        self.mem, self.s, self.call, self.trace, self.refit = mem, settings, call, trace, refit
        self.refits = 0
        self.tool = mem.config.tool_name
        self.messages: list[Message] = list(messages)
        self.recall_tools = list(recall_tools) if settings.offer_recall else []
        self.client_tools = list(settings.client_tools or ())
        self.records: list[RecallRecord] = records if records is not None else []
        self.cap = RecallCap(settings.max_recalls, offered=bool(self.recall_tools),
                             records=self.records, provider=settings.provider)
        self.usage = usage if usage is not None else UsageSum()
        self.answer: list[str] = []
        self.sent = 0  # requests made by this loop
        self.seen: set[str] = set()
        self.client_index: dict[int, int] = {}
        self.pending: dict[int, list[ToolCallDelta]] = {}
        self.names: dict[int, str] = {}
        self.text_tools = list(recall_tools) or [recall_stub(self.tool)]

    # ------------------------------------------------------------------ requests
    def _choice(self, offered: Sequence[Mapping[str, Any]], capped: bool, first: bool) -> Any:
        if not offered:
            return None
        if capped:
            return "none"
        c = self.s.client_choice
        if c == "required":
            return "required"
        if isinstance(c, Mapping) and first:
            return c
        if self.s.force_recall and first and self.recall_tools:
            return {"type": "function", "function": {"name": self.tool}}
        return "auto"

    def _request(self, offered: Sequence[Mapping[str, Any]], choice: Any) -> ChatRequest:
        return ChatRequest(
            messages=tuple(self.messages), tools=tuple(offered),
            tool_choice=choice if offered else None,
            temperature=self.s.temperature, max_tokens=self.s.max_tokens,
            logprobs=self.s.logprobs, extra=self.s.extra,
        )

    # ------------------------------------------------------------------ one reply
    async def _reply(self, request: ChatRequest) -> AsyncIterator[LoopEvent | _Reply]:
        filt = CallTextFilter(self.text_tools, self.tool)
        self.client_index.clear()
        self.pending.clear()
        self.names.clear()
        response: ChatResponse | None = None
        emitted: list[str] = []
        async for event in self.call(request):
            if event.kind == "text" and event.text:
                shown = filt.feed(event.text)
                if shown:
                    shown = self._separated(shown, emitted)
                    emitted.append(shown)
                    yield TextDelta(shown)
            elif event.kind == "tool_call" and event.tool_call is not None:
                for delta in self._client_deltas(event.tool_call):
                    yield ClientToolDelta(delta)
            elif event.kind == "done" and event.response is not None:
                response = event.response
        if response is None:
            raise BadResponse(self.s.provider, "the reply stream ended without a response")
        yield _Reply(response, "".join(emitted), filt.held())

    def _separated(self, text: str, emitted_now: list[str]) -> str:
        """Text opening a later reply is set apart from the earlier replies' text."""
        if emitted_now or not self.answer:
            return text
        return separated("".join(self.answer), text)

    def _client_deltas(self, delta: ToolCallDelta) -> list[ToolCallDelta]:
        """Client call deltas to pass on now (recall calls are held; unknown names wait)."""
        if self.s.client_tools is None:
            return []
        if delta.name:
            self.names[delta.index] = delta.name
        name = self.names.get(delta.index)
        if name is None:
            self.pending.setdefault(delta.index, []).append(delta)
            return []
        if name == self.tool:
            self.pending.pop(delta.index, None)
            return []
        out = self.pending.pop(delta.index, []) + [delta]
        idx = self.client_index.setdefault(delta.index, len(self.client_index))
        return [ToolCallDelta(idx, d.id, d.name, d.arguments) for d in out]

    # ------------------------------------------------------------------ the loop
    async def run(self) -> AsyncIterator[LoopEvent]:
        empty = 0
        while True:
            rnd = self.cap.next_round()  # the one cap rule (copage.session.cap)
            offered = [*self.recall_tools, *self.client_tools] if rnd.offer else self.client_tools
            first = self.usage.calls == 0
            request = self._request(offered, self._choice(offered, rnd.capped, first))
            if self.sent:  # the caller metered the first request; the later ones cost too
                self.mem.meter_request(request.messages, request.tools, follow_up=True)
            self.sent += 1
            reply: _Reply | None = None
            t0 = now_ns()
            try:
                async for ev in self._reply(request):
                    if isinstance(ev, _Reply):
                        reply = ev
                    else:
                        if isinstance(ev, TextDelta):
                            self.answer.append(ev.text)
                        yield ev
            except Exception as e:
                self.trace.upstream(t0, error=e)
                if self._refitted(e):
                    continue
                if not isinstance(e, EmptyReply):
                    raise
                # the client's parser saw nothing: as Verdict.EMPTY
                if e.response is not None:  # the provider billed it: so does the turn
                    self.usage.add(e.response)
                if empty:
                    raise BadResponse(e.provider, "empty reply twice") from e
                empty += 1
                continue
            assert reply is not None
            response = reply.response
            self.trace.upstream(t0, model=response.model or None,
                                input_tokens=response.usage.prompt_tokens,
                                output_tokens=response.usage.completion_tokens,
                                finish_reason=response.finish_reason)
            self.usage.add(response)
            native = list(response.tool_calls)
            found = text_calls(reply.held, self.text_tools, self.tool,
                               alone=not reply.emitted.strip(),
                               bare_id=f"call_bare_{self.usage.calls}")
            rest = found.rest
            if rest.strip():
                rest = self._separated(rest, [reply.emitted] if reply.emitted else [])
                self.answer.append(rest)
                yield TextDelta(rest)
            recalls = [c for c in native if c.name == self.tool] + found.calls
            if self.s.client_tools is not None:
                client = [c for c in native if c.name != self.tool]
                unknown: list[ToolCall] = []
            else:
                client = []
                unknown = [c for c in native if c.name != self.tool]
            calls = recalls + unknown
            said = (reply.emitted + rest).strip()  # this reply's visible text
            verdict = self.cap.verdict(rnd, calls=bool(calls), said=bool(said),
                                       client=bool(client))
            if verdict is Verdict.CLIENT:
                for c in recalls:  # mixed reply: page in now, return the client's calls
                    yield RecallServed(self._serve(c, rnd.allowed)[1])
                yield LoopEnd(self._outcome(response, tuple(client), rnd.capped, empty))
                return
            if verdict is Verdict.ANSWER:
                yield LoopEnd(self._outcome(response, (), rnd.capped, empty))
                return
            if verdict is Verdict.EMPTY:
                if empty:
                    raise BadResponse(
                        self.s.provider,
                        f"empty reply twice (finish_reason={response.finish_reason!r})",
                    )
                empty += 1
                continue
            if verdict is Verdict.REFUSE_AND_ANSWER:
                # Text around a call-shaped line is the answer; the call was held back
                # and is refused, never kept.
                for c in calls:
                    yield RecallServed(self._serve(c, False)[1])
                yield LoopEnd(self._outcome(response, (), rnd.capped, empty))
                return
            unique = [_unique(c, self.seen, self.usage.calls) for c in calls]
            self.messages.append(assistant_message(reply.emitted.strip(), unique))
            for c in unique:
                text_out, rec = self._serve(c, rnd.allowed)
                self.messages.append(tool_message(c.id, text_out))
                yield RecallServed(rec)

    def _refitted(self, error: Exception) -> bool:
        """After the turn's first request failed before any answer: the request made
        again by ``refit`` (at most ``REFITS`` times), or False."""
        if (self.refit is None or self.sent != 1 + self.refits or self.answer
                or self.records or self.refits >= REFITS):
            return False
        again = self.refit(error)
        if again is None:
            return False
        messages, tools = again  # metered here as a follow-up: full context once per turn
        self.refits += 1
        self.messages = list(messages)
        self.recall_tools = list(tools) if self.s.offer_recall else []
        self.cap.offered = bool(self.recall_tools)
        self.text_tools = list(tools) or [recall_stub(self.tool)]
        return True

    def _serve(self, call: ToolCall, allowed: bool) -> tuple[str, RecallRecord]:
        """One recall call answered through the cap (traced as a ``copage.recall`` span)."""
        t0 = now_ns()
        out = self.cap.serve(self.mem, call, allowed, self.tool)
        self.trace.recall(out[1], t0)
        return out

    def _outcome(
        self, response: ChatResponse, client: tuple[ToolCall, ...], capped: bool, empty: int
    ) -> LoopOutcome:
        finish = "tool_calls" if client else (response.finish_reason or "stop")
        return LoopOutcome(
            "".join(self.answer).strip(), client, finish, response, self.records, self.usage,
            capped or self.cap.capped, empty,
        )


def separated(before: str, text: str) -> str:
    """``text`` opening a later reply, set apart from the answer's text ``before`` it by
    a blank line (the answer joins the replies' text this way)."""
    if not before.strip():
        return text
    sep = "" if before.endswith("\n\n") else "\n" if before.endswith("\n") else "\n\n"
    return sep + text.lstrip("\n") if sep else text


def _unique(call: ToolCall, seen: set[str], n: int) -> ToolCall:
    """The call with an id unique within the turn (some local servers reuse ids)."""
    cid = call.id
    if not cid or cid in seen:
        cid = f"call_{n}_{len(seen)}"
        call = ToolCall(cid, call.name, call.arguments)
    seen.add(cid)
    return call


def run_recall_loop(
    mem: PagedMemory, messages: Sequence[Message], recall_tools: Sequence[Mapping[str, Any]],
    settings: LoopSettings, call: Caller, *, records: list[RecallRecord] | None = None,
    usage: UsageSum | None = None, trace: TurnTrace = NULL, refit: Refit | None = None,
) -> AsyncIterator[LoopEvent]:
    """Run one turn's recall loop; yields :data:`LoopEvent` s, :class:`LoopEnd` last.

    The caller meters the first request as it sends it (``mem.meter_request``); every
    later request of the turn (after a recall, or an empty reply) is metered here as a
    follow-up, so ``stats().prompt_cache`` and ``stats().savings`` count them too.

    Args:
        mem: the paged memory recalls are served from (page-ins go through its pager).
        messages: the request messages (system, resident pages, open page, question).
        recall_tools: the recall tool schema(s) to offer (``mem.context().tools``).
        settings: the loop's settings (cap, forcing, client tools, request fields).
        call: sends one request and streams the reply.
        records, usage: lists to extend (a turn's earlier steps, e.g. ``choose``).
        trace: the turn's trace (:mod:`copage.session.trace`): each model call and each
            recall is a child span of it.
        refit: called with the error of the turn's first request (no answer, no recall
            yet): the request to make instead, or None (:data:`Refit`).

    Raises:
        ModelError: a model call failed (nothing is rolled back here: the caller's
            transaction does that).
        RecallLoopError: the model kept calling tools after the cap.
        BadResponse: an empty reply twice.
    """
    return _Loop(mem, messages, recall_tools, settings, call, records, usage, trace,
                 refit).run()
