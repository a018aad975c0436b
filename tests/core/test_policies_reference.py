"""fifo, lru, lfu and belady against independent simulators on thousands of seeded traces."""

from __future__ import annotations

import random
from collections import OrderedDict, deque
from collections.abc import Callable, Iterator
from functools import cache

import cachetools
import pytest

from copage.core.cache import replay

Trace = list[str]


def random_traces(
    seed: int, n: int, max_len: int, max_pages: int, max_cap: int
) -> Iterator[tuple[Trace, int]]:
    """Seeded traces over skewed page distributions, with capacities."""
    rng = random.Random(seed)
    for _ in range(n):
        pages = [f"p{i}" for i in range(rng.randint(1, max_pages))]
        weights = [rng.random() ** 2 + 0.01 for _ in pages]
        trace = rng.choices(pages, weights, k=rng.randint(1, max_len))
        yield trace, rng.randint(1, max_cap)


def ref_fifo(trace: Trace, k: int) -> int:
    queue: deque[str] = deque()
    hits = 0
    for p in trace:
        if p in queue:
            hits += 1
            continue
        if len(queue) == k:
            queue.popleft()
        queue.append(p)
    return hits


def ref_lru(trace: Trace, k: int) -> int:
    od: OrderedDict[str, None] = OrderedDict()
    hits = 0
    for p in trace:
        if p in od:
            hits += 1
            od.move_to_end(p)
            continue
        if len(od) == k:
            od.popitem(last=False)
        od[p] = None
    return hits


def ref_lfu(trace: Trace, k: int) -> int:
    count: dict[str, int] = {}
    last: dict[str, int] = {}
    resident: set[str] = set()
    hits = 0
    for t, p in enumerate(trace):
        count[p] = count.get(p, 0) + 1
        last[p] = t
        if p in resident:
            hits += 1
            continue
        if len(resident) == k:
            resident.remove(min(resident, key=lambda q: (count[q], last[q])))
        resident.add(p)
    return hits


def ref_belady(trace: Trace, k: int) -> int:
    resident: list[str] = []
    hits = 0
    for t, p in enumerate(trace):
        if p in resident:
            hits += 1
            continue
        if len(resident) == k:

            def next_use(q: str, t: int = t) -> int:
                for j in range(t + 1, len(trace)):
                    if trace[j] == q:
                        return j
                return len(trace)

            resident.remove(max(resident, key=next_use))
        resident.append(p)
    return hits


def cachetools_hits(make: Callable[[int], cachetools.Cache[str, int]], trace: Trace, k: int) -> int:
    c = make(k)
    hits = 0
    for p in trace:
        if c.get(p) is not None:  # get() refreshes recency in LRUCache
            hits += 1
        else:
            c[p] = 1
    return hits


REFERENCES = {"fifo": ref_fifo, "lru": ref_lru, "lfu": ref_lfu, "belady": ref_belady}


@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_hits_equal_reference_simulator(name: str) -> None:
    ref = REFERENCES[name]
    for i, (trace, k) in enumerate(
        random_traces(seed=7, n=2000, max_len=60, max_pages=10, max_cap=6)
    ):
        got = replay(trace, name, k)
        want = ref(trace, k)
        assert got.hits == want, f"trace #{i} k={k}: {name} {got.hits} != reference {want}: {trace}"
        assert got.hits + got.misses == len(trace)
        assert got.evictions == got.misses - min(k, len(set(trace)))


@pytest.mark.parametrize(
    ("name", "make"), [("fifo", cachetools.FIFOCache), ("lru", cachetools.LRUCache)]
)
def test_hits_equal_cachetools(
    name: str, make: Callable[[int], cachetools.Cache[str, int]]
) -> None:
    for i, (trace, k) in enumerate(
        random_traces(seed=11, n=2000, max_len=60, max_pages=10, max_cap=6)
    ):
        got = replay(trace, name, k).hits
        want = cachetools_hits(make, trace, k)
        assert got == want, f"trace #{i} k={k}: {name} {got} != cachetools {want}: {trace}"


def optimal_misses(trace: Trace, k: int) -> int:
    """Exhaustive optimum over all demand-paging schedules (memoised search)."""

    @cache
    def go(i: int, resident: frozenset[str]) -> int:
        if i == len(trace):
            return 0
        p = trace[i]
        if p in resident:
            return go(i + 1, resident)
        if len(resident) < k:
            return 1 + go(i + 1, resident | {p})
        return 1 + min(go(i + 1, (resident - {v}) | {p}) for v in resident)

    return go(0, frozenset())


def test_belady_equals_exhaustive_optimum() -> None:
    for i, (trace, k) in enumerate(
        random_traces(seed=3, n=3000, max_len=12, max_pages=6, max_cap=3)
    ):
        got = replay(trace, "belady", k).misses
        want = optimal_misses(trace, k)
        assert got == want, f"trace #{i} k={k}: belady {got} misses, optimum {want}: {trace}"


def test_references_disagree_somewhere() -> None:
    """The policies are distinguishable on these traces, so equality above means something."""
    traces = list(random_traces(seed=7, n=300, max_len=60, max_pages=10, max_cap=6))
    for a, b in [("fifo", "lru"), ("lru", "lfu"), ("lfu", "belady")]:
        assert any(REFERENCES[a](t, k) != REFERENCES[b](t, k) for t, k in traces), (a, b)
