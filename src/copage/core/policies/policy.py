"""The eviction-policy base class and the bookkeeping the cache shares with policies.

Modelled on cachetools: the cache does all bookkeeping (:class:`History`), and a
policy only answers one question, :meth:`EvictionPolicy.victim`. Policies that
keep state of their own (shadow caches, LRFU scores, page texts) also implement
the optional hooks and :meth:`~EvictionPolicy.state` / :meth:`~EvictionPolicy.load_state`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from copage.core.types import PageId

JSON = dict[str, Any]


class History:
    """Per-page access bookkeeping kept by the cache; policies read it, never write it.

    Attributes:
        first: clock of each page's admission (its first access); gives page order.
        last: clock of each page's latest access.
        count: number of accesses of each page, kept across evictions.
        entered: clock at which each *resident* page last entered the resident set.
        touched: pages accessed since the owner last cleared it (so that a store
            writes only the changed pages' ``first``/``last``/``count``).
    """

    __slots__ = ("count", "entered", "first", "last", "touched")

    def __init__(self) -> None:
        self.first: dict[PageId, int] = {}
        self.last: dict[PageId, int] = {}
        self.count: dict[PageId, int] = {}
        self.entered: dict[PageId, int] = {}
        self.touched: set[PageId] = set()

    def touch(self, pid: PageId, now: int) -> None:
        """Record one access of ``pid`` at clock ``now``."""
        self.first.setdefault(pid, now)
        self.last[pid] = now
        self.count[pid] = self.count.get(pid, 0) + 1
        self.touched.add(pid)

    def page(self, pid: PageId) -> tuple[int, int, int]:
        """``(first, last, count)`` of an admitted page."""
        return self.first[pid], self.last[pid], self.count[pid]

    def set_page(self, pid: PageId, first: int, last: int, count: int) -> None:
        """Restore one page's ``first``/``last``/``count`` (stored apart, see :meth:`to_json`)."""
        self.first[pid], self.last[pid], self.count[pid] = first, last, count

    def to_json(self, *, pages: bool = True) -> JSON:
        """A JSON-able copy; ``pages=False`` leaves out the per-page ``first``, ``last``
        and ``count`` (O(pages); the pager stores them per page, see :meth:`page`)."""
        keys = ("first", "last", "count", "entered") if pages else ("entered",)
        return {k: dict(getattr(self, k)) for k in keys}

    @classmethod
    def from_json(cls, data: JSON) -> History:
        """Rebuild from :meth:`to_json` output (keys left out stay empty)."""
        h = cls()
        for k in ("first", "last", "count", "entered"):
            getattr(h, k).update({str(p): int(v) for p, v in data.get(k, {}).items()})
        return h


@dataclass(frozen=True, slots=True)
class Limit:
    """How full a cache may get: at most ``capacity`` pages and ``token_budget`` tokens."""

    capacity: int | None = None
    token_budget: int | None = None
    size_of: Callable[[PageId], int] | None = None

    def size(self, pid: PageId) -> int:
        """Token size of ``pid`` (0 when there is no token budget)."""
        if self.token_budget is None or self.size_of is None:
            return 0
        n = self.size_of(pid)
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise ValueError(f"size_of({pid!r}) must return a non-negative int, got {n!r}")
        return n

    def over(self, pages: int, tokens: int) -> bool:
        """Whether ``pages`` pages holding ``tokens`` tokens exceed the limit."""
        if self.capacity is not None and pages > self.capacity:
            return True
        return self.token_budget is not None and tokens > self.token_budget


class EvictionPolicy:
    """Base class of eviction policies: subclasses implement :meth:`victim`.

    A policy instance serves one cache at a time: :meth:`bind` (called by the
    cache) resets its state. Hooks default to doing nothing.
    """

    name: ClassVar[str] = ""

    def victim(self, candidates: Sequence[PageId], history: History, now: int) -> PageId:
        """Choose the page to evict among ``candidates`` (resident order); ``now`` = next clock."""
        raise NotImplementedError

    def bind(self, limit: Limit) -> None:
        """Start serving a cache with this limit (resets internal state)."""

    def validate(self, pid: PageId, now: int) -> None:
        """Raise if an access of ``pid`` at clock ``now`` is not allowed (before any change)."""

    def observe(self, pid: PageId, history: History, now: int) -> None:
        """Note an access (admit, hit or page-in) of ``pid`` at ``now``; history already updated."""

    def set_query(self, text: str | None) -> None:
        """Note the latest user message / probe question (only ``query`` uses it)."""

    def set_page_text(self, pid: PageId, text: str) -> None:
        """Note a page's text (only ``query`` uses it)."""

    def state(self) -> JSON:
        """JSON-able internal state (empty for stateless policies)."""
        return {}

    def load_state(self, state: JSON) -> None:
        """Restore internal state saved by :meth:`state` (after :meth:`bind`)."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


def lru_key(pid: PageId, history: History) -> tuple[float, ...]:
    """Least recently used first."""
    return (history.last[pid],)


def lfu_key(pid: PageId, history: History) -> tuple[float, ...]:
    """Least frequently used first, ties by least recently used."""
    return (history.count[pid], history.last[pid])
