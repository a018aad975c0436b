"""BM25Index.top and best (max-score pruning) against the plain full scoring, on random corpora.

The pruned pass must give exactly what sorting :meth:`BM25Index.score_map` gives: the
same documents, in the same order (ties: the smaller key), with the same floats.
"""

from __future__ import annotations

import random

import pytest

from copage.core.retrieval import DENSE_MIN, TIE_RTOL, Best, BM25Index


def plain_top(index: BM25Index[int], query: list[str], k: int | None) -> list[tuple[int, float]]:
    found = index.score_map(query)
    order = sorted((key for key, s in found.items() if s > 0), key=lambda key: (-found[key], key))
    return [(key, found[key]) for key in order[:k]]


def plain_best(index: BM25Index[int], query: list[str]) -> Best:
    found = index.score_map(query)
    top = max(found.values(), default=0.0)
    if top <= 0:
        return Best(None, 0.0)
    key = min(k for k, s in found.items() if s >= top - TIE_RTOL * max(1.0, abs(top)))
    return Best(key, found[key])


def corpus(rng: random.Random) -> tuple[list[str], list[list[str]]]:
    """Documents over a Zipf-like vocabulary (a few words everywhere, many rare ones),
    some of them repeated (exact ties)."""
    vocab = [f"w{i}" for i in range(rng.choice([5, 30, 300]))]
    weights = [1 / (i + 1) ** rng.choice([0.5, 1.0, 1.5]) for i in range(len(vocab))]
    docs: list[list[str]] = []
    for _ in range(rng.randint(1, 120)):
        if docs and rng.random() < 0.15:
            docs.append(list(rng.choice(docs)))
        else:
            docs.append(rng.choices(vocab, weights, k=rng.randint(1, 40)))
    return vocab, docs


@pytest.mark.parametrize("seed", range(100))
def test_top_and_best_equal_the_plain_scoring(seed: int) -> None:
    rng = random.Random(seed)
    vocab, docs = corpus(rng)
    k1, b = rng.choice([(1.5, 0.75), (1.2, 0.75), (0.0, 0.5), (2.0, 1.0), (0.9, 0.0)])
    index: BM25Index[int] = BM25Index(k1=k1, b=b)
    keys = rng.sample(range(10 * len(docs)), len(docs))  # keys not in insertion order
    for key, doc in zip(keys, docs, strict=True):
        index.add(key, doc)
    for key in rng.sample(keys, len(keys) // 5):  # the index is kept up to date
        index.remove(key)
    for _ in range(10):
        query = rng.choices([*vocab, "absent"], k=rng.randint(1, 12))
        if rng.random() < 0.5:
            query = sorted(set(query))  # as query_terms gives them
        for k in (1, 2, 3, 8, 50, None):
            assert index.top(query, k) == plain_top(index, query, k), (query, k)
        assert index.best(query) == plain_best(index, query)


def test_top_prunes_the_common_words_postings() -> None:
    # one rare word in one document, a common word in all: the common word's postings
    # are not needed to know the best document
    docs = [["common", "filler"] for _ in range(500)] + [["common", "rare"]]
    index = BM25Index(docs)
    calls = 0
    plain = index.score_map(["rare", "common"])

    class Counting(dict[str, int]):
        def __getitem__(self, term: str) -> int:
            nonlocal calls
            calls += 1
            return super().__getitem__(term)

    index._tf = {key: Counting(tf) for key, tf in index._tf.items()}  # type: ignore[misc]
    assert index.top(["rare", "common"], 1) == [(500, plain[500])]
    assert calls <= 2  # the rare word's one posting; not the 501 of the common word


def test_top_checks_k() -> None:
    index = BM25Index([["a"]])
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="k must be"):
            index.top(["a"], bad)  # type: ignore[arg-type]
    assert BM25Index().top(["a"], 3) == [] and index.top([], 2) == []


@pytest.mark.parametrize("seed", range(12))
def test_the_array_path_follows_adds_and_removes(seed: int) -> None:
    """Queries of common words only (scored on arrays from DENSE_MIN documents), with
    documents added, replaced and removed between queries: still the plain scoring."""
    rng = random.Random(seed)
    vocab = [f"w{i}" for i in range(rng.choice([3, 6, 12]))]
    index: BM25Index[int] = BM25Index()
    present: list[int] = []
    for step in range(400):
        if present and rng.random() < 0.3:
            key = present.pop(rng.randrange(len(present)))
            index.remove(key)
        else:
            key = rng.choice(present) if present and rng.random() < 0.1 else step
            index.set(key, rng.choices(vocab, k=rng.randint(1, 20)))
            if key not in present:
                present.append(key)
        if step % 7 == 0:
            query = rng.choices(vocab, k=rng.randint(1, 6))
            for k in (1, 2, 5, 40):
                assert index.top(query, k) == plain_top(index, query, k)
            assert index.best(query) == plain_best(index, query)
    assert len(present) > DENSE_MIN and index._dense is not None  # the array path was used
