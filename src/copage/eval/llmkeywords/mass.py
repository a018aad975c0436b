"""TF-IDF mass of the heuristic keywords: the signal behind ``auto``'s choice.

The paper (section 6) proposes "the average TF-IDF mass of heuristic-extracted
tokens" as the proxy for an informative heuristic base, without a formula. copage
uses a *relative* mass, which does not depend on page length:

For a conversation with pages P, term weights are ``w_p(t) = tf_p(t) * idf(t)``
over the single-word terms of page p (``copage.core.keywords.terms``), with the
smoothed IDF ``ln((1 + N) / (1 + df)) + 1`` over the N pages (as ``tfidf``).
``H(p)`` is the set of those terms occurring in p's ``heuristic`` keywords
(keywords split into words, lower-cased, content words only). Then::

    r(p) = sum(w_p(t) for t in H(p)) / sum(the |H(p)| largest w_p values of p)

(``r(p) = 0`` when ``H(p)`` is empty; pages without terms are skipped), and the
conversation's mass is the mean of ``r(p)``. ``r(p) = 1`` means the heuristic
picked exactly the page's top TF-IDF words; generic chat tokens push it down.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from statistics import fmean

from copage.core.keywords import DEFAULT_N_KEYWORDS, Corpus, KeywordExtractor, get_extractor
from copage.core.keywords.terms import is_bigram, is_content, tokenize
from copage.core.keywords.tfidf import smooth_idf
from copage.core.types import Page


def keyword_terms(keywords: Sequence[str]) -> set[str]:
    """Lower-cased content words of ``keywords`` (``"Thai Garden"`` -> thai, garden)."""
    return {tok.lower for kw in keywords for tok in tokenize(kw) if is_content(tok.lower)}


def page_mass(page: Page, corpus: Corpus, keywords: Sequence[str]) -> float | None:
    """``r(p)`` of the module docstring for ``page`` (in ``corpus``); None if it has no terms."""
    n = corpus.n_pages
    weights = {
        t: c * smooth_idf(n, corpus.df(t)) for t, c in corpus.tf(page.id).items()
        if not is_bigram(t)
    }
    if not weights or sum(weights.values()) <= 0:
        return None
    chosen = [t for t in keyword_terms(keywords) if t in weights]
    if not chosen:
        return 0.0
    top = heapq.nlargest(len(chosen), weights.values())
    return sum(weights[t] for t in chosen) / sum(top)


def heuristic_mass(
    pages: Sequence[Page], n: int = DEFAULT_N_KEYWORDS,
    extractor: KeywordExtractor | None = None,
) -> float:
    """Mean relative TF-IDF mass of the ``heuristic`` keywords of ``pages`` (0.0 if none)."""
    if not pages:
        return 0.0
    ext = extractor or get_extractor("heuristic")
    corpus = Corpus.from_pages(pages)
    values = [
        v for p in pages
        if (v := page_mass(p, corpus, ext.extract(p, corpus, n))) is not None
    ]
    return fmean(values) if values else 0.0
