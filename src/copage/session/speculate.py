"""Speculative page-in: bring back the evicted page the user's message clearly refers to.

Beyond the paper (off by default). Before the model is called, the evicted pages'
full text is ranked with Okapi BM25 (Robertson & Zaragoza 2009) against the content
words of the message. The match score is normalised as

    score = top BM25 score / sum of idf(t) over the distinct query terms t

with ``idf`` computed over the evicted pages (a term found in none gets the
largest idf, ``ln(1 + (N + 0.5) / 0.5)``). A page holding every query term once,
at average length, scores about 1; a page matching only generic or a few of the
terms scores near 0. The best page (ties: the older page) is paged in when its
score reaches the threshold, optionally with ``neighbours`` evicted pages on each
side of it.
"""

from __future__ import annotations

from dataclasses import dataclass

from copage.core.types import PageId, page_id, page_index
from copage.session.view import PagedView

DEFAULT_THRESHOLD = 0.35


@dataclass(frozen=True, slots=True)
class Speculation:
    """The best evicted page for a message, its normalised score, and what was paged in."""

    best: PageId | None
    score: float
    paged_in: tuple[PageId, ...] = ()


class Speculator:
    """Scores evicted pages against a message and pages the best one in."""

    def __init__(self, threshold: float = DEFAULT_THRESHOLD, neighbours: int = 0) -> None:
        if threshold < 0:
            raise ValueError(f"speculative_threshold must be >= 0, got {threshold}")
        if neighbours < 0:
            raise ValueError(f"speculative_neighbours must be >= 0, got {neighbours}")
        self.threshold, self.neighbours = threshold, neighbours

    def score(self, pager: PagedView, message: str) -> tuple[PageId | None, float]:
        """The best evicted page for ``message`` and its normalised score (None, 0.0 if none).

        Uses the pager's incremental index over evicted pages, so the cost does not
        grow with the number of evicted pages' text.
        """
        index = pager.evicted_index
        if not len(index):
            return None, 0.0
        match = pager.search_evicted(message)
        best, top, query = match.index, match.score, match.terms
        if best is None or not query:
            return None, 0.0
        mass = sum(index.idf(t) for t in query)
        return page_id(best), top / mass

    def page_in(self, pager: PagedView, message: str) -> Speculation:
        """Page in the best match (and neighbours) when its score reaches the threshold."""
        best, score = self.score(pager, message)
        if best is None or score < self.threshold:
            return Speculation(best, score)
        idx = page_index(best)
        wanted = [best] + [
            page_id(i)
            for d in range(1, self.neighbours + 1)
            for i in (idx - d, idx + d)
            if 0 <= i < len(pager.pages)
        ]
        done: list[PageId] = []
        for pid in wanted:
            if not pager.is_resident(pid):
                pager.access(pid, protect=done, kind="speculative")
                done.append(pid)
        pager.note("speculative", best, {"score": round(score, 4), "paged_in": done})
        return Speculation(best, score, tuple(done))

