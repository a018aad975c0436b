"""Routing: can the question find its page among the bookmarks? (LLM-free)

Used by ``copage simulate`` (``routing_top1``) and by the benchmark's reference
reader, so both measure bookmark discrimination the same way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache

from copage.core.retrieval import bm25_idf
from copage.core.text import content_words


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
def _terms(text: str) -> tuple[Counter[str], int]:
    """Term counts and length of a bookmark or question (memoised: bookmarks repeat)."""
    words = content_words(text)
    return Counter(words), len(words)


def bm25_candidates(question: str, bookmarks: Sequence[str], k1: float = 1.5,
                    b: float = 0.75) -> list[float]:
    """BM25 scores of ``bookmarks`` for ``question``, IDF over these candidates.

    Equal to ``BM25Index([content_words(b) ...]).scores(content_words(question))``
    (same formula and summation order, tested), but touches only the query terms,
    so a fault over hundreds of bookmarks costs microseconds.
    """
    docs = [_terms(t) for t in bookmarks]
    n = len(docs)
    avgdl = sum(d[1] for d in docs) / n if n else 0.0
    out = [0.0] * n
    for term, qtf in _terms(question)[0].items():
        postings = [(i, d[0][term]) for i, d in enumerate(docs) if term in d[0]]
        if not postings:
            continue
        idf = bm25_idf(n, len(postings))
        for i, tf in postings:
            norm = 1.0 - b + b * docs[i][1] / avgdl
            out[i] += qtf * idf * tf * (k1 + 1.0) / (tf + k1 * norm)
    return out


def route(question: str, bookmarks: Sequence[str], needed: Collection[int]) -> Routing:
    """Rank ``bookmarks`` by BM25 against ``question`` (IDF over these candidates)."""
    if not bookmarks:
        return Routing(0.0, -1, 0, 0.0)
    scores = bm25_candidates(question, bookmarks)
    top = max(scores)
    tied = [i for i, s in enumerate(scores) if s == top]
    credit = sum(1 for i in tied if i in needed) / len(tied)
    return Routing(credit, tied[0], len(bookmarks), len(set(needed)) / len(bookmarks))
