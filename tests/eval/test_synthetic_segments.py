"""Gold topic segments of synthetic samples (``synthetic["segments"]``)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from copage.eval.synthetic import generate, generate_preset, get_preset
from copage.eval.synthetic.builder import topic_starts
from copage.eval.synthetic.measures import flat_turns

# sha256 of conversation+qa of generate_preset("ablation", 1000), computed on the
# generator BEFORE the segments key was added: the key must not change any text.
ABLATION_1000_SHA256 = "37ffc5af8d7b61e08f4916b64863bfe22c199209d441767a184229affae578cc"
CONTROLLED_0_SHA256 = "82ced1cf6c2b43e071585ea3eb534eba2f62edc9268f86e01c3f236d82fb3c39"


def _digest(samples: list[dict[str, Any]]) -> str:
    body = [{"conversation": s["conversation"], "qa": s["qa"]} for s in samples]
    text = json.dumps(body, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.fixture(scope="module")
def ablation() -> list[dict[str, Any]]:
    return generate_preset("ablation", 1000)


def test_conversations_unchanged_by_segments(ablation: list[dict[str, Any]]) -> None:
    assert _digest(ablation) == ABLATION_1000_SHA256
    assert _digest(generate_preset("controlled", 0)) == CONTROLLED_0_SHA256


def test_synthetic_record_keeps_its_keys(ablation: list[dict[str, Any]]) -> None:
    for s in ablation:
        assert list(s["synthetic"]) == ["topology", "turns", "facts", "segments"]


def test_segments_cover_the_conversation(ablation: list[dict[str, Any]]) -> None:
    for s in ablation:
        n, starts = len(flat_turns(s)), s["synthetic"]["segments"]
        assert n == s["synthetic"]["turns"]
        assert starts[0] == 0 and starts == sorted(set(starts)) and starts[-1] < n
        lengths = [b - a for a, b in zip(starts, [*starts[1:], n], strict=True)]
        assert sum(lengths) == n and min(lengths) >= 1
        # topic blocks start at a user turn (the closing turn is a user turn too)
        turns = flat_turns(s)
        assert all(turns[i]["speaker"] == "User" for i in starts)


def test_fact_and_resumed_turns_start_blocks(ablation: list[dict[str, Any]]) -> None:
    for s in ablation:
        turns = flat_turns(s)
        index = {t["dia_id"]: i for i, t in enumerate(turns)}
        starts = set(s["synthetic"]["segments"])
        for f in s["synthetic"]["facts"]:
            for tid in [*f["turns"], *f["distractor_turns"]]:
                assert index[tid] in starts, (s["sample_id"], tid)
                assert index[tid] + 2 in starts or index[tid] + 2 >= len(turns)
        for i, t in enumerate(turns):
            if t["text"].startswith("Back to "):
                assert i in starts, (s["sample_id"], t["text"])


def test_forward_filler_blocks_span_several_exchanges(ablation: list[dict[str, Any]]) -> None:
    # forward topology: filler family blocks are 4-6 exchanges (fact turns may split
    # them), so gold segments are not all single exchanges.
    longest = []
    for s in ablation:
        if s["synthetic"]["topology"] == "forward":
            starts, n = s["synthetic"]["segments"], s["synthetic"]["turns"]
            assert len(starts) < n // 2
            longest.append(max(b - a for a, b in zip(starts, [*starts[1:], n], strict=True)))
    assert longest and min(longest) >= 4 and max(longest) >= 8


def test_segments_count_turns_across_sessions() -> None:
    one = generate(get_preset("ablation", conversations=3), 5)
    three = generate(get_preset("ablation", conversations=3, sessions=3), 5)
    for a, b in zip(one, three, strict=True):
        assert [t["text"] for t in flat_turns(a)] == [t["text"] for t in flat_turns(b)]
        assert a["synthetic"]["segments"] == b["synthetic"]["segments"]


def test_topic_starts() -> None:
    assert topic_starts(["g", "a", "a", "f", "a", "b", "b"], False) == [0, 2, 6, 8, 10]
    assert topic_starts(["g", "a"], True) == [0, 2, 4]
    assert topic_starts([], False) == []
