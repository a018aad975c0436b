"""Search over the evicted pages: the BM25 index of their text and the passage index.

:class:`EvictedSearch` holds both indexes of a pager, built on first use: the BM25
index over the evicted pages' full text (recall by query, speculative page-in), kept
up to date on every eviction and page-in so that IDF covers exactly the evicted
pages, and the :class:`~copage.core.passages.PassageIndex` over the closed pages'
turns (the speculative fill's unit). Both are derived state, never stored.
:meth:`copage.core.pager.Pager.search_evicted`, ``evicted_index`` and ``passages``
delegate here.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from copage.core.passages import PassageIndex, still_synced
from copage.core.retrieval import BM25Index
from copage.core.text import index_terms, query_terms
from copage.core.types import Page

__all__ = ["EvictedMatch", "EvictedSearch"]


@dataclass(frozen=True, slots=True)
class EvictedMatch:
    """The best evicted page for a text: its index (None if nothing matches), its BM25
    score, and the query terms (the text's distinct content words, sorted)."""

    index: int | None
    score: float
    terms: tuple[str, ...]


class EvictedSearch:
    """A pager's search indexes (see the module docstring)."""

    def __init__(self) -> None:
        self.evicted: BM25Index[int] | None = None  # built on first search
        self.passages: PassageIndex | None = None  # built on first fill
        self.closed: BM25Index[int] | None = None  # built on first search of every page
        self._closed_pages: list[Page] = []

    def evicted_index(self, pages: Sequence[Page], evicted: Collection[int]) -> BM25Index[int]:
        """BM25 over the ``evicted`` pages' text, keyed by page index (built on first use)."""
        if self.evicted is None:
            index: BM25Index[int] = BM25Index()
            for idx in sorted(evicted):
                index.add(idx, index_terms(pages[idx].text))
            self.evicted = index
        return self.evicted

    def closed_index(self, pages: Sequence[Page]) -> BM25Index[int]:
        """BM25 over every closed page's text, keyed by page index: pages closed since the
        last call are added; if a page seen before was taken back or replaced, the index
        is rebuilt (:func:`~copage.core.passages.still_synced`, as the passage index)."""
        n = still_synced(self._closed_pages, pages)
        if self.closed is None or n < len(self._closed_pages):
            self.closed, self._closed_pages, n = BM25Index(), [], 0
        for page in pages[n:]:
            self.closed.add(page.index, index_terms(page.text))
            self._closed_pages.append(page)
        return self.closed

    def passage_index(self, pages: Sequence[Page]) -> PassageIndex:
        """The passage index, brought up to date with the closed ``pages``."""
        if self.passages is None:
            self.passages = PassageIndex()
        return self.passages.sync(pages)

    def best(self, text: str, pages: Sequence[Page], evicted: Collection[int]) -> EvictedMatch:
        """The evicted page whose text best matches ``text`` (BM25 with the distinct
        content words of ``text`` as the query; ties: the earliest page)."""
        terms = query_terms(text)
        best = self.evicted_index(pages, evicted).best(terms) if terms else None
        if best is None or best.key is None:
            return EvictedMatch(None, 0.0, terms)
        return EvictedMatch(int(best.key), best.score, terms)

    def evict(self, page: Page) -> None:
        """``page`` was evicted: index it (if the index is built)."""
        if self.evicted is not None:
            self.evicted.add(page.index, index_terms(page.text))

    def page_in(self, idx: int) -> None:
        """Page ``idx`` was paged in: take it out of the index (if built)."""
        if self.evicted is not None:
            self.evicted.remove(idx)
