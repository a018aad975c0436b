"""``tfidf``: the page's top words by TF-IDF over the pages of the same conversation."""

from __future__ import annotations

import math
from collections.abc import Mapping

from copage.core.keywords.corpus import Corpus
from copage.core.keywords.extractor import BatchByCorpus, check_n
from copage.core.keywords.limits import bounded
from copage.core.keywords.terms import body, display_forms, is_bigram, term_counts
from copage.core.types import Page


def smooth_idf(n_pages: int, df: int) -> float:
    """Smoothed IDF ``ln((1 + N) / (1 + df)) + 1`` (scikit-learn's ``smooth_idf``)."""
    return math.log((1 + n_pages) / (1 + df)) + 1.0


class TfidfExtractor(BatchByCorpus):
    """Words ranked by raw count in the page times smoothed IDF over the corpus.

    IDF follows Sparck Jones (1972) with scikit-learn's smoothing. When the page
    is not in the corpus yet (live use, the corpus holds the pages closed so far)
    it is counted as one more document. Ties go to the earlier word in the page.
    ``taken`` is ignored: plain TF-IDF has no notion of other bookmarks.
    """

    name = "tfidf"
    uses_corpus = True
    refresh_with_corpus = True

    def extract(
        self, page: Page, corpus: Corpus, n: int, *, taken: Mapping[str, int] | None = None
    ) -> tuple[str, ...]:
        """Up to ``n`` words of ``page`` with the highest TF-IDF."""
        check_n(n)
        text = body(page.text)
        counts = corpus.tf(page.id) if page.id in corpus else term_counts(page.text)
        extra = 0 if page.id in corpus else 1
        n_pages = corpus.n_pages + extra
        forms = display_forms(text)
        order = {term: i for i, term in enumerate(forms)}
        scored = [
            (
                -count * smooth_idf(n_pages, corpus.df(term) + extra),
                order.get(term, len(order)),
                term,
            )
            for term, count in counts.items()
            if not is_bigram(term)
        ]
        scored.sort()
        return bounded(forms.get(term, term) for _, _, term in scored[:n])
