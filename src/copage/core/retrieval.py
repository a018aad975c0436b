"""Lexical retrieval: the one Okapi BM25 of copage, word overlap, and the tie rule.

Every BM25 score in copage comes from here: recall by query and speculative
page-in (the pager's index over evicted pages), the ``query`` eviction policy,
routing in the simulation and the benchmark, and the baselines' retrievers.

Formula (Robertson & Zaragoza 2009, "The Probabilistic Relevance Framework: BM25
and Beyond", eq. 3.15, with Lucene's non-negative IDF)::

    score(q, d) = sum over distinct query terms t of
                  qtf(t) * idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
    idf(t)      = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

A query term repeated ``qtf`` times counts ``qtf`` times (as ``rank_bm25`` and
``bm25s``). This equals ``bm25s``'s ``method="lucene"`` times the constant
``k1 + 1`` (Lucene dropped that factor; it changes no ranking); the tests check it.

Tie rule (one for all callers): scores within ``1e-12`` (relative to the best)
are tied. :func:`rank_top1_credit` shares top-1 credit among the tied
candidates; :func:`top1` and :meth:`BM25Index.best` pick the tied candidate
with the smallest key (document position, or the earliest page). The tie rule,
top-1 credit and word overlap live in :mod:`copage.core.ranking` (re-exported here).

The best documents of a query (:meth:`BM25Index.top`, :meth:`BM25Index.best`) are
found without scoring every document that holds a common query word (max-score
pruning, or the same sums on arrays when nothing can be pruned); the documents,
their order and their scores are exactly those of :meth:`BM25Index.score_map`
(``tests/core/test_retrieval_top.py``), at a cost that does not grow with the
documents that cannot be among the best.

Inputs are already tokenised (e.g. :func:`copage.core.text.content_words`):
nothing here lower-cases or filters BM25 input.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from typing import Any, Generic, NamedTuple, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from copage.core.ranking import (
    TIE_RTOL,
    is_tied,
    rank_top1_credit,
    tied_top,
    top1,
    word_overlap_scores,
)

__all__ = [
    "TIE_RTOL",
    "BM25Index",
    "Best",
    "bm25_idf",
    "bm25_scores",
    "rank_top1_credit",
    "tied_top",
    "top1",
    "word_overlap_scores",
]


class _Key(Hashable, Protocol):
    def __lt__(self, other: Any, /) -> bool: ...


K = TypeVar("K", bound=_Key)


def bm25_idf(n_docs: int, df: int) -> float:
    """BM25 IDF ``ln(1 + (N - df + 0.5) / (df + 0.5))``, never negative.

    Robertson & Zaragoza (2009) eq. 3.3, with the ``1 +`` inside the log used by
    Lucene so that a term in more than half the documents still scores above zero.
    """
    return math.log(1.0 + (n_docs - df + 0.5) / (df + 0.5))


def _check_params(k1: float, b: float) -> tuple[float, float]:
    if isinstance(k1, bool) or not isinstance(k1, int | float) or k1 < 0:
        raise ValueError(f"k1 must be a number >= 0, got {k1!r}")
    if isinstance(b, bool) or not isinstance(b, int | float) or not 0.0 <= b <= 1.0:
        raise ValueError(f"b must be a number in [0, 1], got {b!r}")
    return float(k1), float(b)


def _counts(doc: Sequence[str] | Mapping[str, int], what: str) -> tuple[Mapping[str, int], int]:
    """Term counts and length of a document given as tokens or as term counts."""
    if isinstance(doc, str):
        raise TypeError(f"{what} is a string; pass a list of tokens")
    if isinstance(doc, Mapping):
        return doc, sum(doc.values())
    return Counter(doc), len(doc)


def _query(query: Iterable[str]) -> Counter[str]:
    if isinstance(query, str):
        raise TypeError("the query must be a sequence of tokens, not a string")
    return Counter(query)


class Best(NamedTuple):
    """The best match of :meth:`BM25Index.best`: ``key`` is None when nothing scores > 0."""

    key: Any
    score: float


class BM25Index(Generic[K]):
    """Okapi BM25 over documents that can be added, replaced and removed (see module doc).

    ``BM25Index(docs)`` indexes a list of token lists under keys ``0..n-1``;
    ``BM25Index()`` starts empty, then :meth:`add`/:meth:`set`/:meth:`remove` keep
    IDF and the average length exact for the documents present (O(document) each).
    Scoring walks only the postings of the query's terms.

    Args:
        docs: initial documents (token sequences), keyed by position.
        k1: term-frequency saturation (>= 0).
        b: length normalisation (0..1).
    """

    def __init__(
        self, docs: Sequence[Sequence[str]] = (), k1: float = 1.5, b: float = 0.75
    ) -> None:
        self.k1, self.b = _check_params(k1, b)
        if isinstance(docs, str):
            raise TypeError("docs must be a sequence of token sequences, not a string")
        self._tf: dict[K, Mapping[str, int]] = {}
        self._len: dict[K, int] = {}
        self._postings: dict[str, set[K]] = {}
        self._total = 0
        self._dense: _Dense[K] | None = None  # arrays for queries of common words only
        for i, doc in enumerate(docs):
            self.set(i, doc)  # type: ignore[arg-type]  # positional keys: BM25Index[int]

    # ------------------------------------------------------------- documents
    def __len__(self) -> int:
        return len(self._tf)

    def __contains__(self, key: object) -> bool:
        return key in self._tf

    def keys(self) -> list[K]:
        """Keys of the documents present, in the order they were added."""
        return list(self._tf)

    def add(self, key: K, doc: Sequence[str] | Mapping[str, int]) -> None:
        """Add a document under ``key`` (no-op if ``key`` is present)."""
        if key not in self._tf:
            self.set(key, doc)

    def set(self, key: K, doc: Sequence[str] | Mapping[str, int]) -> None:
        """Add or replace the document under ``key`` (tokens, or term counts); a
        replaced document keeps its place in :meth:`keys`."""
        counts, length = _counts(doc, f"document {key!r}")
        if counts is doc:
            counts = dict(counts)  # the caller's mapping may change later
        if key in self._tf:
            self._unindex(key)
        self._tf[key], self._len[key] = counts, length
        self._total += length
        for term in counts:
            self._postings.setdefault(term, set()).add(key)
        if self._dense is not None:
            self._dense.add(key, counts, length)

    def remove(self, key: K) -> None:
        """Remove the document under ``key`` (no-op if absent)."""
        if key in self._tf:
            self._unindex(key)
            del self._tf[key], self._len[key]

    def _unindex(self, key: K) -> None:
        """Take ``key``'s terms out of the postings and its length out of the total."""
        self._total -= self._len[key]
        for term in self._tf[key]:
            holders = self._postings[term]
            holders.discard(key)
            if not holders:
                del self._postings[term]
        if self._dense is not None:
            self._dense.remove(key, self._tf[key])

    # --------------------------------------------------------------- scoring
    def df(self, term: str) -> int:
        """Number of documents containing ``term``."""
        return len(self._postings.get(term, ()))

    def idf(self, term: str) -> float:
        """IDF of ``term`` over the documents present."""
        return bm25_idf(len(self._tf), self.df(term))

    def score_map(self, query: Iterable[str]) -> dict[K, float]:
        """BM25 of every document holding a query term (documents absent score 0)."""
        n = len(self._tf)
        if not n:
            return {}
        avgdl = self._total / n
        k1, b = self.k1, self.b
        tfs, lengths = self._tf, self._len
        out: dict[K, float] = {}
        get = out.get
        for term, qtf in _query(query).items():
            holders = self._postings.get(term)
            if not holders:
                continue
            weight = qtf * bm25_idf(n, len(holders))
            for key in holders:
                tf = tfs[key][term]
                out[key] = get(key, 0.0) + _term(weight, tf, lengths[key], avgdl, k1, b)
        return out

    def scores(self, query: Iterable[str]) -> list[float]:
        """BM25 of every document, in the order of :meth:`keys`."""
        found = self.score_map(query)
        return [found.get(key, 0.0) for key in self._tf]

    def score(self, query: Iterable[str], key: K) -> float:
        """BM25 of one document (0.0 if ``key`` is absent)."""
        tf = self._tf.get(key)
        n = len(self._tf)
        if not tf or not n:
            return 0.0
        avgdl, length = self._total / n, self._len[key]
        total = 0.0
        for term, qtf in _query(query).items():
            f = tf.get(term, 0)
            if f:
                total += _term(qtf * self.idf(term), f, length, avgdl, self.k1, self.b)
        return total

    def best(self, query: Iterable[str]) -> Best:
        """The best document for ``query`` (ties: the smallest key) and its score;
        ``Best(None, 0.0)`` when no document scores above 0. The same as taking it from
        :meth:`score_map`, at the cost of :meth:`top`'s pruned pass."""
        found = self._pruned(query, 1, tie=True)
        if not found:
            return Best(None, 0.0)
        top = max(found.values())
        if top <= 0.0:
            return Best(None, 0.0)
        key = min(k for k, s in found.items() if is_tied(s, top))
        return Best(key, found[key])

    def top(self, query: Iterable[str], k: int | None = None) -> list[tuple[K, float]]:
        """The ``k`` best documents for ``query`` (all when None) scoring above 0, best
        first (ties: the smaller key), with their scores: exactly the first ``k`` of
        :meth:`score_map`'s items sorted by ``(-score, key)``, the same floats.

        Max-score pruning (Turtle & Flood 1995): the query's terms are read from the
        highest score bound (``qtf * idf * (k1 + 1)``, the rarest) down, and once the
        bound of the terms left is below the k-th best partial score, no document
        holding none of the terms read can be among the ``k`` (nor tie with one), so
        the long postings of common terms are not walked; the documents that can are
        scored exactly, term by term in the query's order, as :meth:`score_map` does.
        When nothing can be pruned within half as many postings as there are documents
        (every query word is common), or within 256 postings, every document is scored
        as :meth:`score_map` does, the same operations on arrays (``numpy``; from
        ``DENSE_MIN`` documents; below, :meth:`score_map` itself).
        """
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
            raise ValueError(f"k must be an int >= 1 or None, got {k!r}")
        found = self._pruned(query, k)
        keys = (key for key, s in found.items() if s > 0)

        def rank(key: K) -> tuple[float, K]:
            return -found[key], key

        order = sorted(keys, key=rank) if k is None else heapq.nsmallest(k, keys, key=rank)
        return [(key, found[key]) for key in order]

    def _pruned(self, query: Iterable[str], k: int | None, *, tie: bool = False
                ) -> dict[K, float]:
        """:meth:`score_map`'s scores of a set of documents that holds the ``k`` best
        (all when None) and every document tied with the k-th (``tie``: within the
        module's tie tolerance, else equal)."""
        q = _query(query)
        n = len(self._tf)
        if k is None or not n:
            return self.score_map(q)
        avgdl = self._total / n
        k1, b = self.k1, self.b
        tfs, lengths = self._tf, self._len
        terms = []  # (term, weight, holders) in the query's order
        for term, qtf in q.items():
            holders = self._postings.get(term)
            if holders:
                terms.append((term, qtf * bm25_idf(n, len(holders)), holders))
        # a term adds at most weight * (k1 + 1) (tf / (tf + k1 * norm) <= 1), up to rounding
        bounds = [w * (k1 + 1.0) * _UP for _, w, _ in terms]
        order = sorted(range(len(terms)), key=lambda j: -bounds[j])
        left = [0.0] * (len(order) + 1)  # left[i]: bound of the terms order[i:]
        for i in range(len(order) - 1, -1, -1):
            left[i] = (left[i + 1] + bounds[order[i]]) * _UP
        partial: dict[K, float] = {}
        get = partial.get
        theta, rest, done, read = 0.0, 0.0, len(order), 0
        for i, j in enumerate(order):
            if len(partial) >= k:
                theta = _floor(partial, k, tie)
                if left[i] < theta:  # an unseen document scores below k seen ones
                    done, rest = i, left[i]
                    break
            term, weight, holders = terms[j]
            read += len(holders)
            if read > min(n // 2, _PRUNED_READ):  # too many postings to read one by one
                if n < DENSE_MIN:
                    return self.score_map(q)
                return self._dense_top(terms, k, tie)
            for key in holders:
                partial[key] = get(key, 0.0) + _term(weight, tfs[key][term], lengths[key],
                                                     avgdl, k1, b)
        if done == len(order) and len(partial) >= k:
            theta = _floor(partial, k, tie)
        out: dict[K, float] = {}
        for key, part in partial.items():
            if (part + rest) * _UP < theta:  # scores below k others: not among the k
                continue
            tf, length, total = tfs[key], lengths[key], 0.0
            for term, weight, _ in terms:  # score_map's sum, in its order
                f = tf.get(term, 0)
                if f:
                    total += _term(weight, f, length, avgdl, k1, b)
            out[key] = total
        return out

    def _dense_top(self, terms: Sequence[tuple[str, float, Collection[K]]], k: int, tie: bool
                   ) -> dict[K, float]:
        """:meth:`_pruned`'s answer for ``terms`` (term, weight, holders; the query's
        order) from arrays: every document's score summed as :meth:`score_map` sums it
        (the same operations in the same order, so the same floats), then the
        documents at or above the k-th score (``tie``: within the tie tolerance)."""
        if self._dense is None:
            self._dense = _Dense(self._tf, self._len)
        dense, n = self._dense, len(self._tf)
        avgdl = self._total / n
        acc = np.zeros(len(dense.keys))
        for term, weight, _ in terms:
            slots, tf = dense.postings(term, self._postings[term], self._tf)
            if avgdl:
                norm = (1.0 - self.b) + (self.b * dense.lens[slots]) / avgdl
            else:
                norm = np.ones(len(slots))
            acc[slots] += ((weight * tf) * (self.k1 + 1.0)) / (tf + self.k1 * norm)
        positive = int(np.count_nonzero(acc > 0))
        if not positive:
            return {}
        kth = float(np.partition(acc, -k)[-k]) if k < positive else float(acc[acc > 0].min())
        if tie:
            kth -= TIE_RTOL * max(1.0, abs(float(acc.max()))) * 2
        keys = dense.keys
        return {keys[i]: float(acc[i]) for i in np.flatnonzero(acc >= kth).tolist()
                if acc[i] > 0}


class _Dense(Generic[K]):
    """A BM25Index's documents as array slots, for scoring common words at C speed:
    the documents' lengths by slot, and for the terms asked for so far their postings
    as (slots, tf) arrays; kept up to date by the index's adds and removes."""

    def __init__(self, tfs: Mapping[K, Mapping[str, int]], lengths: Mapping[K, int]) -> None:
        self.keys: list[Any] = []  # slot -> key (None: a free slot)
        self.slot: dict[K, int] = {}
        self.free: list[int] = []
        self.lens = np.zeros(max(16, 2 * len(lengths)))
        self.terms: dict[str, tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]] = {}
        for key, length in lengths.items():
            self._place(key, length)

    def _place(self, key: K, length: int) -> int:
        if self.free:
            i = self.free.pop()
            self.keys[i] = key
        else:
            i = len(self.keys)
            self.keys.append(key)
            if i >= len(self.lens):
                self.lens = np.concatenate([self.lens, np.zeros(len(self.lens))])
        self.slot[key] = i
        self.lens[i] = length
        return i

    def add(self, key: K, counts: Mapping[str, int], length: int) -> None:
        i = self._place(key, length)
        for term, f in counts.items():
            got = self.terms.get(term)
            if got is not None:
                self.terms[term] = (np.append(got[0], i), np.append(got[1], float(f)))

    def remove(self, key: K, counts: Mapping[str, int]) -> None:
        i = self.slot.pop(key)
        self.keys[i] = None
        self.lens[i] = 0.0
        self.free.append(i)
        for term in counts:
            got = self.terms.get(term)
            if got is not None:
                keep = got[0] != i
                self.terms[term] = (got[0][keep], got[1][keep])

    def postings(self, term: str, holders: Collection[K], tfs: Mapping[K, Mapping[str, int]]
                 ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.float64]]:
        got = self.terms.get(term)
        if got is None:
            slot = self.slot
            got = self.terms[term] = (
                np.fromiter((slot[k] for k in holders), dtype=np.intp, count=len(holders)),
                np.fromiter((tfs[k][term] for k in holders), dtype=np.float64,
                            count=len(holders)))
        return got


DENSE_MIN = 64
"""From this many documents, a query whose words are all common is scored with arrays."""
_PRUNED_READ = 256  # postings read one by one before the array pass is cheaper
_UP, _DOWN = 1.0 + 1e-9, 1.0 - 1e-9  # margins far above the rounding of a few float operations


def _kth(scores: Mapping[Any, float], k: int) -> float:
    """The k-th largest value (``len(scores) >= k``)."""
    if k == 1:
        return max(scores.values())
    return heapq.nlargest(k, scores.values())[-1]


def _floor(partial: Mapping[Any, float], k: int, tie: bool) -> float:
    """A score that at least ``k`` documents of ``partial`` reach (their partial sums
    already do): a document below it is not among the ``k`` best (``tie``: nor tied
    with the k-th, within the tie tolerance)."""
    theta = _kth(partial, k) * _DOWN
    if tie:
        theta -= TIE_RTOL * max(1.0, theta) * 2
    return theta


def _term(weight: float, tf: int, length: int, avgdl: float, k1: float, b: float) -> float:
    """One query term's contribution: ``weight`` is ``qtf * idf``."""
    norm = 1.0 - b + b * length / avgdl if avgdl else 1.0
    return weight * tf * (k1 + 1.0) / (tf + k1 * norm)


def bm25_scores(
    query: Iterable[str],
    docs: Sequence[Sequence[str] | Mapping[str, int]],
    k1: float = 1.5,
    b: float = 0.75,
) -> list[float]:
    """BM25 of ``docs`` (token lists, or term counts) for one query, IDF over ``docs``.

    The same scores as ``BM25Index(docs).scores(query)``, without building postings:
    it touches only the query's terms, which is what a one-off ranking of a
    candidate list (routing over the evicted pages' bookmarks) needs
    (``docs/benchmarks-record.md`` measured both).
    """
    k1, b = _check_params(k1, b)
    counted = [_counts(d, f"document {i}") for i, d in enumerate(docs)]
    n = len(counted)
    out = [0.0] * n
    if not n:
        return out
    avgdl = sum(length for _, length in counted) / n
    for term, qtf in _query(query).items():
        postings = [(i, c[term]) for i, (c, _) in enumerate(counted) if c.get(term, 0)]
        if not postings:
            continue
        weight = qtf * bm25_idf(n, len(postings))
        for i, tf in postings:
            out[i] += _term(weight, tf, counted[i][1], avgdl, k1, b)
    return out
