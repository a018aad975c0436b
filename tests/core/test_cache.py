"""PageCache bookkeeping, limits, protect, replay and snapshot/restore."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from copage.core.cache import Access, PageCache, ReplayResult, replay
from copage.core.policies import POLICIES, EvictionPolicy, get_policy
from copage.core.policies.belady import FutureMismatchError

VOCAB = [
    "peanut",
    "allergy",
    "thai",
    "restaurant",
    "budget",
    "rust",
    "deadline",
    "doctor",
    "flight",
    "paris",
    "dog",
    "piano",
]


def make(name: str, future: list[str] | None = None) -> EvictionPolicy:
    return get_policy(name, future=future or []) if name == "belady" else get_policy(name)


def events(seed: int, n: int = 120, pages: int = 9) -> list[tuple[str, str | None]]:
    """(page id, query or None) accesses; texts for pages come from ``text_of``."""
    rng = random.Random(seed)
    out: list[tuple[str, str | None]] = []
    for _ in range(n):
        q = " ".join(rng.sample(VOCAB, 2)) if rng.random() < 0.3 else None
        out.append((f"p{rng.randrange(pages)}", q))
    return out


def text_of(pid: str) -> str:
    rng = random.Random(pid)
    return " ".join(rng.choices(VOCAB, k=6))


def drive(cache: PageCache, evs: list[tuple[str, str | None]]) -> list[tuple[bool, list[str]]]:
    """Run events through the cache; returns (hit, evicted) per event."""
    log: list[tuple[bool, list[str]]] = []
    for pid, query in evs:
        if query is not None:
            cache.set_query(query)
        if pid in cache.history.first:
            a = cache.access(pid)
            log.append((a.hit, a.evicted))
        else:
            cache.set_page_text(pid, text_of(pid))
            log.append((False, cache.admit(pid)))
    return log


def test_admit_access_hit_miss_and_order() -> None:
    cache = PageCache(get_policy("lru"), 2)
    assert cache.admit("p1") == [] and cache.admit("p2") == []
    assert cache.access("p1") == Access(hit=True, evicted=[])
    assert cache.admit("p3") == ["p2"]
    assert cache.resident == ["p1", "p3"]
    assert cache.access("p2") == Access(hit=False, evicted=["p1"])
    assert cache.resident == ["p3", "p2"]
    assert (cache.clock, cache.hits, cache.misses, cache.evictions) == (5, 1, 4, 2)


def test_fifo_reentry_resets_entering_time() -> None:
    cache = PageCache(get_policy("fifo"), 2)
    cache.admit("p1")
    cache.admit("p2")
    assert cache.admit("p3") == ["p1"]
    assert cache.access("p1").evicted == ["p2"]  # p1 re-enters as the newest
    assert cache.admit("p4") == ["p3"]


def test_bad_input_errors() -> None:
    with pytest.raises(ValueError, match="needs a capacity"):
        PageCache(get_policy("lru"))
    with pytest.raises(ValueError, match="at least 1"):
        PageCache(get_policy("lru"), 0)
    with pytest.raises(ValueError, match="size_of"):
        PageCache(get_policy("lru"), token_budget=10)
    with pytest.raises(TypeError, match="EvictionPolicy"):
        PageCache("lru", 3)  # type: ignore[arg-type]
    cache = PageCache(get_policy("lru"), 2)
    cache.admit("p1")
    with pytest.raises(ValueError, match="already admitted"):
        cache.admit("p1")
    with pytest.raises(ValueError, match="never admitted"):
        cache.access("p9")
    with pytest.raises(ValueError, match="not resident"):
        cache.evict("p9")


def test_explicit_evict_is_not_counted() -> None:
    cache = PageCache(get_policy("lru"), 2)
    cache.admit("p1")
    cache.evict("p1")
    assert cache.resident == [] and cache.evictions == 0
    assert cache.access("p1") == Access(hit=False, evicted=[])


def test_protect_and_only_protected_left() -> None:
    cache = PageCache(get_policy("lru"), 2)
    cache.admit("p1")
    cache.admit("p2")
    assert cache.admit("p3", protect={"p1"}) == ["p2"]
    # every other page protected: the policy picks among them, never the newest
    assert cache.admit("p4", protect={"p1", "p3", "p4"}) == ["p1"]
    assert cache.resident == ["p3", "p4"]


def test_token_budget_evicts_until_within() -> None:
    sizes = {"p1": 4, "p2": 4, "p3": 7, "p4": 20}
    cache = PageCache(get_policy("lru"), token_budget=10, size_of=sizes.__getitem__)
    cache.admit("p1")
    cache.admit("p2")
    assert cache.tokens == 8
    assert cache.admit("p3") == ["p1", "p2"]
    assert cache.tokens == 7
    assert cache.admit("p4") == ["p3"]  # too big alone: it stays, alone
    assert cache.resident == ["p4"]
    both = PageCache(get_policy("lru"), 3, token_budget=100, size_of=sizes.__getitem__)
    for p in ["p1", "p2", "p3", "p4"]:
        both.admit(p)
    assert both.resident == ["p2", "p3", "p4"]


def test_bad_size_of() -> None:
    cache = PageCache(get_policy("lru"), token_budget=10, size_of=lambda p: -1)
    with pytest.raises(ValueError, match="non-negative int"):
        cache.admit("p1")


def test_replay_counts_and_options() -> None:
    assert replay(["p1", "p2", "p1", "p3", "p2"], "lru", 2) == ReplayResult(1, 4, 2)
    assert replay(iter(["p1", "p1"]), get_policy("fifo"), 1) == ReplayResult(1, 1, 0)
    assert replay(["a", "b", "a"], "lru", 5, token_budget=3, size_of=lambda p: 2).hits == 0
    assert replay(["a", "b", "a", "c", "b"], "lrfu", 2, lam=1.0).hits == 1
    with pytest.raises(ValueError, match="policy name"):
        replay(["a"], get_policy("lru"), 1, lam=0.5)
    with pytest.raises(TypeError, match="not one string"):
        replay("p1p2", "lru", 1)


def test_replay_belady_gets_future_and_divergence_is_caught() -> None:
    trace = ["a", "b", "c", "a", "b", "d", "a"]
    assert replay(trace, "belady", 2).hits == 2
    assert replay(trace, "belady", 2, future=trace) == replay(trace, "belady", 2)
    with pytest.raises(FutureMismatchError, match="access #3"):
        replay(trace, "belady", 2, future=trace[:3] + ["x"] + trace[4:])
    with pytest.raises(FutureMismatchError, match="beyond"):
        replay(trace, "belady", 2, future=trace[:5])


@pytest.mark.parametrize("name", POLICIES.names())
@pytest.mark.parametrize("budget", [False, True])
def test_snapshot_json_round_trip_continues_identically(name: str, budget: bool) -> None:
    evs = events(seed=5)
    future = [p for p, _ in evs]
    opts: dict[str, Any] = (
        {"token_budget": 9, "size_of": lambda p: 1 + int(p[1:]) % 4} if budget else {}
    )
    whole = PageCache(make(name, future), 3, **opts)
    want = drive(whole, evs)
    half = PageCache(make(name, future), 3, **opts)
    got = drive(half, evs[:60])
    snap = json.loads(json.dumps(half.snapshot()))
    assert snap == half.snapshot()
    size_of = opts.get("size_of")
    restored = PageCache.restore(make(name, future), snap, size_of=size_of)
    assert restored.resident == half.resident and restored.clock == 60
    got += drive(restored, evs[60:])
    assert got == want
    assert (restored.hits, restored.misses, restored.evictions) == (
        whole.hits,
        whole.misses,
        whole.evictions,
    )
    assert restored.snapshot() == whole.snapshot()


def test_restore_checks() -> None:
    cache = PageCache(get_policy("lru"), 2)
    cache.admit("p1")
    with pytest.raises(ValueError, match="policy 'lru'"):
        PageCache.restore(get_policy("fifo"), cache.snapshot())
    with pytest.raises(ValueError, match="not a PageCache snapshot"):
        PageCache.restore(get_policy("lru"), {"version": 99})
    budget = PageCache(get_policy("lru"), token_budget=5, size_of=len)
    with pytest.raises(ValueError, match="size_of"):
        PageCache.restore(get_policy("lru"), budget.snapshot())
    bel = PageCache(get_policy("belady", future=["p1", "p2"]), 1)
    with pytest.raises(ValueError, match="future"):
        PageCache.restore(get_policy("belady", future=["p1"]), bel.snapshot())


def test_batch_eviction_on_admission_only() -> None:
    # Issue 17: once a closing page must evict, batch - 1 more go with it, so the next
    # admissions evict nothing (the prompt changes once per batch); a page-in still
    # evicts one page.
    from copage.core.policies import get_policy

    cache = PageCache(get_policy("lru"), 5, batch=2)
    out = [cache.admit(f"p{i}") for i in range(1, 10)]
    assert out[:5] == [[]] * 5
    assert out[5] == ["p1", "p2"] and out[6] == [] and out[7] == ["p3", "p4"] and out[8] == []
    assert cache.resident == ["p5", "p6", "p7", "p8", "p9"]
    assert cache.access("p1").evicted == ["p5"]
    with pytest.raises(ValueError, match="batch"):
        PageCache(get_policy("lru"), 2, batch=3)
    with pytest.raises(ValueError, match="batch"):
        PageCache(get_policy("lru"), 2, batch=0)
