"""The speculative fill's lazy, pruned ranking gives the fill of the plain full ranking.

``Speculator.plan`` reads the ranking through ``BM25Index.top`` (max-score pruning,
extended only as far as the walk goes); the plain implementation scores every evicted
page holding a query word (``score_map``) and sorts them all. On random conversations
and settings both must give the same fill: the same pages, order, scores and text.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from copage.core.text import query_terms
from copage.core.types import PageId, page_id
from copage.memory import PagedMemory
from copage.session.speculate import Speculation, Speculator
from copage.session.view import PagedView


def plain_ranking(pager: PagedView, message: str) -> tuple[Iterator[tuple[PageId, float]], float]:
    """The reference: score every evicted page holding a query word, sort them all."""
    index = pager.evicted_index
    terms = query_terms(message) if len(index) else ()
    if not terms:
        return iter(()), 1.0
    found, mass = index.score_map(terms), sum(index.idf(t) for t in terms) or 1.0
    order = sorted((k for k, s in found.items() if s > 0), key=lambda k: (-found[k], k))
    return iter([(page_id(k), found[k] / mass) for k in order]), mass


def conversation(rng: random.Random) -> tuple[PagedMemory, list[str]]:
    vocab = [f"word{i}" for i in range(rng.choice([8, 40, 200]))]
    weights = [1 / (i + 1) for i in range(len(vocab))]
    mem = PagedMemory(boundary=f"fixed_{rng.choice([2, 4, 10])}", resident_pages=rng.choice([1, 3]),
                      keywords="heuristic")
    texts = []
    for i in range(rng.randint(10, 160)):
        if texts and rng.random() < 0.1:
            text = rng.choice(texts)  # repeated text: pages with equal scores
        else:
            text = " ".join(rng.choices(vocab, weights, k=rng.randint(1, 30)))
        texts.append(text)
        mem.add("user" if i % 2 == 0 else "assistant", text)
    return mem, vocab


@pytest.mark.parametrize("seed", range(60))
def test_plan_equals_the_plain_ranking(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    mem, vocab = conversation(rng)
    speculators = [
        Speculator(threshold=rng.choice([0.0, 0.1, 0.35, 1.0]), neighbours=rng.choice([0, 0, 1]),
                   tokens=rng.choice([0, 60, 300, 1024, 100_000]),
                   pages=rng.choice([None, 1, 3]), relative=rng.choice([0.0, 0.0, 0.5, 0.9]))
        for _ in range(6)]
    questions = [" ".join(rng.choices([*vocab, "the", "unknown"], k=rng.randint(1, 15)))
                 for _ in range(8)]
    got: list[Speculation] = [s.plan(mem, q) for s in speculators for q in questions]
    ranked = [list(plain_ranking(mem, q)[0]) for q in questions]
    lazy = [Speculator().ranked(mem, q) for q in questions]
    with monkeypatch.context() as m:
        m.setattr(Speculator, "_ranking", staticmethod(plain_ranking))
        want = [s.plan(mem, q) for s in speculators for q in questions]
    assert got == want
    assert lazy == ranked  # the whole lazy ranking is the plain one
    assert any(s.paged_in for s in got) or not mem.evicted
