"""The cooperative loop: user turn in, recalls served, answer stored (see ``docs/loop.md``)."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from copage.core.pager import Context
from copage.core.types import PageId, ToolCall
from copage.llm.errors import BadResponse
from copage.llm.messages import assistant_message, tool_message
from copage.llm.types import ChatModel, ChatRequest, ChatResponse, Message, run_sync
from copage.memory import PagedMemory
from copage.session.report import ProbeRecord, RecallRecord, TurnReport, UsageSum
from copage.session.speculate import DEFAULT_THRESHOLD, Speculation, Speculator
from copage.session.tools import execute, refuse

#: Model calls allowed after the recall cap is reached: one with ``tool_choice="none"``,
#: then one without tools at all; tool calls in either are answered with an error.
CALLS_AFTER_CAP = 2


class RecallLoopError(BadResponse):
    """The model kept calling tools after the per-turn cap; the turn was rolled back."""


class _Discard(Exception):
    """Internal: leave a transaction without storing it."""


@dataclass(slots=True)
class _Outcome:
    response: ChatResponse
    records: list[RecallRecord] = field(default_factory=list)
    usage: UsageSum = field(default_factory=UsageSum)
    capped: bool = False
    empty_retries: int = 0


class PagedChat:
    """A chat whose memory is paged: the model recalls evicted pages through a tool.

    Args:
        memory: the paged conversation (its store gets one commit per turn).
        model: a :class:`ChatModel` or a model spec such as ``"openai:gpt-4o-mini"``.
        max_recalls_per_turn: tool calls served per turn; after that the model is
            asked to answer without tools (``tool_choice="none"``).
        speculative: page in the evicted page best matching the user's message
            before calling the model (see :mod:`copage.session.speculate`).
        speculative_threshold: minimal normalised BM25 score for a speculative page-in.
        speculative_neighbours: also page in this many evicted pages on each side.
        temperature: sampling temperature of every call.
        max_tokens: output token limit of every call (None: provider default).
        logprobs: ask for token log-probabilities (returned in the report).
        extra: provider-specific request fields, passed through.
        enum_pages: list the evicted page ids as an ``enum`` in the recall tool's
            ``page`` schema, so servers that constrain tool arguments by grammar
            (llama.cpp) can only produce valid ids. Off by default: the schema then
            changes whenever the evicted set does, which defeats prompt caching.
    """

    def __init__(
        self, memory: PagedMemory, model: ChatModel | str, *, max_recalls_per_turn: int = 3,
        speculative: bool = False, speculative_threshold: float = DEFAULT_THRESHOLD,
        speculative_neighbours: int = 0, temperature: float | None = 0.0,
        max_tokens: int | None = None, logprobs: bool = False,
        extra: Mapping[str, Any] | None = None, enum_pages: bool = False,
    ) -> None:
        if max_recalls_per_turn < 0:
            raise ValueError(f"max_recalls_per_turn must be >= 0, got {max_recalls_per_turn}")
        self.memory = memory
        self.model: ChatModel = _model(model)
        self.max_recalls = max_recalls_per_turn
        self.speculator = (
            Speculator(speculative_threshold, speculative_neighbours) if speculative else None
        )
        self.temperature, self.max_tokens, self.logprobs = temperature, max_tokens, logprobs
        self.extra = dict(extra or {})
        self.enum_pages = enum_pages
        self._lock = asyncio.Lock()

    # ------------------------------------------------------------------ turns
    async def send(self, user_text: str, *, force_recall: bool = False, **meta: Any) -> TurnReport:
        """Add a user turn, run the recall loop, store and return the answer.

        The user turn, the recalls' page-ins and the answer are stored as one
        change when the turn succeeds; if any model call fails, nothing is stored
        and the error (a ``ModelError``) propagates. ``force_recall`` makes the
        first call name the recall tool in ``tool_choice``.
        """
        _check_text(user_text, "user_text")
        async with self._lock:
            with self.memory.transaction() as mem:
                user_id = mem.add("user", user_text, **meta)
                spec = self._speculate(user_text)
                out = await self._loop(mem.context(), force_recall)
                answer_id = mem.add("assistant", out.response.text)
        return _report(out, spec, user_id, answer_id)

    def send_sync(self, user_text: str, *, force_recall: bool = False, **meta: Any) -> TurnReport:
        """:meth:`send` from synchronous code."""
        return run_sync(self.send(user_text, force_recall=force_recall, **meta))

    async def ask_probe(
        self, question: str, needed_pages: Sequence[PageId] = (), *,
        force_recall: bool = False, keep_pages: bool = True,
    ) -> ProbeRecord:
        """Ask a question without adding it (or the answer) to the conversation.

        Recalls and speculative page-ins change the resident set like in a turn;
        with ``keep_pages=False`` they are rolled back afterwards. Returns which
        needed pages were evicted at the start, paged in speculatively and recalled.
        """
        _check_text(question, "question")
        async with self._lock:
            mem = self.memory
            known = {p.id for p in mem.pager.pages}
            bad = [p for p in needed_pages if p not in known]
            if bad:
                raise ValueError(f"unknown needed page(s) {bad}; pages are p1..p{len(known)}")
            evicted = set(mem.evicted)
            needed = tuple(needed_pages)
            record: ProbeRecord | None = None
            try:
                with mem.transaction():
                    mem.pager.cache.set_query(question)
                    spec = self._speculate(question)
                    out = await self._loop(mem.context(question), force_recall)
                    mem.pager.cache.set_query(_last_user_text(mem))
                    report = _report(out, spec, None, None)
                    record = ProbeRecord(
                        needed, tuple(p for p in needed if p in evicted), report.speculative,
                        report.recalls, question, report.answer, report,
                    )
                    if not keep_pages:
                        raise _Discard
            except _Discard:
                pass
        assert record is not None
        return record

    def ask_probe_sync(
        self, question: str, needed_pages: Sequence[PageId] = (), *,
        force_recall: bool = False, keep_pages: bool = True,
    ) -> ProbeRecord:
        """:meth:`ask_probe` from synchronous code."""
        return run_sync(
            self.ask_probe(question, needed_pages, force_recall=force_recall, keep_pages=keep_pages)
        )

    # ------------------------------------------------------------------ loop
    def _speculate(self, text: str) -> Speculation | None:
        if self.speculator is None:
            return None
        return self.speculator.page_in(self.memory.pager, text)

    def _request(
        self, messages: list[Message], tools: Sequence[Mapping[str, Any]], tool_choice: Any
    ) -> ChatRequest:
        return ChatRequest(
            messages=tuple(messages), tools=tuple(tools),
            tool_choice=tool_choice if tools else None,
            temperature=self.temperature, max_tokens=self.max_tokens,
            logprobs=self.logprobs, extra=self.extra,
        )

    def _tools(self, tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
        evicted = self.memory.evicted
        if not self.enum_pages or not evicted:
            return tools
        out = copy.deepcopy(tools)
        for t in out:
            fn = t.get("function", {})
            if fn.get("name") == self.memory.config.tool_name:
                fn["parameters"]["properties"]["page"]["enum"] = evicted
        return out

    async def _loop(self, context: Context, force_recall: bool) -> _Outcome:
        messages: list[Message] = list(context.messages)
        tools = self._tools(context.tools)
        records: list[RecallRecord] = []
        usage = UsageSum()
        seen_ids: set[str] = set()
        tool = self.memory.config.tool_name
        after_cap = empty = 0
        while True:
            capped = len(records) >= self.max_recalls
            if capped:
                choice: Any = "none"
            elif force_recall and usage.calls == 0:
                choice = {"type": "function", "function": {"name": tool}}
            else:
                choice = None
            offered = tools if not capped or after_cap == 0 else []
            request = self._request(messages, offered, choice)
            response = await self.model.complete(request)
            usage.add(response)
            after_cap += capped
            if not response.tool_calls:
                if response.text.strip():
                    return _Outcome(response, records, usage, capped, empty)
                if empty:
                    raise BadResponse(
                        self.model.spec,
                        f"empty reply twice (finish_reason={response.finish_reason!r})",
                    )
                empty += 1
                continue
            if capped and after_cap >= CALLS_AFTER_CAP:
                raise RecallLoopError(
                    self.model.spec,
                    f"still calling tools after the cap of {self.max_recalls} recalls "
                    f"and {CALLS_AFTER_CAP} requests without tools",
                )
            calls = [_unique(c, seen_ids, usage.calls) for c in response.tool_calls]
            messages.append(assistant_message(response.text, calls))
            for call in calls:
                if len(records) >= self.max_recalls:
                    text, rec = refuse(call, self.max_recalls)
                else:
                    text, rec = execute(self.memory, call)
                records.append(rec)
                messages.append(tool_message(call.id, text))


def _unique(call: ToolCall, seen: set[str], n: int) -> ToolCall:
    """The call with an id unique within the turn (some local servers reuse ids)."""
    cid = call.id
    if not cid or cid in seen:
        cid = f"call_{n}_{len(seen)}"
        call = ToolCall(cid, call.name, call.arguments)
    seen.add(cid)
    return call


def _report(
    out: _Outcome, spec: Speculation | None, user_id: str | None, answer_id: str | None
) -> TurnReport:
    r = out.response
    return TurnReport(
        answer=r.text, recalls=tuple(out.records),
        speculative=spec.paged_in if spec else (),
        speculative_score=spec.score if spec else None,
        model_calls=out.usage.calls, prompt_tokens=tuple(out.usage.prompt_tokens),
        completion_tokens=out.usage.completion_tokens, cost_usd=out.usage.cost,
        finish_reason=r.finish_reason, truncated=r.finish_reason == "length",
        capped=out.capped, empty_retries=out.empty_retries,
        user_turn_id=user_id, answer_turn_id=answer_id,
        logprobs=tuple(r.logprobs) if r.logprobs is not None else None,
    )


def _check_text(text: object, what: str) -> None:
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, got {type(text).__name__}")
    if not text.strip():
        raise ValueError(f"{what} must not be empty")


def _last_user_text(mem: PagedMemory) -> str | None:
    for turn in reversed(mem.pager.turns):
        if turn.role == "user":
            return turn.text
    return None


def _model(model: ChatModel | str) -> ChatModel:
    if not isinstance(model, str):
        return model
    from copage.llm import get_model

    return get_model(model)
