"""What a pager sends to the model, and its accounting: messages, tools, tokens, stats.

:meth:`copage.core.pager.Pager.context`, ``meter_request``, ``prompt_tokens`` and
``stats`` delegate here. While no page is evicted, the conversation goes out as it is;
once one is, the system message carries the preamble and the bookmark index and the
recall tool is offered. :class:`Context` is re-exported by :mod:`copage.core.pager`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from copage.core import prompt
from copage.core.change_log import ChangeLog
from copage.core.pager_stats import Counters, FullContext, PagerStats
from copage.core.paginate import Paginator
from copage.core.promptcache import PromptMeter
from copage.core.tokens import Tokenizer
from copage.core.types import Page, PageId, Turn

__all__ = ["Context", "Shown", "context", "meter_request", "prompt_tokens", "stats"]


@dataclass(frozen=True, slots=True)
class Context:
    """What to send to the model: chat messages, tools, and the accounting."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    stats: PagerStats


class Shown(Protocol):
    """The pager's fields and operations that its context and accounting read."""

    tokenizer: Tokenizer
    turns: list[Turn]
    pages: list[Page]
    system: str | None
    counters: Counters
    paginator: Paginator
    prompt_meter: PromptMeter
    full_context: FullContext
    changes: ChangeLog
    _evicted_set: set[int]
    _fixed_tokens: int
    _resident_tokens: int
    _turn_tokens: list[int]

    @property
    def resident(self) -> list[PageId]: ...

    @property
    def open_turns(self) -> Sequence[Turn]: ...

    def _preamble(self) -> str: ...

    def _index(self, pid: PageId) -> int: ...

    def tools(self) -> list[dict[str, Any]]: ...

    def bookmark_index(self) -> str: ...

    def index_tokens(self) -> int: ...

    def full_request_tokens(self) -> int: ...

    def full_tokens(self, question: str | None = None) -> int: ...

    def prompt_tokens(self, question: str | None = None) -> int: ...

    def stats(self, question: str | None = None) -> PagerStats: ...

    def meter_request(self, messages: Sequence[Mapping[str, Any]],
                      tools: Sequence[Mapping[str, Any]], question: str | None = None,
                      *, follow_up: bool = False, system_prompt: str | None = None) -> None: ...


def context(pager: Shown, question: str | None, meter: bool) -> Context:
    """Messages for the model (see ``Pager.context``), metered unless ``meter`` is false."""
    parts = [pager.system] if pager.system else []
    if pager._evicted_set:
        parts.append(pager._preamble() + "\n\n" + pager.bookmark_index())
    messages: list[dict[str, Any]] = (
        [{"role": "system", "content": "\n\n".join(parts)}] if parts else [])
    turns = [t for pid in pager.resident for t in pager.pages[pager._index(pid)].turns]
    turns.extend(pager.open_turns)
    messages.extend(prompt.turn_messages(turns))
    if question is not None:
        messages.append({"role": "user", "content": question})
    tools = pager.tools() if pager._evicted_set else []
    if meter:
        pager.meter_request(messages, tools, question)
    return Context(messages, tools, pager.stats(question))


def meter_request(pager: Shown, messages: Sequence[Mapping[str, Any]],
                  tools: Sequence[Mapping[str, Any]], question: str | None = None,
                  *, follow_up: bool = False, system_prompt: str | None = None) -> None:
    """Count one request as sent (see ``Pager.meter_request``)."""
    if follow_up:
        pager.prompt_meter.record(messages, tools, 0, 0, follow_up=True)
        pager.changes.dirty = True
        return
    meter = pager.prompt_meter
    asked = meter.part_tokens({"role": "user", "content": question}) if question else 0
    full = pager.full_request_tokens()
    tail = pager.full_context.tail(pager.turns, full)
    if system_prompt:  # the caller's own system prompt: full context sends it too
        own = pager.system or ""
        full += meter.part_tokens({"role": "system", "content": "\n\n".join(
            p for p in (system_prompt, own) if p)})
        full -= meter.part_tokens({"role": "system", "content": own}) if own else 0
    meter.record(messages, tools, full + asked, asked, tail=tail)
    pager.changes.dirty = True  # the meter is in the snapshot


def prompt_tokens(pager: Shown, question: str | None = None) -> int:
    """Content tokens of :func:`context` (preamble, tool schema, bookmarks, resident
    pages, open page, question); per-message framing is not counted."""
    count = pager.tokenizer.count
    n = (pager._fixed_tokens if pager._evicted_set else 0) + count(pager.system or "")
    n += pager._resident_tokens + pager.index_tokens()
    n += sum(pager._turn_tokens[pager.paginator.start :])
    if question:
        n += count(question)
    return n


def stats(pager: Shown, question: str | None = None) -> PagerStats:
    """Pages, resident set, event counts and token figures (for ``question``)."""
    c = pager.counters
    return PagerStats(
        turns=len(pager.turns), pages=len(pager.pages), open_turns=len(pager.open_turns),
        resident=tuple(pager.resident), evicted=len(pager._evicted_set),
        faults=c.faults, hits=c.hits, recalls=c.recalls, recall_page_ins=c.recall_page_ins,
        recall_errors=c.recall_errors, speculative_page_ins=c.speculative_page_ins,
        evictions=c.evictions, bookmark_tokens=pager.index_tokens(),
        prompt_tokens=pager.prompt_tokens(question), full_tokens=pager.full_tokens(question),
        tokenizer=pager.tokenizer.name, prompt_cache=pager.prompt_meter.summary(),
        fills=c.fills, fill_pages=c.fill_pages,
    )
