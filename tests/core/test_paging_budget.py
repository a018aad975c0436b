"""Paging by budget (the default): nothing evicted while the conversation fits
``budget_tokens``; past it, evictions in one batch down to ``budget_floor``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from copage import PagedMemory
from copage.core import prompt
from copage.core.config import (
    DEFAULT_BUDGET_FLOOR,
    DEFAULT_BUDGET_TOKENS,
    PagerConfig,
)
from copage.core.pager import Pager
from copage.core.types import Turn, page_index
from copage.stores.sqlite import SQLiteStore

DATA = Path(__file__).parent / "data"
TOPICS = ("garden", "piano", "train", "violin", "river", "kitchen", "ferry")


def line(i: int) -> str:
    """As ``data/make_stored_before_budget.py`` writes them."""
    return f"Turn {i}: the {TOPICS[i % 7]} plan for week {i // 14}, item {i}."


def role(i: int) -> str:
    return "user" if i % 2 == 0 else "assistant"


def resident_tokens(pager: Pager) -> int:
    return sum(pager.pages[page_index(p)].tokens for p in pager.resident)


def test_the_default_pages_by_budget() -> None:
    cfg = PagerConfig()
    assert (cfg.resident_pages, cfg.resident_tokens) == (None, None)
    assert (cfg.budget_tokens, cfg.budget_floor) == (DEFAULT_BUDGET_TOKENS, DEFAULT_BUDGET_FLOOR)
    assert cfg.token_limit == DEFAULT_BUDGET_TOKENS
    assert PagerConfig.from_dict(cfg.to_dict()) == cfg


def test_a_conversation_under_4000_tokens_is_never_paged() -> None:
    mem = PagedMemory()  # the defaults
    i = 0
    while True:
        text = line(i) + " More about it: " + " ".join(TOPICS) * (i % 3)
        if mem.stats().full_tokens + mem.pager.tokenizer.count(text) >= 4000:
            break
        mem.add(role(i), text)
        i += 1
        ctx = mem.context()
        # the client's conversation unchanged: every turn, no bookmarks, no tool
        assert ctx.messages == prompt.turn_messages(mem.pager.turns), i
        assert ctx.tools == [] and not mem.pager.evicted
    assert i > 100 and mem.stats().evictions == 0 and len(mem.pager.pages) >= 10
    # the same requests as full context: the same cost, caching priced (full context's
    # cache breakpoint is after its latest assistant message, as the paged request's)
    pc = mem.stats().prompt_cache
    assert pc is not None
    for model, c in pc["cost_usd"].items():
        assert c["paged_cached"] == pytest.approx(c["full_cached"], rel=1e-9), model


def test_past_the_budget_the_resident_pages_stay_within_it() -> None:
    budget, floor = 1500, 600
    mem = PagedMemory(budget_tokens=budget, budget_floor=floor)
    pager = mem.pager
    batches = changed = 0
    system = None
    for i in range(1200):
        evicted = pager.counters.evictions
        if not pager.evicted:  # everything closed so far fits: nothing evicted yet
            assert sum(p.tokens for p in pager.pages) <= budget
        mem.add(role(i), line(i))
        held = resident_tokens(pager)
        assert held <= budget, i
        if pager.counters.evictions > evicted:
            batches += 1
            # one batch: down to the floor (the page that just closed stays)
            assert held <= floor or len(pager.resident) == 1, i
        if role(i) == "user":
            head = mem.context().messages[0]["content"]
            changed += head != system
            system = head
    # the prompt's head (bookmarks) changed only with an eviction batch
    assert batches >= 10 and changed <= batches + 1
    # a batch frees about budget - floor tokens: far fewer batches than evicted pages
    assert pager.counters.evictions >= 3 * batches


def test_the_default_budget_is_what_pages() -> None:
    pager = Pager()  # the defaults, driven past the default budget
    first = None
    i = 0
    while first is None:
        before = sum(p.tokens for p in pager.pages)
        pager.add(Turn(f"t{i}", role(i), line(i) + " " + " ".join(TOPICS) * 8))
        if pager.evicted:
            first = before
        i += 1
    # the first eviction came with the page that took the closed pages past the budget
    assert first <= DEFAULT_BUDGET_TOKENS < sum(p.tokens for p in pager.pages)
    assert resident_tokens(pager) <= DEFAULT_BUDGET_FLOOR


def test_explicit_resident_pages_page_as_before() -> None:
    mem = PagedMemory(resident_pages=4)  # the paper's setting: by page count
    assert (mem.config.budget_tokens, mem.config.budget_floor) == (None, None)
    assert mem.config.evict_batch == 2
    for i in range(84):
        mem.add(role(i), line(i))
    # as copage 8a51a7e paged these 84 turns at its defaults (data/stored_before_budget.json)
    before = json.loads((DATA / "stored_before_budget.json").read_text())
    assert mem.resident == before["at_84"]["resident"]
    assert len(mem.pager.evicted) == before["at_84"]["evicted"] == 4


@pytest.mark.parametrize(("settings", "message"), [
    ({"budget_tokens": 0}, "budget_tokens >= 1"),
    ({"budget_tokens": None}, "give resident_pages, resident_tokens or budget_tokens"),
    ({"budget_floor": DEFAULT_BUDGET_TOKENS}, "budget_floor must be >= 0 and below"),
    ({"budget_floor": -1}, "budget_floor must be >= 0 and below"),
    ({"budget_floor": None}, "budget_floor must be >= 0 and below"),
    ({"budget_tokens": 2.5}, "budget_tokens must be an integer"),
])
def test_bad_budgets_are_refused(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PagerConfig(**settings)  # type: ignore[arg-type]


def test_other_ways_of_paging_clear_the_budget() -> None:
    assert PagerConfig(resident_tokens=3000).budget_tokens is None
    assert PagerConfig(resident_pages=4, budget_tokens=10).budget_floor is None
    both = PagerConfig(resident_pages=4, resident_tokens=3000)  # resident_tokens wins
    assert (both.resident_pages, both.token_limit) == (None, 3000)
    # the benchmark's copy of the defaults with its own resident budget: no floor
    from dataclasses import replace

    planned = replace(PagerConfig(), resident_tokens=2000)
    assert planned.budget_floor is None and Pager(planned).cache.floor is None


def test_a_conversation_stored_before_keeps_its_paging(tmp_path: Path) -> None:
    """``data/stored_before_budget.sql``: 84 turns stored by copage 8a51a7e at its
    defaults (4 resident pages, batches of 2); reopened, it goes on paging by page count
    exactly as that version did (``stored_before_budget.json``), not by budget."""
    db = tmp_path / "c.db"
    with sqlite3.connect(db) as conn:
        conn.executescript((DATA / "stored_before_budget.sql").read_text())
    before = json.loads((DATA / "stored_before_budget.json").read_text())
    mem = PagedMemory(store=SQLiteStore(db), conversation_id="before", create=False)
    assert (mem.config.resident_pages, mem.config.budget_tokens) == (4, None)
    assert mem.resident == before["at_84"]["resident"]
    for i in range(84, 140):
        mem.add(role(i), line(i))
    assert mem.resident == before["at_140"]["resident"]
    assert mem.pager.evicted == before["at_140"]["evicted"]
    mem.store.close()
    again = PagedMemory(store=SQLiteStore(db), conversation_id="before")  # and again
    assert again.config == mem.config and again.resident == mem.resident


def test_a_budget_conversation_reopens_with_its_budget(tmp_path: Path) -> None:
    db = tmp_path / "c.db"
    mem = PagedMemory(store=SQLiteStore(db), conversation_id="b", budget_tokens=900,
                      budget_floor=300)
    for i in range(200):
        mem.add(role(i), line(i))
    mem.store.close()
    again = PagedMemory(store=SQLiteStore(db), conversation_id="b")
    assert again.config == mem.config and again.pager.cache.floor == 300
    ref = PagedMemory(budget_tokens=900, budget_floor=300)
    for i in range(300):
        ref.add(role(i), line(i))
        if i >= 200:
            again.add(role(i), line(i))
    assert again.resident == ref.resident and again.pager.evicted == ref.pager.evicted


def test_the_cache_evicts_down_to_its_floor_on_admission_only() -> None:
    from copage.core.cache import PageCache
    from copage.core.policies import get_policy

    cache = PageCache(get_policy("lru"), token_budget=100, floor=40, size_of=lambda p: 30)
    assert [cache.admit(p) for p in ("p1", "p2", "p3")] == [[], [], []]
    assert cache.admit("p4") == ["p1", "p2", "p3"]  # 120 > 100: down to 30 <= 40
    assert cache.access("p1").evicted == [] and cache.tokens == 60  # a page-in: just enough
    restored = PageCache.restore(get_policy("lru"), cache.snapshot(), size_of=lambda p: 30,
                                 floor=40)
    assert restored.floor == 40 and restored.resident == cache.resident
    with pytest.raises(ValueError, match="floor must be an int >= 0 below the token_budget"):
        PageCache(get_policy("lru"), token_budget=100, floor=100, size_of=lambda p: 30)


def test_a_small_budget_alone_takes_half_of_it_as_its_floor() -> None:
    """``budget_tokens=1500`` for a small model's window works without a floor of its own
    (the default floor of 2,000 would not be below it)."""
    assert PagerConfig(budget_tokens=1500).budget_floor == 750
    assert PagerConfig(budget_tokens=2000).budget_floor == 1000
    assert PagerConfig(budget_tokens=1).budget_floor == 0
    assert PagerConfig(budget_tokens=3000).budget_floor == 2000  # above it: the default
    assert PagerConfig(budget_tokens=1500, budget_floor=100).budget_floor == 100
    mem = PagedMemory(budget_tokens=1500)
    for i in range(120):
        mem.add(role(i), line(i))
    assert mem.pager.evicted and mem.config.budget_floor == 750
