"""Lexical retrieval scores: Okapi BM25, word overlap, and top-1 credit with ties.

Inputs are already tokenised (e.g. ``copage.core.text.content_words``); these
functions never lower-case or filter BM25 input themselves.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Collection, Sequence

from copage.core.text import STOPWORDS

__all__ = [
    "BM25Index",
    "bm25_idf",
    "bm25_scores",
    "rank_top1_credit",
    "word_overlap_scores",
]


def bm25_idf(n_docs: int, df: int) -> float:
    """BM25 IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))``, never negative.

    Robertson & Zaragoza (2009), "The Probabilistic Relevance Framework: BM25 and
    Beyond", eq. 3.3, with the ``1 +`` inside the log used by Lucene so that a
    term in more than half the documents still scores above zero.
    """
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


class BM25Index:
    """Okapi BM25 over a fixed list of tokenised documents.

    ``score(q, d) = sum over query tokens t of idf(t) * tf(t, d) * (k1 + 1) /
    (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))`` (Robertson & Zaragoza 2009,
    eq. 3.15). A query token repeated counts once per repetition, as in
    ``rank_bm25`` and ``bm25s``. Scoring walks only the postings of the query
    terms.
    """

    def __init__(self, docs: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75) -> None:
        if k1 < 0:
            raise ValueError(f"k1 must be >= 0, got {k1}")
        if not 0.0 <= b <= 1.0:
            raise ValueError(f"b must be in [0, 1], got {b}")
        if isinstance(docs, str):
            raise TypeError("docs must be a sequence of token sequences, not a string")
        self.k1, self.b = k1, b
        self.n_docs = len(docs)
        self.doc_len = [len(d) for d in docs]
        self.avgdl = sum(self.doc_len) / self.n_docs if self.n_docs else 0.0
        self._postings: dict[str, list[tuple[int, int]]] = {}
        for i, doc in enumerate(docs):
            if isinstance(doc, str):
                raise TypeError(f"document {i} is a string; pass a list of tokens")
            for term, tf in Counter(doc).items():
                self._postings.setdefault(term, []).append((i, tf))

    def df(self, term: str) -> int:
        """Number of documents containing ``term``."""
        return len(self._postings.get(term, ()))

    def scores(self, query_tokens: Sequence[str]) -> list[float]:
        """BM25 score of every document for the query, in document order."""
        if isinstance(query_tokens, str):
            raise TypeError("query_tokens must be a sequence of tokens, not a string")
        out = [0.0] * self.n_docs
        k1, b, avgdl = self.k1, self.b, self.avgdl
        for term, qtf in Counter(query_tokens).items():
            postings = self._postings.get(term)
            if not postings:
                continue
            idf = bm25_idf(self.n_docs, len(postings))
            for i, tf in postings:
                norm = 1.0 - b + b * self.doc_len[i] / avgdl
                out[i] += qtf * idf * tf * (k1 + 1.0) / (tf + k1 * norm)
        return out


def bm25_scores(
    query_tokens: Sequence[str], docs: Sequence[Sequence[str]], k1: float = 1.5, b: float = 0.75
) -> list[float]:
    """BM25 scores of ``docs`` for one query (builds a throwaway :class:`BM25Index`)."""
    return BM25Index(docs, k1=k1, b=b).scores(query_tokens)


def word_overlap_scores(query_tokens: Sequence[str], docs: Sequence[Sequence[str]]) -> list[float]:
    """Distinct shared content words, divided by sqrt(distinct content words of the doc).

    Content words are tokens not in ``STOPWORDS`` with two or more characters
    (compared lower-cased). The square root keeps long documents from winning by
    size alone while still rewarding them for covering more; a document with no
    content words scores 0.
    """
    query = {t.lower() for t in query_tokens if _is_content(t)}
    out: list[float] = []
    for doc in docs:
        vocab = {t.lower() for t in doc if _is_content(t)}
        out.append(len(query & vocab) / math.sqrt(len(vocab)) if vocab else 0.0)
    return out


def _is_content(token: str) -> bool:
    return len(token) > 1 and token.lower() not in STOPWORDS


def rank_top1_credit(scores: Sequence[float], relevant: Collection[int]) -> float:
    """Credit for ranking a relevant candidate first, sharing it among tied leaders.

    With ``t`` candidates tied at the maximum score (within 1e-12 relative), the
    credit is (relevant ones among them) / ``t``: an expected top-1 hit when ties
    are broken at random. If every score is equal (e.g. all 0), all candidates
    tie. No candidates gives 0.
    """
    bad = [i for i in relevant if not 0 <= i < len(scores)]
    if bad:
        raise ValueError(f"relevant index {bad[0]} out of range for {len(scores)} scores")
    if not scores:
        return 0.0
    best = max(scores)
    tol = 1e-12 * max(1.0, abs(best))
    top = [i for i, s in enumerate(scores) if s >= best - tol]
    return sum(1 for i in top if i in relevant) / len(top)
