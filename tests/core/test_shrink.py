"""``PagedMemory.shrink``: evicting below the budget at once (a model's window smaller
than the budget), by the eviction policy, stored like any eviction."""

from __future__ import annotations

from pathlib import Path

import pytest

from copage import PagedMemory


def chat(mem: PagedMemory, n: int = 300) -> PagedMemory:
    for i in range(n):
        mem.add("user" if i % 2 == 0 else "assistant",
                f"Line {i}: trains, weather and lunch plans, item number {i}.")
    return mem


def test_shrink_evicts_by_the_policy_down_to_the_tokens_and_is_stored(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    mem = chat(PagedMemory(store=url, conversation_id="c"))
    assert not mem.evicted and len(mem.resident) == 30
    before = mem.pager._resident_tokens
    evicted = mem.shrink(before // 3)
    assert evicted == [f"p{i}" for i in range(1, len(evicted) + 1)]  # LRU: the oldest first
    assert mem.pager._resident_tokens <= before // 3 and mem.evicted == evicted
    assert mem.stats().evictions == len(evicted)
    assert "[p1:" in mem.context(meter=False).messages[0]["content"]  # bookmarked
    assert "Line 0:" in mem.recall("p1")  # and recallable
    again = PagedMemory(store=url, conversation_id="c")  # a restart: the same state
    assert again.evicted == mem.evicted and again.resident == mem.resident


def test_shrink_to_zero_keeps_only_the_open_page_and_nothing_to_do_is_nothing() -> None:
    mem = chat(PagedMemory(), 101)
    assert mem.shrink(10**6) == []
    assert len(mem.shrink(0)) == 10 and mem.resident == [] and mem.pager.open_turns
    assert mem.shrink(0) == []
    for bad in (-1, 2.5, True, "10"):
        with pytest.raises(ValueError, match="tokens must be an int"):
            mem.shrink(bad)  # type: ignore[arg-type]
