"""Adaptive: follow whichever of LRU and LFU would have missed less so far."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from copage.core.policies._shadow import ShadowCache
from copage.core.policies.base import JSON, EvictionPolicy, History, Limit, lfu_key, lru_key
from copage.core.types import PageId


class AdaptivePolicy(EvictionPolicy):
    """Shadow LRU and LFU caches; evict as the one with fewer misses so far.

    In the spirit of ARC/LeCaR's ghost lists (Megiddo & Modha, FAST 2003;
    Vietri et al., HotStorage 2018), reduced to two experts because caches here
    hold 3-10 pages. Both shadows (page ids only, same limit) see every admit
    and access. While their miss counts are equal (e.g. before either missed),
    the prior decides: LFU if the revisit rate so far (share of accesses that
    went to a page accessed before) is above ``threshold``, else LRU. Online:
    only past accesses are used.
    """

    name: ClassVar[str] = "adaptive"

    def __init__(self, threshold: float = 0.5) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise TypeError(f"adaptive threshold must be a number, got {threshold!r}")
        if not 0 <= threshold <= 1:
            raise ValueError(f"adaptive threshold must be in [0, 1], got {threshold!r}")
        self.threshold = float(threshold)
        self.bind(Limit(capacity=1))

    def bind(self, limit: Limit) -> None:
        """Fresh, empty shadows under ``limit``."""
        self.lru = ShadowCache(lru_key, limit)
        self.lfu = ShadowCache(lfu_key, limit)
        self.accesses = 0
        self.revisits = 0

    @property
    def revisit_rate(self) -> float:
        """Share of accesses so far that went to a page accessed before."""
        return self.revisits / self.accesses if self.accesses else 0.0

    @property
    def following(self) -> str:
        """``"lru"`` or ``"lfu"``: the expert the next eviction follows."""
        if self.lru.misses != self.lfu.misses:
            return "lru" if self.lru.misses < self.lfu.misses else "lfu"
        return "lfu" if self.revisit_rate > self.threshold else "lru"

    def observe(self, pid: PageId, history: History, now: int) -> None:
        """Feed the access to both shadows and the revisit counter."""
        self.accesses += 1
        if history.count[pid] > 1:
            self.revisits += 1
        self.lru.access(pid, history)
        self.lfu.access(pid, history)

    def victim(self, candidates: Sequence[PageId], history: History, now: int) -> PageId:
        """LRU's or LFU's victim, whichever expert is followed now."""
        key = lfu_key if self.following == "lfu" else lru_key
        return min(candidates, key=lambda p: key(p, history))

    def state(self) -> JSON:
        """Shadow contents and counters."""
        return {
            "lru": self.lru.state(),
            "lfu": self.lfu.state(),
            "accesses": self.accesses,
            "revisits": self.revisits,
        }

    def load_state(self, state: JSON) -> None:
        """Restore shadows and counters."""
        self.lru.load_state(state["lru"])
        self.lfu.load_state(state["lfu"])
        self.accesses, self.revisits = int(state["accesses"]), int(state["revisits"])

    def __repr__(self) -> str:
        return f"AdaptivePolicy(threshold={self.threshold})"
