"""Passages: overlapping runs of a few consecutive turns, the unit the fill ranks.

Beyond the paper. A fact of a chat sits in one or two turns, and the words of a
question about it are often in the turn before or after (the question the fact
answered, the reply that names it). A page of ten turns spends most of its tokens
on other things, and a fixed cut can put the question's words and the fact on two
sides of a boundary. Passage retrieval scores overlapping windows instead
(Callan 1994, "Passage-level evidence in document retrieval", SIGIR; Kaszkiel &
Zobel 1997, "Passage retrieval revisited", SIGIR: fixed-length windows starting
at every word position beat document and discourse units): here one window of
:data:`DEFAULT_WIDTH` turns starts at every closed turn, each scored with the one
BM25 of :mod:`copage.core.retrieval` over :func:`copage.core.text.index_terms`,
and a fill shows the best windows' turns, merged where they overlap or touch
(:mod:`copage.session.speculate`).

The index is derived state: :meth:`PassageIndex.sync` brings it up to date with a
pager's closed pages (appending the pages closed since, rebuilding when pages
were taken back), so it is never stored and never goes stale.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import NamedTuple

from copage.core.retrieval import BM25Index
from copage.core.text import index_terms
from copage.core.types import Page, Turn, render_turns

__all__ = ["DEFAULT_WIDTH", "FEEDBACK_PASSAGES", "FEEDBACK_TERMS", "PassageIndex", "TurnAt", "expand",
           "pick", "runs_of", "still_synced"]

DEFAULT_WIDTH = 3
"""Turns per passage. Chosen on the development conversations (docs/retrieval.md):
at equal billed tokens, windows of 3 turns covered more LoCoMo evidence than
windows of 2, 4 or 6 turns and than fixed units of 1 to 10 turns."""


class TurnAt(NamedTuple):
    """Where a closed turn lies: its page (0-based index) and the turn."""

    page: int
    turn: Turn


class PassageIndex:
    """BM25 over overlapping passages of the closed turns, keyed by the position of a
    passage's first turn among the closed turns (0-based).

    Args:
        width: turns per passage (>= 1).
    """

    def __init__(self, width: int = DEFAULT_WIDTH) -> None:
        if isinstance(width, bool) or not isinstance(width, int) or width < 1:
            raise ValueError(f"passage width must be an int >= 1, got {width!r}")
        self.width = width
        self.index: BM25Index[int] = BM25Index()
        self.turns: list[TurnAt] = []
        self._pages: list[Page] = []

    def __len__(self) -> int:
        return len(self.index)

    def sync(self, pages: Sequence[Page]) -> PassageIndex:
        """Bring the index up to date with ``pages`` (a pager's closed pages, in order):
        pages closed since the last call are added; if a page seen before was taken
        back or replaced, the index is rebuilt. Returns ``self``."""
        n = still_synced(self._pages, pages)
        if n < len(self._pages):
            self.index, self.turns, self._pages, n = BM25Index(), [], [], 0
        for page in pages[n:]:
            self._add(page)
        return self

    def _add(self, page: Page) -> None:
        before = len(self.turns)
        self._pages.append(page)
        self.turns.extend(TurnAt(page.index, t) for t in page.turns)
        # passages that end inside the new page are complete now
        for start in range(max(0, before - self.width + 1), len(self.turns) - self.width + 1):
            self.index.add(start, index_terms(self.text(start, start + self.width)))

    def text(self, start: int, end: int) -> str:
        """The rendered text of closed turns ``[start, end)`` (session dates kept)."""
        return render_turns([t.turn for t in self.turns[start:end]])

    def run_turns(self, start: int, end: int) -> list[Turn]:
        """The closed turns ``[start, end)`` (a fill frames them turn by turn)."""
        return [t.turn for t in self.turns[start:end]]

    def span(self, start: int) -> range:
        """The positions of the passage starting at ``start``."""
        return range(start, min(start + self.width, len(self.turns)))

    def top(self, terms: Iterable[str], k: int) -> list[tuple[int, float]]:
        """The ``k`` best passages for ``terms`` with their BM25 scores, best first (ties:
        the earlier passage)."""
        return self.index.top(list(terms), k)


def still_synced(seen: Sequence[Page], pages: Sequence[Page]) -> int:
    """How many of ``seen`` (the closed pages an index was built from, in order) an
    index can keep for ``pages`` (the closed pages now): all of them while they are
    still the first of ``pages`` (the last one checked by identity: pages are only
    appended, or taken back from the end), else 0 (rebuild)."""
    n = len(seen)
    return n if n <= len(pages) and (n == 0 or pages[n - 1] is seen[n - 1]) else 0


def runs_of(index: PassageIndex, positions: Iterable[int]) -> list[tuple[int, int, int]]:
    """``positions`` as runs of consecutive turns, cut where the page changes, in order."""
    out: list[tuple[int, int, int]] = []
    for pos in sorted(set(positions)):
        page = index.turns[pos].page
        if out and out[-1][2] == pos and out[-1][0] == page:
            out[-1] = (page, out[-1][1], pos + 1)
        else:
            out.append((page, pos, pos + 1))
    return out


SCAN = 4096
"""Passages :func:`pick` looks at, at most (and the BM25 ranking a fused order is given)."""


def pick(index: PassageIndex, terms: Sequence[str], allowed: set[int], room: int,
         cost: Callable[[list[tuple[int, int, int]]], int], *, relative: float = 0.0,
         max_pages: int | None = None, scan: int = SCAN, first: Sequence[int] = (),
         ranked: Sequence[tuple[int, float]] | None = None) -> list[int]:
    """The turns of the best passages for ``terms`` whose shown text fits ``room``.

    Passages are taken best first (ties: the earlier); of each, only the turns of
    pages in ``allowed`` (page indices: the evicted pages) are shown, so a passage
    with none is skipped. ``cost(runs)`` is the tokens the shown runs take; a
    passage whose turns would take the total past ``room`` is skipped and later,
    smaller additions are still tried. ``relative``: a later passage needs this
    share of the best score; ``max_pages``: at most this many distinct pages;
    ``scan``: at most this many passages are looked at; ``first``: passage starts
    offered before the ranking (another channel's picks, e.g.
    :class:`copage.core.dense_rank.DenseRanker`'s), under the same rules but for
    ``relative``; ``ranked``: ``(start, score)`` pairs, best first, taken instead of
    BM25's ranking for ``terms`` (e.g. :meth:`copage.core.dense_rank.DenseRanker.fused`'s).
    Returns the shown turns' positions in the order they were added.
    """
    shown: list[int] = []
    seen: set[int] = set()
    pages: set[int] = set()
    used = 0

    def offer(start: int) -> None:
        nonlocal used
        new = [p for p in index.span(start) if p not in seen and index.turns[p].page in allowed]
        if not new:
            return
        touched = {index.turns[p].page for p in new} - pages
        if max_pages is not None and len(pages) + len(touched) > max_pages:
            return
        total = cost(runs_of(index, [*shown, *new]))
        if total <= room:
            shown.extend(new)
            seen.update(new)
            pages.update(touched)
            used = total

    for start in first:
        offer(start)
    if ranked is not None:
        top = ranked[0][1] if ranked else 0.0
        for start, score in ranked[:scan]:
            if room - used <= 0 or score < relative * top:
                break
            offer(start)
        return shown
    if not terms:
        return shown
    k, done, top = 8, 0, 0.0
    while done < scan:
        ranked = index.top(terms, min(k, scan))
        for start, score in ranked[done:]:
            if not top:
                top = score
            elif score < relative * top:
                return shown
            offer(start)
        if len(ranked) < min(k, scan) or room - used <= 0:
            break
        done, k = len(ranked), 4 * k
    return shown


FEEDBACK_PASSAGES = 5
"""Passages read for :func:`expand` (the usual first setting of RM3; not tuned)."""
FEEDBACK_TERMS = 5
"""Terms :func:`expand` adds (idem)."""


def expand(index: PassageIndex, terms: Sequence[str], *, passages: int = FEEDBACK_PASSAGES,
           extra: int = FEEDBACK_TERMS) -> list[str]:
    """``terms`` with pseudo-relevance feedback: each query term twice, then up to
    ``extra`` terms that at least two of the ``passages`` best passages share (passages
    overlap, so the words of a best-matching turn qualify), by that count times their IDF (RM3's interpolation of the query with a feedback model,
    Abdul-Jaleel et al. 2004, "UMass at TREC 2004", in its simplest form: the original
    terms weigh twice a feedback term). A fact's turns often share no word with the
    question but do with the turns that match it (a name, a place, the thing the
    question calls by another name); the feedback terms reach them. Deterministic
    (ties: the term in sorting order)."""
    unique = sorted(set(terms))
    if not unique or not len(index):
        return list(unique)
    counts: dict[str, int] = {}
    for start, _ in index.top(unique, passages):
        span = index.span(start)
        for term in set(index_terms(index.text(span.start, span.stop))):
            counts[term] = counts.get(term, 0) + 1
    asked = set(unique)
    ranked = sorted(((-n * index.index.idf(t), t) for t, n in counts.items()
                     if n >= 2 and t not in asked))
    return [t for t in unique for _ in range(2)] + [t for _, t in ranked[:extra]]
