"""The meaning channel's fused order: after its places, the rest of the fill goes by
BM25's score (divided by the best) plus ``weight`` x the cosine (min-max scaled), so a
passage that BM25 does not reach but that means what the question asks comes before
passages that match neither (``DenseRanker.fused``, ``pick(ranked=...)``)."""

from __future__ import annotations

import numpy as np
import pytest
from test_dense_fill import ConceptVectors

from copage import PagedMemory
from copage.core.dense_rank import DEFAULT_WEIGHT, DenseRanker
from copage.core.passages import PassageIndex, pick, runs_of
from copage.core.types import Page, PageId, Turn
from copage.session import Speculator

STATEMENT = "I'm allergic to peanuts, so I always read food labels."
SECOND = "My doctor said nuts could put me in hospital one day."
QUESTION = "Was the train late, and can I have the satay?"
FILLER = ["We talked about the weather and the long drive to the coast.",
          "The meeting moved to Thursday afternoon after lunch.",
          "My cousin is painting the kitchen a pale green colour."]


def chat() -> PagedMemory:
    mem = PagedMemory(boundary="fixed_4", resident_pages=2)
    mem.add("user", STATEMENT)
    mem.add("assistant", "Noted, thanks.")
    for i in range(80):
        text = {20: "The train was late again, so I read a novel on the platform.",
                40: SECOND}.get(i, FILLER[i % 3] + f" ({i})")
        mem.add("user" if i % 2 == 0 else "assistant", text)
    assert {"p1", "p11"} <= set(mem.evicted)
    return mem


def test_a_second_fact_in_other_words_follows_the_lexical_matches_only_when_fused() -> None:
    mem = chat()
    fused = Speculator(whole=False, tokens=400, dense=DenseRanker(ConceptVectors())
                       ).plan(mem, QUESTION)
    plain = Speculator(whole=False, tokens=400, dense=DenseRanker(ConceptVectors(), weight=0)
                       ).plan(mem, QUESTION)
    for spec in (fused, plain):
        assert "train was late" in spec.text and spec.tokens <= 400
    # one place by meaning either way; the fused order brings the other fact too
    assert STATEMENT in fused.text and SECOND in fused.text
    assert (STATEMENT in plain.text) != (SECOND in plain.text)


def _index(texts: list[str]) -> PassageIndex:
    turns = tuple(Turn(id=i, role="user", text=t) for i, t in enumerate(texts))
    pages = [Page(id=PageId(f"p{i // 2 + 1}"), index=i // 2, turns=turns[i:i + 2], text="",
                  tokens=0) for i in range(0, len(turns), 2)]
    return PassageIndex(3).sync(pages)


def test_fused_scores_are_scaled_bm25_plus_weight_times_scaled_cosine() -> None:
    texts = ["train late", "weather coast", "lunch on Thursday", "satay nuts", "kitchen green",
             "my sister sails", "a pale coast", "novel platform", "peanut butter", "films"]
    index = _index(texts)
    ranker = DenseRanker(ConceptVectors(), weight=0.5)
    allowed = {0, 1, 2, 3}
    lexical = [(1, 4.0), (0, 2.0), (5, 1.0), (7, 3.0)]
    out = ranker.fused(index, "can I have satay", allowed, lexical)
    assert out is not None
    slots, order = out
    cos = ranker._passage_scores(index, "can I have satay", allowed)
    assert cos is not None
    ok = np.isfinite(cos)
    scaled = (cos - cos[ok].min()) / (cos[ok].max() - cos[ok].min())
    lex = np.zeros(len(cos))
    for s, v in lexical:
        lex[s] = v
    expect = {s: lex[s] / 4.0 + 0.5 * scaled[s] for s in range(len(cos)) if ok[s]}
    assert [s for s, _ in order] == sorted(expect, key=lambda s: (-expect[s], s))
    assert all(v == pytest.approx(expect[s]) for s, v in order)
    assert slots == ranker.top(index, "can I have satay", allowed)
    assert ranker.fused(index, "   ", allowed, lexical) is None


def test_pick_follows_a_given_ranking_and_its_relative_floor() -> None:
    index = _index([f"turn {i}" for i in range(12)])
    allowed = set(range(6))

    def cost(runs: list[tuple[int, int, int]]) -> int:
        return sum(end - start for _, start, end in runs)

    ranked = [(9, 1.0), (0, 0.8), (5, 0.2)]
    assert pick(index, ["turn"], allowed, 100, cost, ranked=ranked) == [
        9, 10, 11, 0, 1, 2, 5, 6, 7]
    assert pick(index, ["turn"], allowed, 100, cost, ranked=ranked, relative=0.5) == [
        9, 10, 11, 0, 1, 2]
    assert pick(index, ["turn"], allowed, 4, cost, ranked=ranked) == [9, 10, 11]
    assert runs_of(index, [9, 10, 11]) == [(4, 9, 10), (5, 10, 12)]


def test_the_weight_is_checked() -> None:
    assert DenseRanker(ConceptVectors()).weight == DEFAULT_WEIGHT
    for bad in (-0.1, float("inf"), float("nan"), "0.3", True):
        with pytest.raises(ValueError, match="weight"):
            DenseRanker(ConceptVectors(), weight=bad)  # type: ignore[arg-type]
