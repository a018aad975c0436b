"""bench/dense_channel.py without the model's weights: the rankings and the reserve1
fusion on toy inputs (the safetensors reader: tests/dense/test_tensor_file.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))

import dense_channel as dc

from copage.core.types import Turn


def test_reserve_takes_k_minus_d_then_the_second_rankings_best_new() -> None:
    first, second = [4, 2, 9, 1], [2, 4, 7, 9]
    assert dc.reserve(first, second, 3) == [4, 2, 7]
    assert dc.reserve(first, second, 2) == [4, 2]  # 1 from first, then second's best new
    assert dc.reserve(first, [4, 2], 2) == [4, 2]
    assert dc.reserve(first, second, 4, d=2) == [4, 2, 7, 9]
    with pytest.raises(ValueError):
        dc.reserve(first, second, 1)
    ranks = {"bm25+expand": first, "minilm-turnmax": second}
    assert dc.choose("reserve1", ranks, 1) is None
    assert dc.choose("reserve1", ranks, 3) == [4, 2, 7]


def test_turnmax_scores_a_passage_by_its_best_turn() -> None:
    q = np.array([1.0, 0.0])
    turns = np.array([[0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [0.0, 1.0], [1.0, 0.0], [0.0, 1.0]])
    # passages start at 0..3; turn 4 matches, so passages 2 and 3 tie (earlier first)
    assert dc.turnmax_rank(q, turns, 4) == [2, 3, 0, 1]


def test_bm25_rank_uses_copages_passages_and_ranks_every_passage() -> None:
    texts = ["hello there", "how are you", "I'm allergic to peanuts", "nice weather",
             "see you", "bye now"]
    turns = [Turn(id=f"t{i}", role="user" if i % 2 == 0 else "assistant", text=t)
             for i, t in enumerate(texts)]
    index = dc.passage_index(turns)
    assert len(index) == 4
    ranked = dc.bm25_rank(index, ["peanut"])
    assert sorted(ranked) == [0, 1, 2, 3]
    assert set(ranked[:3]) == {0, 1, 2} and ranked[3] == 3
