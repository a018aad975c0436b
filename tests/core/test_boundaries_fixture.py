"""segment vs fixed_20 on the hand-labelled chats of tests/fixtures/segmentation."""

from __future__ import annotations

import json
from pathlib import Path

from copage.core.boundaries import get_boundary, pk, split
from copage.core.boundaries.metrics import default_k
from copage.core.types import Turn

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures/segmentation/chats.json"


def load() -> list[tuple[list[Turn], list[int]]]:
    doc = json.loads(FIXTURE.read_text())
    out = []
    for c in doc["conversations"]:
        turns = [
            Turn(id=f"{c['id']}:{i}", role=t["role"], text=t["text"])
            for i, t in enumerate(c["turns"])
        ]
        out.append((turns, [*c["boundaries"], len(turns)]))
    return out


def ends(pages: list[list[Turn]]) -> list[int]:
    out, pos = [], 0
    for p in pages:
        pos += len(p)
        out.append(pos)
    return out


def test_fixture_is_well_formed() -> None:
    convs = load()
    assert len(convs) >= 4
    for turns, gold in convs:
        assert 40 <= len(turns) <= 80
        assert gold == sorted(set(gold)) and gold[-1] == len(turns)


def test_segment_beats_fixed_20_without_more_pages() -> None:
    pages = {"fixed_20": 0, "segment": 0}
    errors = {"fixed_20": 0.0, "segment": 0.0}
    for turns, gold in load():
        n, k = len(turns), default_k(gold, len(turns))
        for name in pages:
            cut = split(turns, get_boundary(name))
            pages[name] += len(cut)
            errors[name] += pk(gold, ends(cut), n, k) * (n - k)
    assert pages["fixed_20"] / 1.5 <= pages["segment"] <= pages["fixed_20"] * 1.5
    assert errors["segment"] < errors["fixed_20"]
