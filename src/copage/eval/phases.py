"""Access traces whose best eviction policy changes phase by phase.

Used by the ``adaptive`` policy's test and by ``bench/bench_policies.py --phases``:
frequency-friendly phases (a few hot pages among pages used once, where LFU wins)
alternate with recency-friendly ones (a small working set sliding forward, where
LRU wins), so a policy that follows the better expert must keep switching.
"""

from __future__ import annotations

import random

from copage.core.cache import PageCache
from copage.core.policies import EvictionPolicy

__all__ = ["PHASES", "phase_hit_rates", "phase_trace"]

PHASES = ("freq", "recency", "freq", "recency")


def phase_trace(k: int, seed: int, phase_len: int = 400) -> tuple[list[str], list[range]]:
    """A trace of the :data:`PHASES` (``phase_len`` accesses each, new pages in each
    phase) for a cache of ``k`` pages, and the index range of each phase."""
    rng = random.Random(seed)
    trace: list[str] = []
    phases: list[range] = []
    for i, kind in enumerate(PHASES):
        start, window = len(trace), 0
        while len(trace) - start < phase_len:
            if kind == "freq":
                hot = rng.random() < 0.55
                trace.append(f"h{i}.{rng.randrange(k - 2)}" if hot else f"once{len(trace)}")
            else:
                window += rng.random() < 0.12
                trace.append(f"w{i}.{window + rng.randrange(k - 1)}")
        phases.append(range(start, len(trace)))
    return trace, phases


def phase_hit_rates(policy: EvictionPolicy, trace: list[str], phases: list[range],
                    k: int) -> list[float]:
    """Hit rate of ``policy`` (capacity ``k``) within each phase; a first access is a miss."""
    cache = PageCache(policy, k)
    hits: list[bool] = []
    for p in trace:
        if p in cache.history.first:
            hits.append(cache.access(p).hit)
        else:
            cache.admit(p)
            hits.append(False)
    return [sum(hits[i] for i in r) / len(r) for r in phases]
