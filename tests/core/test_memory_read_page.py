"""``PagedMemory.read_page`` only reads; ``page_in`` (the recall tool, ``recall``) pages in."""

from __future__ import annotations

from pathlib import Path

import pytest

from copage import PagedMemory


def _memory(tmp_path: Path) -> PagedMemory:
    mem = PagedMemory(boundary="fixed_2", resident_pages=1, store=f"sqlite://{tmp_path / 'm.db'}",
                      conversation_id="c")
    for i in range(5):
        mem.add("user", f"fact number {i} about tea")
        mem.add("assistant", f"noted {i}")
    return mem


def test_read_page_changes_nothing(tmp_path: Path) -> None:
    mem = _memory(tmp_path)
    assert "p1" in mem.evicted
    before = (mem.evicted, mem.stats().to_dict())
    text = mem.read_page("p1")
    assert text.startswith('<page id="p1">') and "fact number 0" in text
    assert (mem.evicted, mem.stats().to_dict()) == before
    again = PagedMemory(store=f"sqlite://{tmp_path / 'm.db'}", conversation_id="c",
                        create=False)
    assert "p1" in again.evicted, "nothing stored either"
    with pytest.raises(KeyError):
        mem.read_page("p99")


def test_page_in_is_the_recall_tool(tmp_path: Path) -> None:
    mem = _memory(tmp_path)
    text = mem.page_in("p1")
    assert text == mem.read_page("p1")
    assert "p1" not in mem.evicted
    assert mem.stats().recall_page_ins == 1
    again = PagedMemory(store=f"sqlite://{tmp_path / 'm.db'}", conversation_id="c",
                        create=False)
    assert "p1" not in again.evicted, "the page-in is stored"
    assert mem.recall("p2").startswith('<page id="p2">'), "recall works as documented"
