"""Adaptive: follow whichever of LRU and LFU has missed less recently (decayed evidence)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import ClassVar

from copage.core.policies._shadow import ShadowCache
from copage.core.policies.policy import JSON, EvictionPolicy, History, Limit, lfu_key, lru_key
from copage.core.types import PageId

DEFAULT_HALF_LIFE = 50.0
"""Accesses after which a shadow miss counts half (chosen before any measurement)."""


class AdaptivePolicy(EvictionPolicy):
    """Shadow LRU and LFU caches; evict as the one that has missed less *recently*.

    In the spirit of ARC/LeCaR's ghost lists (Megiddo & Modha, FAST 2003;
    Vietri et al., HotStorage 2018), reduced to two experts because caches here
    hold 3-10 pages. Both shadows (page ids only, same limit) see every admit and
    access. The evidence decays exponentially, as LeCaR's regret weights do: each
    shadow's misses are summed with weight ``0.5 ** (age / half_life)`` (age in
    accesses), so after a phase change the expert that fits the new phase takes
    over within about ``half_life`` accesses instead of after repaying its whole
    past lead. ``half_life=None`` keeps plain cumulative counts (no decay).

    While the decayed miss scores are equal (e.g. before either missed), the prior
    decides: LFU if the decayed revisit rate (share of accesses that went to a page
    accessed before) is above ``threshold``, else LRU. Online: only past accesses
    are used.
    """

    name: ClassVar[str] = "adaptive"

    def __init__(
        self, threshold: float = 0.5, half_life: float | None = DEFAULT_HALF_LIFE
    ) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, int | float):
            raise TypeError(f"adaptive threshold must be a number, got {threshold!r}")
        if not 0 <= threshold <= 1:
            raise ValueError(f"adaptive threshold must be in [0, 1], got {threshold!r}")
        if half_life is not None and (
            isinstance(half_life, bool) or not isinstance(half_life, int | float)
            or not half_life > 0 or math.isinf(half_life)
        ):
            raise ValueError(
                f"adaptive half_life must be a positive number of accesses or None, "
                f"got {half_life!r}")
        self.threshold = float(threshold)
        self.half_life = None if half_life is None else float(half_life)
        self.decay = 1.0 if half_life is None else 0.5 ** (1.0 / float(half_life))
        self.bind(Limit(capacity=1))

    def bind(self, limit: Limit) -> None:
        """Fresh, empty shadows under ``limit``."""
        self.lru = ShadowCache(lru_key, limit)
        self.lfu = ShadowCache(lfu_key, limit)
        self.lru_score = self.lfu_score = 0.0  # decayed misses
        self.accesses = self.revisits = 0.0  # decayed counts

    @property
    def revisit_rate(self) -> float:
        """Share of recent accesses (decayed) that went to a page accessed before."""
        return self.revisits / self.accesses if self.accesses else 0.0

    @property
    def following(self) -> str:
        """``"lru"`` or ``"lfu"``: the expert the next eviction follows."""
        a, b = self.lru_score, self.lfu_score
        if abs(a - b) > 1e-9 * max(1.0, a, b):
            return "lru" if a < b else "lfu"
        return "lfu" if self.revisit_rate > self.threshold else "lru"

    def observe(self, pid: PageId, history: History, now: int) -> None:
        """Feed the access to both shadows; decay the evidence by one access."""
        d = self.decay
        self.accesses = self.accesses * d + 1.0
        self.revisits = self.revisits * d + (1.0 if history.count[pid] > 1 else 0.0)
        self.lru_score = self.lru_score * d + (0.0 if self.lru.access(pid, history) else 1.0)
        self.lfu_score = self.lfu_score * d + (0.0 if self.lfu.access(pid, history) else 1.0)

    def victim(self, candidates: Sequence[PageId], history: History, now: int) -> PageId:
        """LRU's or LFU's victim, whichever expert is followed now."""
        key = lfu_key if self.following == "lfu" else lru_key
        return min(candidates, key=lambda p: key(p, history))

    def state(self) -> JSON:
        """Shadow contents and the decayed scores and counters."""
        return {
            "lru": self.lru.state(),
            "lfu": self.lfu.state(),
            "lru_score": self.lru_score,
            "lfu_score": self.lfu_score,
            "accesses": self.accesses,
            "revisits": self.revisits,
        }

    def load_state(self, state: JSON) -> None:
        """Restore shadows and scores (older snapshots: the shadows' cumulative misses)."""
        self.lru.load_state(state["lru"])
        self.lfu.load_state(state["lfu"])
        self.lru_score = float(state.get("lru_score", self.lru.misses))
        self.lfu_score = float(state.get("lfu_score", self.lfu.misses))
        self.accesses, self.revisits = float(state["accesses"]), float(state["revisits"])

    def __repr__(self) -> str:
        return f"AdaptivePolicy(threshold={self.threshold}, half_life={self.half_life})"
