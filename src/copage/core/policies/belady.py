"""Belady's MIN: the offline optimum, for simulations and benchmarks only."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import ClassVar

from copage.core.policies.policy import JSON, EvictionPolicy, History
from copage.core.types import PageId

NEVER = float("inf")


class FutureMismatchError(ValueError):
    """The real access sequence left the future that ``belady`` was given."""


class BeladyPolicy(EvictionPolicy):
    """Evict the page whose next use is farthest (Belady, IBM Systems Journal 1966).

    ``future`` is the whole access sequence (every admit and access, in order);
    at clock ``t`` the next use of ``p`` is the first index ``>= t`` holding ``p``.
    Pages never used again go first. Ties (only possible among pages never used
    again) are broken by least recent use. The cache raises
    :class:`FutureMismatchError` as soon as the real sequence diverges.
    """

    name: ClassVar[str] = "belady"

    def __init__(self, future: Iterable[PageId] | None = None) -> None:
        if future is None:
            raise ValueError(
                "belady is an offline oracle and needs the future access sequence: "
                "get_policy('belady', future=[...every page id accessed, in order]); "
                "use it only in simulations and benchmarks (replay() passes it for you)"
            )
        if isinstance(future, str):
            raise TypeError("belady future must be a sequence of page ids, not one string")
        self.future: list[PageId] = list(future)
        self._positions: dict[PageId, list[int]] = {}
        for i, pid in enumerate(self.future):
            self._positions.setdefault(pid, []).append(i)

    def next_use(self, pid: PageId, now: int) -> float:
        """First index ``>= now`` at which ``pid`` is accessed (``inf`` if never)."""
        pos = self._positions.get(pid, [])
        i = bisect_left(pos, now)
        return pos[i] if i < len(pos) else NEVER

    def validate(self, pid: PageId, now: int) -> None:
        """Raise :class:`FutureMismatchError` unless ``future[now] == pid``."""
        if now >= len(self.future):
            raise FutureMismatchError(
                f"belady: access #{now} of {pid!r} lies beyond the given future "
                f"({len(self.future)} accesses)"
            )
        if self.future[now] != pid:
            raise FutureMismatchError(
                f"belady: access #{now} is {pid!r} but the given future has "
                f"{self.future[now]!r} there; the future must list every admit and access in order"
            )

    def victim(self, candidates: Sequence[PageId], history: History, now: int) -> PageId:
        """The candidate used farthest in the future (never-again first, then LRU)."""
        return max(candidates, key=lambda p: (self.next_use(p, now), -history.last[p]))

    def state(self) -> JSON:
        """Only the future's length, to catch restoring with another future."""
        return {"future_length": len(self.future)}

    def load_state(self, state: JSON) -> None:
        """Check that this instance was built with a future of the same length."""
        if state.get("future_length") != len(self.future):
            raise ValueError(
                f"belady: snapshot was taken with a future of {state.get('future_length')} "
                f"accesses, this policy has {len(self.future)}"
            )

    def __repr__(self) -> str:
        return f"BeladyPolicy(future=<{len(self.future)} accesses>)"
