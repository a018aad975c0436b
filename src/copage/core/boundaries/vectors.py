"""Bag-of-words turn vectors for the content-aware strategies."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from copage.core.text import content_words
from copage.core.types import Turn

Matrix = npt.NDArray[np.float64]


def count_matrix(turns: Sequence[Turn]) -> Matrix:
    """Content-word counts, one row per turn (vocabulary = words of these turns)."""
    bags = [Counter(content_words(t.text)) for t in turns]
    vocab: dict[str, int] = {}
    for bag in bags:
        for w in bag:
            vocab.setdefault(w, len(vocab))
    m = np.zeros((len(turns), max(1, len(vocab))), dtype=np.float64)
    for i, bag in enumerate(bags):
        for w, c in bag.items():
            m[i, vocab[w]] = c
    return m


def tfidf_rows(counts: Matrix) -> Matrix:
    """L2-normalised TF-IDF rows; IDF is smoothed within the given turns.

    idf(w) = ln((1 + n) / (1 + df(w))) + 1 (the smoothed form used by scikit-learn's
    ``TfidfVectorizer``); rows without content words stay zero.
    """
    n = counts.shape[0]
    df = (counts > 0).sum(axis=0)
    idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
    x = counts * idf
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    out: Matrix = np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)
    return out


def cosine(a: Matrix, b: Matrix) -> float:
    """Cosine of two vectors (0 when either is zero)."""
    na, nb = float(np.linalg.norm(a)), float(np.linalg.norm(b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return float(a @ b) / (na * nb)
