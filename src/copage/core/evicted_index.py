"""An incremental BM25 index over the evicted pages' full text.

Recall by query and speculative page-in rank evicted pages against a message.
Rebuilding an index over every evicted page on each turn costs O(conversation);
this index is updated when a page is evicted or paged in (O(page) each) and
scores a query by walking only the postings of its terms.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from copage.core.retrieval import bm25_idf
from copage.core.text import content_words


class EvictedIndex:
    """Okapi BM25 (Robertson & Zaragoza 2009; k1=1.5, b=0.75) over the evicted pages,
    with IDF and average length computed over the evicted pages only, exactly as
    :class:`copage.core.retrieval.BM25Index` built over them would."""

    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._terms: dict[int, Counter[str]] = {}
        self._len: dict[int, int] = {}
        self._postings: dict[str, set[int]] = {}  # term -> evicted pages holding it
        self._total = 0

    def __len__(self) -> int:
        return len(self._terms)

    def __contains__(self, idx: object) -> bool:
        return idx in self._terms

    def add(self, idx: int, text: str) -> None:
        """A page was evicted."""
        if idx in self._terms:
            return
        words = content_words(text)
        counts = Counter(words)
        self._terms[idx], self._len[idx] = counts, len(words)
        self._total += len(words)
        for term in counts:
            self._postings.setdefault(term, set()).add(idx)

    def remove(self, idx: int) -> None:
        """A page was paged in."""
        counts = self._terms.pop(idx, None)
        if counts is None:
            return
        self._total -= self._len.pop(idx)
        for term in counts:
            holders = self._postings[term]
            holders.discard(idx)
            if not holders:
                del self._postings[term]

    def idf(self, term: str) -> float:
        return bm25_idf(len(self._terms), len(self._postings.get(term, ())))

    def scores(self, query: Sequence[str]) -> dict[int, float]:
        """BM25 score of every evicted page holding a query term (others score 0)."""
        n = len(self._terms)
        if not n:
            return {}
        avgdl = self._total / n
        out: dict[int, float] = {}
        k1, b = self.k1, self.b
        terms, lengths, get = self._terms, self._len, out.get
        for term, qtf in Counter(query).items():
            holders = self._postings.get(term)
            if not holders:
                continue
            weight = qtf * bm25_idf(n, len(holders)) * (k1 + 1.0)
            for idx in holders:  # per-page sums still add terms in query order
                tf = terms[idx][term]
                norm = 1.0 - b + b * lengths[idx] / avgdl if avgdl else 1.0
                out[idx] = get(idx, 0.0) + weight * tf / (tf + k1 * norm)
        return out

    def best(self, text: str) -> tuple[int | None, float, list[str]]:
        """The best evicted page for ``text`` (ties: the older page), its score, and the
        query terms (distinct content words); ``(None, 0.0, terms)`` if nothing matches."""
        query = sorted(set(content_words(text)))
        scores = self.scores(query)
        if not scores:
            return None, 0.0, query
        idx = min(scores, key=lambda i: (-scores[i], i))
        return (idx, scores[idx], query) if scores[idx] > 0 else (None, 0.0, query)
