"""The incremental evicted-page index scores exactly like BM25Index over those pages."""

from __future__ import annotations

import random

import pytest

from copage.core.evicted_index import EvictedIndex
from copage.core.retrieval import BM25Index
from copage.core.text import content_words

VOCAB = ["peanut", "allergy", "budget", "lisbon", "dentist", "thursday", "rust", "yoga",
         "sister", "deadline", "grant", "beagle", "flight", "hotel", "friday"]


@pytest.mark.parametrize("seed", range(30))
def test_matches_bm25index_through_evictions_and_page_ins(seed: int) -> None:
    rng = random.Random(seed)
    texts = [" ".join(rng.choices(VOCAB, k=rng.randint(1, 30))) for _ in range(20)]
    index, evicted = EvictedIndex(), set()
    for _ in range(60):
        idx = rng.randrange(len(texts))
        if idx in evicted and rng.random() < 0.5:
            index.remove(idx)
            evicted.discard(idx)
        else:
            index.add(idx, texts[idx])
            evicted.add(idx)
        query = rng.choices(VOCAB, k=3)
        order = sorted(evicted)
        ref = BM25Index([content_words(texts[i]) for i in order]).scores(query) if order else []
        got = index.scores(query)
        for pos, i in enumerate(order):
            assert got.get(i, 0.0) == pytest.approx(ref[pos], rel=1e-12, abs=1e-12)
        assert set(got) <= evicted


def test_best_prefers_older_page_on_ties_and_none_without_match() -> None:
    index = EvictedIndex()
    index.add(4, "peanut allergy")
    index.add(2, "peanut allergy")
    assert index.best("peanut")[0] == 2
    assert index.best("zebra")[0] is None
