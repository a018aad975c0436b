"""Pages brought in during a turn stay for the rest of that turn (issue 8 bench finding:
a `choose` pick evicted the page speculation had just paged in)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from copage.core.config import PagerConfig
from copage.core.pager import Pager
from copage.core.types import Turn
from copage.memory import PagedMemory


def _pager(resident: int = 1, policy: str = "lru") -> Pager:
    pager = Pager(PagerConfig(boundary="fixed_2", policy=policy, resident_pages=resident,
                              keywords="heuristic"))
    for i in range(12):  # 6 closed pages, p1..p6; only p6 resident
        role = "user" if i % 2 == 0 else "assistant"
        pager.add(Turn(id=f"t{i}", role=role, text=f"message {i} about topic {i // 2}"))
    return pager


def test_a_later_recall_of_the_turn_does_not_evict_an_earlier_page_in() -> None:
    pager = _pager(resident=2, policy="lfu")
    for _ in range(3):
        pager.access("p6")  # p6 is used often: LFU keeps it over anything used once
    assert pager.resident == ["p5", "p6"]
    pager.access("p2", kind="speculative")
    pager.recall("p3")  # LFU alone would evict p2 (used once), undoing the speculation
    assert set(pager.resident) == {"p2", "p3"}
    pager.recall("p4")  # nothing but pinned pages left: one of them must go
    assert "p4" in pager.resident and len(pager.resident) == 2


def test_pins_end_with_the_turn() -> None:
    pager = _pager(resident=1)
    pager.recall("p2")
    pager.add(Turn(id="u", role="user", text="a new question"))
    pager.recall("p3")
    assert pager.resident == ["p3"]  # p2 was last turn's: LRU evicts it
    pager.begin_turn()
    pager.recall("p4")
    assert pager.resident == ["p4"]


def test_demand_uses_ignore_pins() -> None:
    pager = _pager(resident=1)
    pager.recall("p2")
    pager.access("p3")  # a probe's demand use: the cache's policy alone decides
    assert pager.resident == ["p3"]


def test_pins_survive_a_reopen(tmp_path: Path) -> None:
    config: dict[str, Any] = {"boundary": "fixed_2", "policy": "lfu", "resident_pages": 2,
                              "keywords": "heuristic"}

    def opened(name: str) -> PagedMemory:
        mem = PagedMemory(store=f"sqlite://{tmp_path / name}", conversation_id="c", **config)
        for i in range(12):
            mem.add("user" if i % 2 == 0 else "assistant", f"message {i} about topic {i // 2}")
        for _ in range(3):
            mem.access("p6")
        mem.recall("p2")
        return mem

    straight = opened("a.db")
    straight.recall("p3")
    opened("b.db")
    reopened = PagedMemory(store=f"sqlite://{tmp_path / 'b.db'}", conversation_id="c")
    reopened.recall("p3")
    assert reopened.resident == straight.resident == ["p2", "p3"]
