"""A small incremental Okapi BM25 over page texts (private to the ``query`` policy)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from copage.core.types import PageId


class BM25Pages:
    """Okapi BM25 (Robertson et al., TREC-3 1994) over a growing set of page texts.

    ``idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5))`` (the non-negative Lucene
    variant); ``score(q, d) = sum over query tokens t (repeats counted) of
    idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))``.
    Statistics cover every page given a text, resident or not.
    """

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tf: dict[PageId, Counter[str]] = {}
        self.length: dict[PageId, int] = {}
        self.df: Counter[str] = Counter()
        self.total = 0

    def set(self, pid: PageId, tokens: Sequence[str]) -> None:
        """Add or replace the tokens of page ``pid``."""
        if pid in self.tf:
            self.df.subtract(self.tf[pid].keys())
            self.total -= self.length[pid]
        tf = Counter(tokens)
        self.tf[pid], self.length[pid] = tf, len(tokens)
        self.df.update(tf.keys())
        self.total += len(tokens)

    def idf(self, term: str) -> float:
        """Okapi IDF with the ``1 +`` inside the log, never negative."""
        n, df = len(self.tf), self.df.get(term, 0)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    def score(self, query: Sequence[str], pid: PageId) -> float:
        """BM25 of page ``pid`` for ``query`` tokens (0 for a page without text)."""
        tf = self.tf.get(pid)
        if not tf or not query:
            return 0.0
        avgdl = self.total / len(self.tf)
        norm = self.k1 * (1 - self.b + self.b * self.length[pid] / avgdl) if avgdl else self.k1
        total = 0.0
        for term in query:
            f = tf.get(term, 0)
            if f:
                total += self.idf(term) * f * (self.k1 + 1) / (f + norm)
        return total
