"""One contract suite run against every registered eviction policy."""

from __future__ import annotations

import json
import random

import pytest

from copage.core.cache import PageCache, replay
from copage.core.policies import POLICIES, EvictionPolicy, UnknownNameError, get_policy

NAMES = POLICIES.names()


def make(name: str, future: list[str] | None = None) -> EvictionPolicy:
    return get_policy(name, future=future or []) if name == "belady" else get_policy(name)


def run(name: str, trace: list[str], k: int) -> tuple[PageCache, list[list[str]]]:
    cache = PageCache(make(name, trace), k)
    log: list[list[str]] = []
    for pid in trace:
        log.append(cache.access(pid).evicted if pid in cache.history.first else cache.admit(pid))
    return cache, log


def random_trace(seed: int, n: int = 80, pages: int = 9) -> list[str]:
    rng = random.Random(seed)
    return [f"p{rng.randrange(pages)}" for _ in range(n)]


def test_all_names_registered() -> None:
    assert NAMES == sorted(["adaptive", "belady", "fifo", "lfu", "lrfu", "lru", "query"])


def test_unknown_name_lists_valid_names() -> None:
    with pytest.raises(UnknownNameError) as err:
        get_policy("nope")
    for name in NAMES:
        assert name in str(err.value)
    with pytest.raises(UnknownNameError, match="lru"):
        replay(["p1"], "mru", 1)


def test_belady_without_future_explains() -> None:
    with pytest.raises(ValueError, match="offline oracle.*future"):
        get_policy("belady")


@pytest.mark.parametrize("name", NAMES)
class TestPolicyContract:
    def test_name_matches_registry(self, name: str) -> None:
        assert make(name).name == name

    def test_unknown_option_is_a_clear_error(self, name: str) -> None:
        with pytest.raises(ValueError, match="unknown option.*bogus"):
            get_policy(name, bogus=1)

    def test_no_eviction_until_full(self, name: str) -> None:
        trace = ["p1", "p2", "p3", "p1", "p2", "p3", "p4"]
        cache, log = run(name, trace, 3)
        assert log[:6] == [[]] * 6
        assert len(log[6]) == 1 and log[6][0] in {"p1", "p2", "p3"}
        assert cache.resident[-1] == "p4" and len(cache.resident) == 3

    def test_books_balance_on_random_traces(self, name: str) -> None:
        for seed in range(30):
            trace = random_trace(seed)
            k = 1 + seed % 4
            cache, log = run(name, trace, k)
            assert cache.hits + cache.misses == cache.clock == len(trace)
            assert cache.evictions == sum(len(e) for e in log)
            assert len(cache.resident) == min(k, len(set(trace)))
            resident: list[str] = []
            for pid, evicted in zip(trace, log, strict=True):
                hit = pid in resident
                assert not (hit and evicted), "a hit never evicts"
                if not hit:
                    resident.append(pid)
                    assert len(evicted) == (1 if len(resident) > k else 0)
                for v in evicted:
                    assert v != pid
                    resident.remove(v)
            assert resident == cache.resident

    def test_deterministic(self, name: str) -> None:
        trace = random_trace(42)
        assert run(name, trace, 3)[1] == run(name, trace, 3)[1]

    def test_capacity_one_keeps_only_the_newest(self, name: str) -> None:
        trace = ["p1", "p2", "p1", "p1", "p3"]
        cache, log = run(name, trace, 1)
        assert log == [[], ["p1"], ["p2"], [], ["p1"]]
        assert cache.hits == 1

    def test_protect_is_respected(self, name: str) -> None:
        trace = ["p1", "p2", "p3", "p4", "p5"]
        cache = PageCache(make(name, trace), 3)
        for p in trace[:3]:
            cache.admit(p)
        assert cache.admit("p4", protect={"p1", "p3"}) == ["p2"]
        assert cache.admit("p5", protect={"p1", "p3", "p4"}) in (["p1"], ["p3"], ["p4"])
        assert "p5" in cache.resident

    def test_state_is_json_and_bind_resets(self, name: str) -> None:
        trace = random_trace(1)
        policy = make(name, trace)
        first = replay(trace, policy, 3)
        state = policy.state()
        assert json.loads(json.dumps(state)) == state
        assert replay(trace, policy, 3) == first  # reusing an instance starts afresh

    def test_query_and_text_hooks_are_accepted(self, name: str) -> None:
        cache = PageCache(make(name, ["p1", "p2", "p3"]), 2)
        cache.set_query("peanut allergy")
        for p in ["p1", "p2", "p3"]:
            cache.set_page_text(p, f"text of {p} about peanut")
            cache.admit(p)
        cache.set_query(None)
        assert len(cache.resident) == 2
