"""The cooperative loop: user turn in, recalls served, answer stored (see ``docs/loop.md``).

:class:`PagedChat` runs each turn through the one streaming recall engine
(:mod:`copage.session.engine`): :meth:`PagedChat.send` consumes it whole,
:meth:`PagedChat.stream` passes its text deltas on as they arrive.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

from copage.llm.model_types import (
    ChatModel,
    ChatRequest,
    Message,
    StreamEvent,
    fallback_stream,
    run_sync,
    stream,
)
from copage.memory import PagedMemory
from copage.session import trace
from copage.session.choose import Chooser, page_in
from copage.session.engine import (
    CALLS_AFTER_CAP,
    LoopEnd,
    LoopOutcome,
    LoopSettings,
    RecallLoopError,
    RecallServed,
    TextDelta,
    run_recall_loop,
)
from copage.session.fill_settings import UNSET, FillSettings, Unset, resolve_fill
from copage.session.modes import DEFAULT_RECALL_MODE, RecallMode, parse_mode
from copage.session.overflow import KnownWindows, fitted, refit
from copage.session.prepare import Prepared, plan_fill, prepare
from copage.session.prompts import PROMPT_STYLES
from copage.session.records import RecallRecord, TurnReport, UsageSum
from copage.session.speculate import Speculation
from copage.session.trace import TurnTrace

__all__ = ["CALLS_AFTER_CAP", "PagedChat", "RecallLoopError", "TurnDone", "TurnStream"]


@dataclass(frozen=True, slots=True)
class TurnDone:
    """The last event of :meth:`PagedChat.stream`: the turn is stored; its report."""

    report: TurnReport


TurnEvent = TextDelta | RecallServed | TurnDone


@dataclass(slots=True)
class _End:
    outcome: LoopOutcome
    spec: Speculation | None


class TurnStream:
    """The events of one streamed turn: :class:`TextDelta` s, :class:`RecallServed` s,
    then :class:`TurnDone` (after the turn is stored).

    Iterate it with ``async for``; :attr:`report` is set once the turn is done.
    Leaving early (``break``, an exception, :meth:`aclose`) stores nothing: the
    turn is rolled back like a failed model call. Use ``async with`` to make sure
    the rollback happens at once rather than when the stream is garbage collected.
    """

    def __init__(self, events: AsyncIterator[TurnEvent]) -> None:
        self._events = events
        self.report: TurnReport | None = None

    def __aiter__(self) -> TurnStream:
        return self

    async def __anext__(self) -> TurnEvent:
        event = await self._events.__anext__()
        if isinstance(event, TurnDone):
            self.report = event.report
        return event

    async def text(self) -> AsyncIterator[str]:
        """Only the answer's text deltas (the report is in :attr:`report` afterwards)."""
        async for event in self:
            if isinstance(event, TextDelta):
                yield event.text

    async def aclose(self) -> None:
        """Stop the turn; if it has not finished, nothing of it is stored."""
        close = getattr(self._events, "aclose", None)
        if close is not None:
            await close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class PagedChat:
    """A chat whose memory is paged: evicted pages come back by recall.

    Args:
        memory: the paged conversation (its store gets one commit per turn).
        model: a :class:`ChatModel` or a model spec such as ``"openai:gpt-4o-mini"``.
        max_recalls_per_turn: tool calls served per turn; after that the model is
            asked to answer without tools (``tool_choice="none"``).
        recall_mode: how evicted pages come back (see :mod:`copage.session.modes`):
            ``speculative`` (the default, :data:`~copage.session.modes.DEFAULT_RECALL_MODE`:
            the best BM25-matching evicted pages shown for the turn, no model step,
            no tool), ``tool`` (the paper's: the model calls the recall tool),
            ``choose`` (one constrained call picks a page first), combinations such
            as ``choose+tool`` or ``speculative+tool``, ``none``, or ``auto`` (by
            what the model supports). ``docs/loop.md`` says how the default was chosen.
        prompt: ``paper`` (the paper's preamble and bookmarks, unchanged) or
            ``compact`` (for small models; see :mod:`copage.session.prompts`).
        speculative: add the ``speculative`` step to ``recall_mode``.
        fill: the speculative page-in's options, a
            :class:`~copage.session.fill_settings.FillSettings` (threshold, token
            allowance, page cap, relative score, neighbours; default: its defaults).
        speculative_threshold, speculative_tokens, speculative_pages,
            speculative_relative, speculative_neighbours: the older way to set the
            same options one by one (``FillSettings``' ``threshold``, ``tokens``,
            ``pages``, ``relative``, ``neighbours``); giving one with ``fill`` is
            a ``TypeError``.
        temperature: sampling temperature of every call.
        max_tokens: output token limit of every answer call (None: provider default).
        logprobs: ask for token log-probabilities (returned in the report).
        extra: provider-specific request fields, passed through.
        enum_pages: list the evicted page ids as an ``enum`` in the recall tool's
            ``page`` schema, so servers that constrain tool arguments by grammar
            (llama.cpp) can only produce valid ids. Off by default: the schema then
            changes whenever the evicted set does, which defeats prompt caching.
        choose_max_tokens: output limit of the ``choose`` call.
    """

    def __init__(
        self, memory: PagedMemory, model: ChatModel | str, *, max_recalls_per_turn: int = 3,
        recall_mode: str = DEFAULT_RECALL_MODE, prompt: str = "paper",
        speculative: bool = False, fill: FillSettings | None = None,
        speculative_threshold: float | Unset = UNSET, speculative_tokens: int | Unset = UNSET,
        speculative_pages: int | None | Unset = UNSET,
        speculative_relative: float | Unset = UNSET,
        speculative_neighbours: int | Unset = UNSET, temperature: float | None = 0.0,
        max_tokens: int | None = None, logprobs: bool = False,
        extra: Mapping[str, Any] | None = None, enum_pages: bool = False,
        choose_max_tokens: int = 24,
    ) -> None:
        if max_recalls_per_turn < 0:
            raise ValueError(f"max_recalls_per_turn must be >= 0, got {max_recalls_per_turn}")
        _check_style(prompt)
        self.memory = memory
        self.model: ChatModel = _model(model)
        self.max_recalls = max_recalls_per_turn
        self.mode: RecallMode = parse_mode(recall_mode, model=self.model, speculative=speculative)
        self.prompt = prompt
        self.fill = resolve_fill(fill, {
            "speculative_threshold": speculative_threshold,
            "speculative_tokens": speculative_tokens, "speculative_pages": speculative_pages,
            "speculative_relative": speculative_relative,
            "speculative_neighbours": speculative_neighbours})
        self._speculator = self.fill.speculator()
        self.speculator = self._speculator if self.mode.speculative else None
        self.temperature, self.max_tokens, self.logprobs = temperature, max_tokens, logprobs
        self.extra = dict(extra or {})
        self.enum_pages = enum_pages
        self.chooser = Chooser(self.model, temperature=temperature, max_tokens=choose_max_tokens)
        self._lock = asyncio.Lock()
        self._windows = KnownWindows()  # the model's window, once a refusal has told it

    @property
    def recall_mode(self) -> str:
        """The resolved recall mode (``auto`` shows what it picked)."""
        return self.mode.name

    # ------------------------------------------------------------------ turns
    async def send(self, user_text: str, *, force_recall: bool = False, **meta: Any) -> TurnReport:
        """Add a user turn, run the recall loop, store and return the answer.

        The user turn, the recalls' page-ins and the answer are stored as one
        change when the turn succeeds; if any model call fails, nothing is stored
        and the error (a ``ModelError``) propagates. ``force_recall`` makes the
        first call name the recall tool in ``tool_choice`` (modes with ``tool``).
        """
        _check_text(user_text, "user_text")
        report: TurnReport | None = None
        async for event in self._send_events(user_text, force_recall, meta, streaming=False):
            if isinstance(event, TurnDone):
                report = event.report
        assert report is not None
        return report

    def stream(self, user_text: str, *, force_recall: bool = False, **meta: Any) -> TurnStream:
        """Like :meth:`send`, streaming: the answer's text arrives as it is generated.

        Returns a :class:`TurnStream` of :class:`TextDelta` (answer text),
        :class:`RecallServed` (a recall was answered; recall calls themselves are
        never shown) and, last, :class:`TurnDone` with the :class:`TurnReport`,
        sent after the turn is stored. The model streams from its server when it
        can (``copage.llm.stream``); otherwise its reply arrives as one delta.
        """
        _check_text(user_text, "user_text")
        return TurnStream(self._send_events(user_text, force_recall, meta, streaming=True))

    def send_sync(self, user_text: str, *, force_recall: bool = False, **meta: Any) -> TurnReport:
        """:meth:`send` from synchronous code."""
        return run_sync(self.send(user_text, force_recall=force_recall, **meta))

    async def _send_events(
        self, user_text: str, force_recall: bool, meta: dict[str, Any], *, streaming: bool
    ) -> AsyncIterator[TurnEvent]:
        async with self._lock:
            tr = trace.turn(self.memory.conversation_id, tenant=self.memory.tenant,
                            front_end="library", recall_mode=self.mode.name)
            try:
                with self.memory.transaction() as mem:
                    user_id = _traced_add(tr, mem, "user", user_text, meta)
                    end: _End | None = None
                    events = self._turn(mem, user_text, None, force_recall, streaming,
                                        self.mode, self.prompt, tr)
                    async for event in events:
                        if isinstance(event, _End):
                            end = event
                        else:
                            yield event
                    assert end is not None
                    answer_id = _traced_add(tr, mem, "assistant", end.outcome.text,
                                            {"trace_id": tr.trace_id} if tr.enabled else {})
            except BaseException as e:
                tr.end(stored=False, error=e if isinstance(e, Exception) else None)
                raise
            tr.text(user_text, end.outcome.text)
            tr.set(**{"turn.resident_pages": len(mem.resident),
                      "turn.evicted_pages": len(mem.evicted),
                      "turn.recalls": len(end.outcome.records)})
            tr.end(stored=True)
        yield TurnDone(self._report(end, user_id, answer_id, self.mode))

    # ------------------------------------------------------------------ closing
    async def aclose(self) -> None:
        """Close the model's HTTP clients on the running loop (if it has any)."""
        close = getattr(self.model, "aclose", None)
        if close is not None:
            await close()

    def close(self) -> None:
        """Close the model's HTTP clients (from synchronous code)."""
        close = getattr(self.model, "close", None)
        if close is not None:
            close()

    # ------------------------------------------------------------------ one turn
    async def _turn(
        self, mem: PagedMemory, text: str, question: str | None, force_recall: bool,
        streaming: bool, mode: RecallMode, style: str, tr: TurnTrace = trace.NULL,
    ) -> AsyncIterator[TextDelta | RecallServed | _End]:
        """Speculative page-in, choose, then the recall engine; ``_End`` last."""
        # The fill is planned first (on the evicted set the message arrived with) and
        # shown just before the user's message, after the choose step's page-in.
        spec = plan_fill(self._speculator, mem, text, trace=tr) if mode.speculative else None
        records: list[RecallRecord] = []
        usage = UsageSum()
        if mode.choose:
            choice = await self.chooser.ask(mem, text)
            if choice is not None:
                usage.add(choice.response)
                record = page_in(mem, choice, len(records) + 1)
                if record is not None:
                    records.append(record)
                    yield RecallServed(record)
        # context, style, the fill planned above, the meter (what is sent, fill included)
        window = self._windows.get(self.model.spec)  # known once the model refused one
        prep = prepare(mem, question=question, style=style, offer_tool=mode.tool,
                       enum_pages=self.enum_pages, planned=spec, meter=window is None)

        def remake() -> Prepared:  # after a page-down: the fill and the request made again
            nonlocal spec, prep
            spec = plan_fill(self._speculator, mem, text, trace=tr) if mode.speculative else None
            prep = prepare(mem, question=question, style=style, offer_tool=mode.tool,
                           enum_pages=self.enum_pages, planned=spec, meter=False)
            return prep

        if window is not None:  # paged down before it is sent if it would not fit
            fitted(mem, window, prep, remake, question)
        messages, tools = prep.messages, prep.tools
        settings = LoopSettings(
            max_recalls=self.max_recalls + len(records), offer_recall=mode.tool,
            force_recall=force_recall and mode.tool, temperature=self.temperature,
            max_tokens=self.max_tokens, logprobs=self.logprobs, extra=self.extra,
            provider=self.model.spec,
        )
        call = self._streamer if streaming else self._completer

        def again(error: BaseException) -> tuple[list[Message], list[dict[str, Any]]] | None:
            if not refit(mem, error, prep.messages, prep.tools, known=self._windows,
                         model=self.model.spec):
                return None  # not the model's window, or nothing left to evict
            made = remake()
            return list(made.messages), [dict(t) for t in made.tools]

        async for event in run_recall_loop(mem, messages, tools, settings, call,
                                           records=records, usage=usage, trace=tr,
                                           refit=again):
            if isinstance(event, LoopEnd):
                yield _End(event.outcome, spec)
            elif isinstance(event, TextDelta | RecallServed):
                yield event

    def _streamer(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        return stream(self.model, request)

    def _completer(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        return fallback_stream(self.model, request)

    def _report(
        self, end: _End, user_id: str | None, answer_id: str | None, mode: RecallMode
    ) -> TurnReport:
        out, spec = end.outcome, end.spec
        r = out.response
        u = out.usage
        return TurnReport(
            answer=out.text, recalls=tuple(out.records),
            speculative=spec.paged_in if spec else (),
            speculative_score=spec.score if spec else None,
            model_calls=u.calls, prompt_tokens=tuple(u.prompt_tokens),
            completion_tokens=u.completion_tokens, cost_usd=u.cost,
            cached_calls=u.cached, paid_prompt_tokens=u.paid_prompt,
            paid_completion_tokens=u.paid_completion, saved_usd=u.saved,
            recall_mode=mode.name,
            finish_reason=r.finish_reason, truncated=r.finish_reason == "length",
            capped=out.capped, empty_retries=out.empty_retries,
            user_turn_id=user_id, answer_turn_id=answer_id,
            logprobs=tuple(r.logprobs) if r.logprobs is not None else None,
        )


def _traced_add(tr: TurnTrace, mem: PagedMemory, role: str, text: str,
                meta: dict[str, Any]) -> str:
    """``mem.add``, with the pages it evicted as a ``copage.evict`` span when traced."""
    if not tr.enabled:
        return mem.add(role, text, **meta)
    before, t0 = mem.evicted, trace.now_ns()
    out = mem.add(role, text, **meta)
    tr.evictions(before, mem.evicted, t0, cause=role)
    return out


def _check_style(prompt: str) -> str:
    if prompt not in PROMPT_STYLES:
        raise ValueError(f"unknown prompt {prompt!r}; valid: {', '.join(PROMPT_STYLES)}")
    return prompt


def _check_text(text: object, what: str) -> None:
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, got {type(text).__name__}")
    if not text.strip():
        raise ValueError(f"{what} must not be empty")


def _model(model: ChatModel | str) -> ChatModel:
    if not isinstance(model, str):
        return model
    from copage.llm import get_model

    return get_model(model)

