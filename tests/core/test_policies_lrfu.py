"""LRFU: the lambda extremes, the incremental CRF, and option checks."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator, Sequence

import pytest

from copage.core.cache import PageCache, replay
from copage.core.policies import History, get_policy
from copage.core.policies.lrfu import LRFUPolicy


def traces(seed: int, n: int) -> Iterator[tuple[list[str], int]]:
    rng = random.Random(seed)
    for _ in range(n):
        pages = [f"p{i}" for i in range(rng.randint(2, 10))]
        weights = [rng.random() ** 2 + 0.01 for _ in pages]
        yield rng.choices(pages, weights, k=rng.randint(5, 150)), rng.randint(1, 5)


def test_default_lambda() -> None:
    assert LRFUPolicy().lam == 0.3


@pytest.mark.parametrize(("lam", "twin"), [(0.0, "lfu"), (1.0, "lru")])
def test_extremes_equal_lfu_and_lru(lam: float, twin: str) -> None:
    differ = 0
    for i, (trace, k) in enumerate(traces(seed=int(lam * 10) + 1, n=1000)):
        got = replay(trace, "lrfu", k, lam=lam).hits
        assert got == replay(trace, twin, k).hits, f"trace #{i} k={k}: {trace}"
        if i < 300:
            other = "lru" if twin == "lfu" else "lfu"
            differ += replay(trace, other, k).hits != got
    assert differ > 30  # lfu and lru really differ on these traces


def ref_lrfu(trace: Sequence[str], k: int, lam: float) -> int:
    """LRFU from the definition: sum of 2**(-lam*age) over all past accesses."""
    times: dict[str, list[int]] = {}
    resident: list[str] = []
    hits = 0
    for t, p in enumerate(trace):
        times.setdefault(p, []).append(t)
        if p in resident:
            hits += 1
            continue
        if len(resident) == k:
            now = t + 1

            def crf(q: str, now: int = now) -> tuple[float, int]:
                return sum(2 ** (-lam * (now - s)) for s in times[q]), times[q][-1]

            resident.remove(min(resident, key=crf))
        resident.append(p)
    return hits


@pytest.mark.parametrize("lam", [0.01, 0.1, 0.3, 0.6])
def test_incremental_crf_matches_definition(lam: float) -> None:
    for i, (trace, k) in enumerate(traces(seed=5, n=400)):
        trace = trace[:60]  # keep 2**(-lam*age) far from underflow in the reference
        assert replay(trace, "lrfu", k, lam=lam).hits == ref_lrfu(trace, k, lam), f"#{i} {trace}"


def test_crf_value_and_o1_state() -> None:
    policy = LRFUPolicy(lam=0.5)
    cache = PageCache(policy, 3)
    cache.admit("p1")
    cache.admit("p2")
    cache.access("p1")
    cache.access("p1")
    # p1 accessed at clocks 0, 2, 3: CRF at time 3 = 2^-1.5 + 2^-0.5 + 1
    want = 2**-1.5 + 2**-0.5 + 1
    assert math.isclose(2 ** (policy.score("p1") - 0.5 * 3), want)
    assert set(policy.state()["crf"]) == {"p1", "p2"}  # one number per page


class _Spy(LRFUPolicy):
    """Checks that every victim has the lowest access count (LFU's primary key)."""

    def victim(self, candidates: Sequence[str], history: History, now: int) -> str:
        v = super().victim(candidates, history, now)
        assert history.count[v] == min(history.count[c] for c in candidates)
        self.checked = getattr(self, "checked", 0) + 1
        return v


def test_lambda_near_zero_evicts_by_frequency() -> None:
    """Near 0, LRFU ranks by count first; equal counts go by overall age (documented)."""
    spy = _Spy(lam=1e-6)
    for trace, k in traces(seed=9, n=200):
        replay(trace, spy, k)
    assert spy.checked > 1000


@pytest.mark.parametrize("bad", [-0.1, 1.5, "x", True])
def test_bad_lambda(bad: object) -> None:
    with pytest.raises(ValueError, match=r"lam must be a number in \[0, 1\]"):
        get_policy("lrfu", lam=bad)
