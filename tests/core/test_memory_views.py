"""PagedMemory's read helpers for front ends: a page by id, the visible turns, has_turn."""

from __future__ import annotations

import pytest

from copage import PagedMemory


def test_page_visible_turns_has_turn_last_turn() -> None:
    mem = PagedMemory(boundary="fixed_2", policy="lru", resident_pages=1)
    assert mem.last_turn is None and mem.visible_turns() == []
    ids = [mem.add("user" if i % 2 == 0 else "assistant", f"t{i}") for i in range(7)]
    assert mem.evicted == ["p1", "p2"] and mem.resident == ["p3"]
    assert mem.page("p2") is mem.pages[1] and mem.page(2) is mem.pages[1]
    assert mem.page("3").id == "p3"
    for bad in ("p9", 0, "x", True):
        with pytest.raises(KeyError):
            mem.page(bad)
    assert [t.text for t in mem.visible_turns()] == ["t4", "t5", "t6"]
    assert mem.has_turn(ids[0]) and not mem.has_turn("nope")
    assert mem.last_turn is not None and mem.last_turn.text == "t6"
