"""Routing: can the question find its page among the bookmarks? (LLM-free)

Used by ``copage simulate`` (``routing_top1``) and by the benchmark's reference
reader, so both measure bookmark discrimination the same way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache

from copage.core.retrieval import bm25_scores, rank_top1_credit, top1
from copage.core.text import index_terms


@dataclass(frozen=True, slots=True)
class Routing:
    """BM25 ranking of candidate bookmarks for one question.

    Attributes:
        credit: 1 if a needed page ranks first alone; ties share the credit
            (needed among the top-tied / number tied); 0 otherwise.
        best: the candidate index ranked first (lowest index among ties).
        candidates: number of candidates.
        chance: share of candidates that are needed pages.
    """

    credit: float
    best: int
    candidates: int
    chance: float


@lru_cache(maxsize=65536)
def _terms(text: str) -> Counter[str]:
    """Search-term counts of a bookmark or question (memoised: bookmarks repeat)."""
    return Counter(index_terms(text))


def bm25_candidates(question: str, bookmarks: Sequence[str], k1: float = 1.5,
                    b: float = 0.75) -> list[float]:
    """BM25 scores of ``bookmarks`` for ``question``, IDF over these candidates.

    :func:`copage.core.retrieval.bm25_scores` over the content words (copage's one
    BM25), with each text's term counts memoised.
    """
    return bm25_scores(_terms(question), [_terms(t) for t in bookmarks], k1, b)


def route(question: str, bookmarks: Sequence[str], needed: Collection[int]) -> Routing:
    """Rank ``bookmarks`` by BM25 against ``question`` (IDF over these candidates).

    Ties follow :mod:`copage.core.retrieval`'s rule: the credit is shared among the
    tied leaders and ``best`` is the first of them.
    """
    if not bookmarks:
        return Routing(0.0, -1, 0, 0.0)
    scores = bm25_candidates(question, bookmarks)
    credit = rank_top1_credit(scores, set(needed))
    return Routing(credit, top1(scores), len(bookmarks), len(set(needed)) / len(bookmarks))
