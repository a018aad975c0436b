"""LFU: evict the least frequently used page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from copage.core.policies.policy import EvictionPolicy, History, lfu_key
from copage.core.types import PageId


class LFUPolicy(EvictionPolicy):
    """Least frequently used, counts kept across evictions ("perfect" LFU), ties by LRU."""

    name: ClassVar[str] = "lfu"

    def victim(self, candidates: Sequence[PageId], history: History, now: int) -> PageId:
        """The candidate with fewest accesses; among those, the least recently used."""
        return min(candidates, key=lambda p: lfu_key(p, history))
