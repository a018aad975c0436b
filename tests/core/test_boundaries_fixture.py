"""segment vs fixed_20 on the hand-labelled chats of tests/fixtures/segmentation."""

from __future__ import annotations

import json
from pathlib import Path

from copage.core.boundaries import get_boundary, pk, split
from copage.core.boundaries.segmentation_errors import default_k
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


def test_topic_shift_makes_no_one_turn_pages() -> None:
    """Online, the buffer starts at the previous cut: TextTiling must see the end of the
    previous page, or its first gap (one turn against six) reads as a valley and the
    page closes after one turn (issue 11: 6 one-turn pages of 32 here before the fix)."""
    from copage.core.boundaries import split_online

    for turns, _ in load():
        for pages in (split(turns, get_boundary("topic_shift")),
                      split_online(turns, get_boundary("topic_shift"))):
            assert min(len(p) for p in pages) >= 3
    offline = sum(len(split(t, get_boundary("topic_shift"))) for t, _ in load())
    online = sum(len(split_online(t, get_boundary("topic_shift"))) for t, _ in load())
    assert online <= 1.25 * offline  # was 32 vs 21


def test_paginator_gives_topic_shift_the_previous_turns() -> None:
    """The pager's cuts equal split_online's, which passes ``before`` (lookbehind turns)."""
    from copage.core.boundaries import split_online
    from copage.core.paginate import paginate

    for turns, _ in load():
        spans = paginate(turns, get_boundary("topic_shift"))
        assert ends([turns[s.start:s.end] for s in spans]) == ends(
            split_online(turns, get_boundary("topic_shift")))


def test_topic_shift_sees_before_as_context_only() -> None:
    ts = get_boundary("topic_shift", min_page=1)
    turns = load()[0][0]
    before, buffer = turns[:6], turns[6:40]
    seen: list[object] = []

    class Spy:
        name, lookbehind = "spy", 6

        def cuts(self, buf: object, *, final: bool, before: object = ()) -> list[int]:
            seen.append(before)
            return ts.cuts(buf, final=final, before=before)  # type: ignore[arg-type]

    from copage.core.paginate import cuts_with_context

    got = cuts_with_context(Spy(), turns, 6, 40, final=True)  # type: ignore[arg-type]
    assert seen == [before] and got == ts.cuts(buffer, final=True, before=before)
    assert all(0 < c <= len(buffer) for c in got)
