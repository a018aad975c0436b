"""The read-only side of :class:`~copage.memory.PagedMemory`: its pages, turns,
bookmarks, searches and stats, none of which changes the conversation."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np

from copage.core.config import PagerConfig
from copage.core.dense_rank import DenseRanker
from copage.core.pager import EvictedMatch, Pager, PagerStats
from copage.core.passages import PassageIndex
from copage.core.retrieval import BM25Index
from copage.core.text import query_terms
from copage.core.types import Bookmark, Page, PageId, Turn, page_id, page_index, parse_page_arg
from copage.dense.default_channel import resolve

__all__ = ["MemoryReads", "SearchHit"]


@dataclass(frozen=True, slots=True)
class SearchHit:
    """A closed page matching a query: its id, score and bookmark. ``by_meaning``:
    found by the meaning channel (docs/dense.md), ``score`` then the cosine of its
    closest turn with the query; else ``score`` is the page's BM25 score. ``resident``:
    the page is resident (in the prompt :meth:`MemoryReads.context` builds), so the
    model has it without a recall."""

    page: PageId
    score: float
    bookmark: Bookmark
    by_meaning: bool = False
    resident: bool = False


class MemoryReads:
    """Reads of a paged conversation (mixed into :class:`~copage.memory.PagedMemory`)."""

    pager: Pager

    def _live(self) -> None:
        """Raise when the object is out of step with its store (PagedMemory's check)."""

    @property
    def config(self) -> PagerConfig:
        """The conversation's settings (as stored)."""
        return self.pager.config

    @property
    def pages(self) -> list[Page]:
        """Closed pages, in order."""
        self._live()
        return list(self.pager.pages)

    @property
    def turns(self) -> list[Turn]:
        """All turns, in order (the pinned system prompt is not a turn)."""
        self._live()
        return list(self.pager.turns)

    @property
    def resident(self) -> list[PageId]:
        """Resident closed pages, in page order."""
        self._live()
        return self.pager.resident

    @property
    def evicted(self) -> list[PageId]:
        """Evicted pages, in page order."""
        self._live()
        return self.pager.evicted

    def page(self, page: object) -> Page:
        """A closed page by id (``"p3"``, ``"3"`` or ``3``); ``KeyError`` if there is none."""
        self._live()
        idx = parse_page_arg(page)
        if idx is None or idx >= len(self.pager.pages):
            raise KeyError(f"unknown page {page!r}")
        return self.pager.pages[idx]

    def visible_turns(self) -> list[Turn]:
        """The turns the model is shown as messages: the resident pages', then the open
        page's (cost: the visible turns, not the conversation)."""
        self._live()
        pages = self.pager.pages
        out = [t for pid in self.pager.resident for t in pages[parse_page_arg(pid) or 0].turns]
        out.extend(self.pager.open_turns)
        return out

    @property
    def last_turn(self) -> Turn | None:
        """The latest turn, None before the first."""
        self._live()
        return self.pager.turns[-1] if self.pager.turns else None

    @property
    def open_turns(self) -> Sequence[Turn]:
        """The turns of the open page (always shown)."""
        self._live()
        return self.pager.open_turns

    @property
    def system(self) -> str | None:
        """The conversation's system prompt (None when it has none)."""
        return self.pager.system

    def is_resident(self, page: PageId) -> bool:
        """Whether a closed page is resident."""
        return self.pager.is_resident(page)

    def bookmark(self, page: PageId) -> Bookmark:
        """The current bookmark of a closed page."""
        self._live()
        return self.pager.bookmark(page)

    @property
    def evicted_index(self) -> BM25Index[int]:
        """The BM25 index over the evicted pages (read-only use)."""
        return self.pager.evicted_index

    @property
    def passages(self) -> PassageIndex:
        """The BM25 index over passages of the closed pages (read-only use)."""
        return self.pager.passages

    def search_evicted(self, text: str) -> EvictedMatch:
        """The best evicted page for ``text`` (see :meth:`Pager.search_evicted`)."""
        self._live()
        return self.pager.search_evicted(text)

    def bookmarks(self) -> dict[PageId, Bookmark]:
        """Current bookmark of every closed page."""
        self._live()
        return {p.id: self.pager.bookmark(p.id) for p in self.pager.pages}

    def search(self, query: str, limit: int = 5, *,
               dense: DenseRanker | str | None = "default",
               include_resident: bool = True) -> list[SearchHit]:
        """The closed pages ranked by BM25 against ``query``, best first (ties: older
        page), and, with the meaning channel, the page of the turn closest in meaning to
        ``query`` when BM25 did not rank it: added last, in the last place if the list is
        full (``by_meaning``), as the fill gives the channel one place.

        ``include_resident``: search every closed page, resident or evicted (the
        default: what was said is found whether or not paging has started; a hit's
        ``resident`` says whether the prompt already holds it; IDF over every closed
        page); False: the evicted pages only (what a recall would add; IDF over them,
        the index the fill and the recall tool read). The open page (turns not yet
        closed into a page) is not searched.

        ``dense``: the meaning channel, as ``FillSettings.dense`` takes it: ``"default"``
        (on when its model's files are installed, unless ``COPAGE_DENSE=off``), None or
        ``"off"`` (BM25 only), ``"auto"`` or a model folder (required), or a ranker.

        Read-only: nothing is paged in (recall a hit for that). Without the channel,
        pages sharing no content word with the query are left out, so the list may be
        empty.
        """
        self._live()
        if limit < 1:
            raise ValueError(f"limit must be >= 1, got {limit}")
        resident = {page_index(p) for p in self.pager.resident}
        pool = ({p.index for p in self.pager.pages} if include_resident
                else {page_index(p) for p in self.pager.evicted})
        if not pool:
            return []
        index = self.pager.closed_index if include_resident else self.pager.evicted_index
        terms = list(query_terms(query))
        hits = [SearchHit(page_id(i), score, self.pager.bookmark(page_id(i)),
                          resident=i in resident)
                for i, score in (index.top(terms, limit) if terms else [])]
        meaning = closest_page(self.pager, query, dense, pool)
        if meaning is not None and all(h.page != meaning[0] for h in hits):
            hit = SearchHit(meaning[0], meaning[1], self.pager.bookmark(meaning[0]), True,
                            page_index(meaning[0]) in resident)
            hits = [*hits[:limit - 1], hit]
        return hits

    def stats(self, question: str | None = None) -> PagerStats:
        """The paging figures now: pages, resident set, counts and tokens.

        Returns a frozen :class:`~copage.core.pager.PagerStats` (``.to_dict()`` for
        JSON). ``faults``/``hits`` count uses through :meth:`access`; recall and
        speculative page-ins are counted apart (``recall_page_ins``,
        ``speculative_page_ins``; ``page_ins`` sums all three). Token figures are for
        the prompt :meth:`context` would build for ``question``, except ``prompt_tokens``
        without a question once a request has been sent: then it counts the latest
        request as it was sent (:meth:`meter_request`: the speculative fill, bookmarks,
        tool schemas and message framing included), as the prompt meter renders it.
        ``savings`` says, per priced model, whether paging has saved money so far
        (caching priced). With a model-backed keyword generator, ``keyword_generator``
        counts its calls, failed calls and pages that fell back to offline keywords.
        """
        self._live()
        stats = self.pager.stats(question)
        meter = self.pager.prompt_meter
        if question is None and meter.last_tokens:  # what was sent, not what context() builds
            stats = dataclasses.replace(stats, prompt_tokens=meter.last_tokens)
        counts = getattr(getattr(self.pager.extractor, "stats", None), "as_dict", None)
        if callable(counts):
            stats = dataclasses.replace(stats, keyword_generator=counts())
        return stats


def closest_page(pager: Pager, query: str, dense: DenseRanker | str | None,
                 pages: Collection[int]) -> tuple[PageId, float] | None:
    """The page among ``pages`` (closed page indices) of the turn closest in meaning to
    ``query``, and its cosine (None: no channel, no page, or an empty query)."""
    if dense is None or not query.strip() or not pages:
        return None
    ranker = resolve(dense)
    if ranker is None:
        return None
    index = pager.passages
    cos = ranker.cosines(index, query, pages)
    if cos is None or not np.isfinite(cos).any():
        return None
    best = int(np.argmax(cos))
    return page_id(index.turns[best].page), float(cos[best])
