"""Shadow caches: page ids only, simulating what another policy would have missed."""

from __future__ import annotations

from collections.abc import Callable

from copage.core.policies.policy import JSON, History, Limit
from copage.core.types import PageId

Key = Callable[[PageId, History], tuple[float, ...]]


class ShadowCache:
    """A ghost cache under the same limit as the real one, evicting by ``min(key)``.

    It sees every access (admit, hit, page-in) of the real cache but ignores
    ``protect``: it simulates the plain policy. Only ids and sizes are stored.
    """

    def __init__(self, key: Key, limit: Limit) -> None:
        self.key = key
        self.limit = limit
        self.resident: dict[PageId, int] = {}  # page -> token size, in order of entering
        self.tokens = 0
        self.misses = 0

    def access(self, pid: PageId, history: History) -> bool:
        """Simulate one access; returns whether it was a hit."""
        if pid in self.resident:
            return True
        self.misses += 1
        size = self.limit.size(pid)
        self.resident[pid] = size
        self.tokens += size
        while self.limit.over(len(self.resident), self.tokens):
            candidates = [p for p in self.resident if p != pid]
            if not candidates:
                break
            victim = min(candidates, key=lambda p: self.key(p, history))
            self.tokens -= self.resident.pop(victim)
        return False

    def state(self) -> JSON:
        """Resident ids with sizes, and the miss count."""
        return {"resident": [[p, s] for p, s in self.resident.items()], "misses": self.misses}

    def load_state(self, state: JSON) -> None:
        """Restore from :meth:`state`."""
        self.resident = {str(p): int(s) for p, s in state["resident"]}
        self.tokens = sum(self.resident.values())
        self.misses = int(state["misses"])
