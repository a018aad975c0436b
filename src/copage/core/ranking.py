"""The tie rule of copage's retrieval, top-1 credit, and word-overlap scores.

Tie rule (one for all callers): scores within ``TIE_RTOL`` (relative to the best)
are tied. :func:`rank_top1_credit` shares top-1 credit among the tied
candidates; :func:`top1` (and :meth:`copage.core.retrieval.BM25Index.best`) pick the
tied candidate that comes first. :func:`word_overlap_scores` is the baselines'
word-overlap retriever. Re-exported by :mod:`copage.core.retrieval`.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

from copage.core.text import STOPWORDS

TIE_RTOL = 1e-12
"""Scores within this share of the best score (at least 1) are tied."""


# ----------------------------------------------------------------- ties, top-1
def is_tied(score: float, best: float) -> bool:
    return score >= best - TIE_RTOL * max(1.0, abs(best))


def tied_top(scores: Sequence[float]) -> list[int]:
    """Positions of the scores tied at the maximum (all of them if every score is equal)."""
    if not scores:
        return []
    best = max(scores)
    return [i for i, s in enumerate(scores) if is_tied(s, best)]


def top1(scores: Sequence[float]) -> int:
    """Position of the best score (ties: the first); -1 when there are no scores."""
    top = tied_top(scores)
    return top[0] if top else -1


def rank_top1_credit(scores: Sequence[float], relevant: Collection[int]) -> float:
    """Credit for ranking a relevant candidate first, sharing it among tied leaders.

    With ``t`` candidates tied at the maximum score (the module's tie rule), the
    credit is (relevant ones among them) / ``t``: an expected top-1 hit when ties
    are broken at random. If every score is equal (e.g. all 0), all candidates
    tie. No candidates gives 0.
    """
    bad = [i for i in relevant if not 0 <= i < len(scores)]
    if bad:
        raise ValueError(f"relevant index {bad[0]} out of range for {len(scores)} scores")
    top = tied_top(scores)
    if not top:
        return 0.0
    return sum(1 for i in top if i in relevant) / len(top)


# ----------------------------------------------------------------- word overlap
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
