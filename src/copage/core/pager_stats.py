"""A pager's figures: its event counters (stored) and its stats at one moment.

:class:`Counters` are kept across the conversation and stored in the pager's
snapshot; :class:`PagerStats` is what :meth:`copage.core.pager.Pager.stats` (and
``PagedMemory.stats()``) returns. Both are re-exported by :mod:`copage.core.pager`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from copage.core import prompt
from copage.core.promptcache import PromptMeter, Savings, savings
from copage.core.state_upgrade import migrate_counters_list
from copage.core.types import PageId, Turn

NOT_DEMAND = frozenset({"recall", "speculative"})  # access kinds counted apart from hits/faults


@dataclass(slots=True)
class Counters:
    """Event counts kept across the conversation (stored in the pager's snapshot).

    A use through :meth:`Pager.access` (a probe, or a caller's own use) is a *hit*
    or a *fault* (the page was evicted and is paged in). Recall and speculative
    page-ins are counted apart: they are not demand misses. A *fill* (the default
    ``speculative`` mode's evicted pages shown for one turn, made resident by nothing)
    is no page-in: ``fills`` counts the turns that had one, ``fill_pages`` the pages
    they showed.
    """

    faults: int = 0
    hits: int = 0
    recalls: int = 0
    recall_page_ins: int = 0
    recall_errors: int = 0
    speculative_page_ins: int = 0
    evictions: int = 0
    fills: int = 0
    fill_pages: int = 0

    def count_use(self, kind: str, hit: bool) -> None:
        """Count one use of a page by ``kind`` (``probe``, ``recall``, ``speculative``)
        that found it resident (``hit``) or paged it in."""
        if hit:
            if kind not in NOT_DEMAND:
                self.hits += 1
        elif kind == "recall":
            self.recall_page_ins += 1
        elif kind == "speculative":
            self.speculative_page_ins += 1
        else:
            self.faults += 1

    def to_json(self) -> dict[str, int]:
        """JSON-able form (the snapshot's ``counters``)."""
        return {f: int(getattr(self, f)) for f in self.__slots__}

    @classmethod
    def from_json(cls, data: object) -> Counters:
        """Inverse of :meth:`to_json`; also reads the older list form
        ``[faults, hits, recalls, recall_errors, evictions]`` (whose faults included
        recall and speculative page-ins, which cannot be told apart afterwards)."""
        if isinstance(data, list):
            data = migrate_counters_list(data)
        if not isinstance(data, dict):
            return cls()
        return cls(**{k: int(v) for k, v in data.items() if k in cls.__slots__})


@dataclass(frozen=True, slots=True)
class PagerStats:
    """A conversation's paging figures at one moment (see :meth:`Pager.stats`).

    Attributes:
        turns: turns added (the pinned system prompt is not a turn).
        pages: closed pages.
        open_turns: turns of the open page (always in context).
        resident: resident closed pages, in page order.
        evicted: number of evicted pages (their bookmarks are in the prompt).
        faults: uses through ``access()`` (probes) that found the page evicted.
        hits: uses through ``access()`` that found the page resident.
        recalls: recall tool calls, whatever their outcome.
        recall_page_ins: recalls that paged an evicted page in.
        recall_errors: recalls answered with an error (bad or unknown page, ...).
        speculative_page_ins: pages paged in before the model call by speculation.
        evictions: pages evicted so far.
        bookmark_tokens: tokens of the bookmarks of the evicted pages.
        prompt_tokens: content tokens of :meth:`Pager.context` for ``question``
            (``PagedMemory.stats()`` without a question, once a request was sent: that
            request as it was sent, the fill included).
        full_tokens: tokens of the whole conversation's turns plus ``question``.
        tokenizer: the tokenizer that counted them.
        keyword_generator: with a model-backed keyword generator, its ``calls``,
            ``failed_calls`` and ``fallback_pages`` (pages given offline keywords);
            None otherwise.
        fills: turns whose prompt showed evicted pages in a fill (the ``speculative``
            mode's; the pages stay evicted, so this is no page-in).
        fill_pages: pages those fills showed, counted once per turn.
        prompt_cache: the requests (``context()`` calls) seen since this pager was
            made or opened: ``requests``, ``prefix_share_median`` and
            ``prefix_share_last`` (share of a request's prompt tokens that repeat the
            previous request's prefix), token sums, and ``cost_usd`` per priced model
            (``paged``, ``paged_cached``, ``full``, ``full_cached``), and
            ``last_prompt_tokens`` (the latest request); see :mod:`copage.core.promptcache`.
            :attr:`savings` reads whether paging has saved money from it.
    """

    turns: int
    pages: int
    open_turns: int
    resident: tuple[PageId, ...]
    evicted: int
    faults: int
    hits: int
    recalls: int
    recall_page_ins: int
    recall_errors: int
    speculative_page_ins: int
    evictions: int
    bookmark_tokens: int
    prompt_tokens: int
    full_tokens: int
    tokenizer: str
    keyword_generator: Mapping[str, int] | None = None
    prompt_cache: Mapping[str, Any] | None = None
    fills: int = 0
    fill_pages: int = 0

    @property
    def page_ins(self) -> int:
        """Every page-in, whatever caused it (faults, recalls, speculation)."""
        return self.faults + self.recall_page_ins + self.speculative_page_ins

    @property
    def savings(self) -> dict[str, Savings]:
        """Per priced model, whether paging has saved money so far: the requests'
        cost as sent against sending the whole conversation each time, caching priced
        (:class:`~copage.core.promptcache.Savings`; empty before any request)."""
        return savings(self.prompt_cache)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (``resident`` as a list; ``page_ins`` included)."""
        d = {f: getattr(self, f) for f in self.__slots__}
        d["resident"] = list(self.resident)
        d["page_ins"] = self.page_ins
        if self.keyword_generator is None:
            del d["keyword_generator"]
        else:
            d["keyword_generator"] = dict(self.keyword_generator)
        if self.prompt_cache is None:
            del d["prompt_cache"]
        else:
            d["prompt_cache"] = dict(self.prompt_cache)
        d["savings"] = {m: s.to_dict() for m, s in self.savings.items()}
        return d


class FullContext:
    """Full context's request as the prompt meter renders it: the tokens of each turn's
    message (session headers included), counted when first metered and cut back with
    the turns; the meter compares each paged request with it."""

    def __init__(self) -> None:
        self.parts: list[int] = []

    def tokens(self, turns: Sequence[Turn], system: str | None, meter: PromptMeter) -> int:
        """Tokens of the whole conversation sent as it is (the pinned system prompt and
        every turn as a message): what full context would send before the question."""
        done = len(self.parts)
        if done < len(turns):
            before = turns[done - 1:done]  # the previous turn decides the header
            messages = prompt.turn_messages([*before, *turns[done:]])[len(before):]
            self.parts.extend(meter.part_tokens(m) for m in messages)
        head = meter.part_tokens({"role": "system", "content": system}) if system else 0
        return head + sum(self.parts)

    def tail(self, turns: Sequence[Turn], full: int) -> int:
        """Full context's tokens after its cache breakpoint, the latest assistant turn
        (none: no breakpoint, all of ``full``), as the meter places a paged request's."""
        for i in range(len(turns) - 1, -1, -1):
            if turns[i].role == "assistant":
                return sum(self.parts[i + 1:])
        return full
