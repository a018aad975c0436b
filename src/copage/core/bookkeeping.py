"""A pager's bookmark bookkeeping: making, refreshing and batch-remaking bookmarks.

A bookmark is made when its page closes (:func:`set_bookmark` with the extractor's
:func:`keywords`). Keyword extractors whose keywords change as the corpus grows
(their ``refresh_with_corpus``) refresh at most ``refresh_per_page`` stale bookmarks
per closed page (:func:`refresh_stale`; a bookmark is stale once the conversation has
25% more pages than when it was made). :func:`refresh_all` remakes every bookmark
with the whole conversation known (batch extraction, :func:`batch_keywords`).
:class:`copage.core.pager.Pager` delegates here; ``taken`` counts, for each lowered
keyword, the bookmarks that show it (extractors avoid keywords other pages took).
"""

from __future__ import annotations

import heapq
from typing import Protocol

from copage.core import prompt
from copage.core.bookmarks import BookmarkFormat, keyword_text, make_bookmark
from copage.core.change_log import ChangeLog
from copage.core.config import PagerConfig
from copage.core.grouped_index import GroupedIndex
from copage.core.keywords import Corpus, KeywordExtractor
from copage.core.keywords.calls import call_labels
from copage.core.tokens import Tokenizer
from copage.core.types import Book, Page, PageId

__all__ = ["Keeping", "batch_keywords", "examples", "keywords", "refresh_all", "refresh_stale",
           "set_bookmark"]


class Keeping(Protocol):
    """The pager's fields that its bookmark bookkeeping reads and writes."""

    config: PagerConfig
    tokenizer: Tokenizer
    extractor: KeywordExtractor
    format: BookmarkFormat
    pages: list[Page]
    corpus: Corpus
    books: dict[int, Book]
    taken: dict[str, int]
    grouped: GroupedIndex
    _refreshes: bool
    _evicted_set: set[int]
    _stale_heap: list[tuple[int, int]]
    _refresh_owed: int
    _bookmark_tokens: int
    changes: ChangeLog

    def _maybe_regroup(self, *, force: bool = False) -> None: ...


def examples(fmt: BookmarkFormat) -> tuple[str, str]:
    """The preamble's and the group note's example bookmarks in format ``fmt``
    (``[p3:keyword, keyword]`` for ``minimal`` and the richer formats)."""
    shown = keyword_text(fmt)
    return (shown(Page("p3", 2, (), "", 0), prompt.EXAMPLE_KEYWORDS),
            shown(Page("p1-p8", 0, (), "", 0), ("keyword",)))


def keywords(pager: Keeping, page: Page) -> tuple[str, ...]:
    """The keywords of ``page``'s bookmark: its tool calls' labels, then the extractor's."""
    # Other pages' use of each term: the page's own current keywords are taken out
    # for the call and put back after (no O(pages) copy of ``taken``).
    own = pager.books.get(page.index)
    lowered = own.lowered if own else ()
    for k in lowered:
        pager.taken[k] -= 1
    try:
        return call_labels(page.turns) + tuple(
            pager.extractor.extract(page, pager.corpus, pager.config.n_keywords,
                                    taken=pager.taken))
    finally:
        for k in lowered:
            pager.taken[k] += 1


def set_bookmark(pager: Keeping, idx: int, words: tuple[str, ...]) -> None:
    """Make page ``idx``'s bookmark from ``words``; keep ``taken``, the shown tokens,
    the stale heap and the pending changes in step."""
    old = pager.books.get(idx)
    if old:
        for k in old.lowered:
            pager.taken[k] -= 1
    bm = make_bookmark(pager.pages[idx], words, pager.format, pager.tokenizer,
                       pager.config.bookmark_tokens)
    lowered = tuple(k.lower() for k in bm.keywords)
    for k in lowered:
        pager.taken[k] = pager.taken.get(k, 0) + 1
    pager.books[idx] = Book(bm, len(pager.pages), lowered)
    pager.changes.epochs.add(idx)
    if idx in pager._evicted_set:
        delta = bm.tokens - (old.bookmark.tokens if old else 0)
        pager._bookmark_tokens += delta
        pager.grouped.shown(idx, delta)
        heapq.heappush(pager._stale_heap, (len(pager.pages), idx))
    pager.changes.pending.bookmarks.append((idx, bm))
    pager.grouped.lines = None


def refresh_stale(pager: Keeping) -> None:
    """Refresh the stale bookmarks of evicted pages, oldest first, as many as the
    refreshes owed (``refresh_per_page`` per page closed since the last refresh)."""
    if not pager._refreshes or not pager.pages:
        return
    n = len(pager.pages)
    budget, pager._refresh_owed = pager._refresh_owed, 0  # per close since the last refresh
    heap = pager._stale_heap
    # Oldest bookmarks first; only evicted pages show bookmarks.
    while heap and budget > 0 and n >= heap[0][0] * 1.25 + 1:
        epoch, idx = heapq.heappop(heap)
        if idx < pager.grouped.end:  # its line is its group's: not shown, not refreshed
            continue
        if idx in pager._evicted_set and pager.books[idx].epoch == epoch:
            set_bookmark(pager, idx, keywords(pager, pager.pages[idx]))
            budget -= 1


def refresh_all(pager: Keeping, words: dict[PageId, tuple[str, ...]] | None = None) -> None:
    """Remake every bookmark (and the groups') with the whole conversation known;
    ``words``: the batch result if known already (else :func:`batch_keywords`)."""
    if not pager.pages:
        return
    kws = words if words is not None else batch_keywords(pager)
    pager.taken.clear()
    pager.books.clear()
    pager._bookmark_tokens = pager.grouped.tail_tokens = 0
    for page in pager.pages:
        set_bookmark(pager, page.index, kws[page.id])
    grouped = pager.grouped
    if grouped.groups:  # the groups' keywords too, with the whole conversation known
        grouped.set([grouped.make(pager.pages, pager.books, g.start, g.end)
                     for g in grouped.groups], pager.books, len(pager.pages),
                    pager._evicted_set)
    pager._maybe_regroup(force=True)


def batch_keywords(pager: Keeping) -> dict[PageId, tuple[str, ...]]:
    """Keywords of every page by the extractor's batch mode (whole conversation)."""
    found = pager.extractor.extract_all(pager.pages, pager.config.n_keywords)
    return {p.id: call_labels(p.turns) + tuple(found[p.id]) for p in pager.pages}
