"""``random``: random non-stopword tokens of the page (the paper's lower-bound baseline)."""

from __future__ import annotations

import random
from collections.abc import Mapping

from copage.core.keywords.corpus import Corpus
from copage.core.keywords.extractor import BatchByCorpus, check_n, stable_seed
from copage.core.keywords.limits import bounded
from copage.core.keywords.terms import body, is_content, tokenize
from copage.core.types import Page


class RandomExtractor(BatchByCorpus):
    """``n`` distinct content words of the page drawn at random.

    The draw is seeded by ``seed`` and the page id through a stable hash, so a
    page gets the same keywords in every run and process, and different pages
    get independent draws. The corpus and ``taken`` are ignored.
    """

    name = "random"
    uses_corpus = False
    refresh_with_corpus = False

    def __init__(self, seed: int = 0) -> None:
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise TypeError(f"seed must be an integer, got {seed!r}")
        self.seed = seed

    def extract(
        self, page: Page, corpus: Corpus, n: int, *, taken: Mapping[str, int] | None = None
    ) -> tuple[str, ...]:
        """Up to ``n`` random distinct content words of ``page``."""
        check_n(n)
        vocab = list(
            dict.fromkeys(t.lower for t in tokenize(body(page.text)) if is_content(t.lower))
        )
        rng = random.Random(stable_seed("random-keywords", self.seed, page.id))
        return bounded(rng.sample(vocab, min(n, len(vocab))))
