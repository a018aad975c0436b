"""LRU: evict the least recently used page."""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from copage.core.policies.policy import EvictionPolicy, History, lru_key
from copage.core.types import PageId


class LRUPolicy(EvictionPolicy):
    """Least recently used (Mattson et al., IBM Systems Journal 1970)."""

    name: ClassVar[str] = "lru"

    def victim(self, candidates: Sequence[PageId], history: History, now: int) -> PageId:
        """The candidate whose latest access is oldest."""
        return min(candidates, key=lambda p: lru_key(p, history))
