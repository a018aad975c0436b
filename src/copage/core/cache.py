"""The resident set of pages: bookkeeping for any eviction policy, and trace replay.

Accesses: a page's closing is its first access (:meth:`PageCache.admit`, a miss);
every later use (a probe or recall that finds it resident, or a page-in) is an
access (:meth:`PageCache.access`). Evictions happen only when the cache is over
its limit, right after a page enters. The page that just entered is never the
victim; ``protect``-ed pages are chosen only when no other candidate exists, and
then the policy picks among them. If the entering page alone exceeds the token
budget it stays, alone.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from typing import Any

from copage.core.policies import EvictionPolicy, History, Limit, get_policy
from copage.core.types import PageId

__all__ = ["Access", "PageCache", "ReplayResult", "replay"]

_SNAPSHOT_VERSION = 1


@dataclass(frozen=True, slots=True)
class Access:
    """Outcome of one access: whether it hit, and the pages evicted to make room."""

    hit: bool
    evicted: list[PageId]


@dataclass(frozen=True, slots=True)
class ReplayResult:
    """Counts from :func:`replay`."""

    hits: int
    misses: int
    evictions: int


class PageCache:
    """At most ``capacity`` pages (and/or ``token_budget`` tokens by ``size_of``) stay resident."""

    def __init__(
        self,
        policy: EvictionPolicy,
        capacity: int | None = None,
        *,
        token_budget: int | None = None,
        size_of: Callable[[PageId], int] | None = None,
        batch: int = 1,
        floor: int | None = None,
    ) -> None:
        if not isinstance(policy, EvictionPolicy):
            raise TypeError(f"policy must be an EvictionPolicy (see get_policy), got {policy!r}")
        for label, value in (("capacity", capacity), ("token_budget", token_budget)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise ValueError(f"{label} must be an int, got {value!r}")
        if capacity is None and token_budget is None:
            raise ValueError("PageCache needs a capacity (pages) or a token_budget (with size_of)")
        if capacity is not None and capacity < 1:
            raise ValueError(f"capacity must be at least 1 page, got {capacity}")
        if token_budget is not None and (token_budget < 0 or size_of is None):
            raise ValueError("token_budget must be >= 0 and needs size_of=(page id -> tokens)")
        if not isinstance(batch, int) or isinstance(batch, bool) or batch < 1:
            raise ValueError(f"batch must be an int >= 1, got {batch!r}")
        if capacity is not None and batch > capacity:
            raise ValueError(f"batch ({batch}) cannot exceed the capacity ({capacity})")
        if floor is not None and (token_budget is None or not isinstance(floor, int)
                                  or isinstance(floor, bool) or not 0 <= floor < token_budget):
            raise ValueError(f"floor must be an int >= 0 below the token_budget "
                             f"({token_budget}), got {floor!r}")
        self.policy = policy
        self.batch = batch  # pages evicted at once when an admission overflows the count
        # tokens an admission that overflows the token budget evicts down to (None: just
        # under the budget), so the resident set changes once per budget - floor tokens
        self.floor = floor
        self.limit = Limit(capacity, token_budget, size_of)
        self.clock = 0
        self.hits = self.misses = self.evictions = 0
        self.history = History()
        self._resident: dict[PageId, int] = {}  # page -> token size, in order of entering
        self._tokens = 0
        policy.bind(self.limit)

    @property
    def capacity(self) -> int | None:
        """Maximum number of resident pages (None: only the token budget limits)."""
        return self.limit.capacity

    @property
    def token_budget(self) -> int | None:
        """Maximum total tokens of resident pages (None: no token limit)."""
        return self.limit.token_budget

    @property
    def resident(self) -> list[PageId]:
        """Resident pages in order of entering the resident set."""
        return list(self._resident)

    @property
    def tokens(self) -> int:
        """Total tokens of resident pages (0 without a token budget)."""
        return self._tokens

    def __contains__(self, pid: object) -> bool:
        return pid in self._resident

    def admit(self, pid: PageId, *, protect: Collection[PageId] = ()) -> list[PageId]:
        """A page closed: its first access (a miss); returns the pages evicted."""
        if pid in self.history.first:
            raise ValueError(f"page {pid!r} was already admitted; use access() for later uses")
        self._touch(pid)
        self.misses += 1
        return self._enter(pid, protect, self.batch, self.floor)

    def access(self, pid: PageId, *, protect: Collection[PageId] = ()) -> Access:
        """A later use of an admitted page: a hit if resident, else a miss and page-in."""
        if pid not in self.history.first:
            raise ValueError(f"page {pid!r} was never admitted; admit() it when it closes")
        self._touch(pid)
        if pid in self._resident:
            self.hits += 1
            return Access(hit=True, evicted=[])
        self.misses += 1
        return Access(hit=False, evicted=self._enter(pid, protect, 1, None))

    def evict(self, pid: PageId) -> None:
        """Remove a resident page explicitly (not counted in ``evictions``)."""
        if pid not in self._resident:
            raise ValueError(f"page {pid!r} is not resident; resident: {self.resident}")
        self._remove(pid)

    def shrink(self, tokens: int, *, protect: Collection[PageId] = ()) -> list[PageId]:
        """Evict the policy's victims until the resident pages hold at most ``tokens``
        tokens (a model's window turned out smaller than the budget); ``protect``-ed
        pages go last. Returns the pages evicted (counted in ``evictions``)."""
        evicted: list[PageId] = []
        while self._tokens > tokens and self._evict_one(list(self._resident), protect, evicted):
            pass
        return evicted

    def set_query(self, text: str | None) -> None:
        """The latest user message or probe question (used by the ``query`` policy)."""
        self.policy.set_query(text)

    def set_page_text(self, pid: PageId, text: str) -> None:
        """A page's text (used by the ``query`` policy)."""
        self.policy.set_page_text(pid, text)

    def _touch(self, pid: PageId) -> None:
        now = self.clock
        self.policy.validate(pid, now)
        self.history.touch(pid, now)
        self.policy.observe(pid, self.history, now)
        self.clock = now + 1

    def _enter(self, pid: PageId, protect: Collection[PageId], batch: int,
               floor: int | None) -> list[PageId]:
        size = self.limit.size(pid)
        self._resident[pid] = size
        self._tokens += size
        self.history.entered[pid] = self.clock - 1
        evicted: list[PageId] = []
        # Once one page must go, ``batch - 1`` more go with it (page-count limits): the
        # next admissions then evict nothing, so the prompt changes once per batch. With
        # a token ``floor``, eviction goes on down to it for the same reason.
        while (self.limit.over(len(self._resident) + (batch - 1 if evicted else 0),
                               self._tokens)
               or (evicted and floor is not None and self._tokens > floor)):
            if not self._evict_one([p for p in self._resident if p != pid], protect, evicted):
                break
        return evicted

    def _evict_one(self, others: list[PageId], protect: Collection[PageId],
                   evicted: list[PageId]) -> bool:
        """Evict the policy's victim among ``others`` (``protect``-ed pages only when no
        other is left), appending it to ``evicted``; False when ``others`` is empty."""
        candidates = [p for p in others if p not in protect] or others
        if not candidates:
            return False
        victim = self.policy.victim(candidates, self.history, self.clock)
        if victim not in candidates:
            raise RuntimeError(
                f"policy {self.policy.name!r} chose {victim!r}, not one of {candidates}"
            )
        self._remove(victim)
        self.evictions += 1
        evicted.append(victim)
        return True

    def _remove(self, pid: PageId) -> None:
        self._tokens -= self._resident.pop(pid)
        del self.history.entered[pid]

    def snapshot(self, *, pages: bool = True) -> dict[str, Any]:
        """JSON-able state (``json.dumps`` round-trips it exactly); see :meth:`restore`.

        ``pages=False``: without the history's per-page part (see :meth:`History.to_json`),
        which the caller then stores and restores itself (``History.set_page``)."""
        return {
            "version": _SNAPSHOT_VERSION,
            "policy": self.policy.name,
            "policy_state": self.policy.state(),
            "capacity": self.limit.capacity,
            "token_budget": self.limit.token_budget,
            "clock": self.clock,
            "hits": self.hits,
            "misses": self.misses,
            "evictions": self.evictions,
            "resident": [[p, s] for p, s in self._resident.items()],
            "history": self.history.to_json(pages=pages),
        }

    @classmethod
    def restore(
        cls,
        policy: EvictionPolicy,
        snap: dict[str, Any],
        *,
        size_of: Callable[[PageId], int] | None = None,
        batch: int = 1,
        floor: int | None = None,
    ) -> PageCache:
        """Rebuild a cache from :meth:`snapshot` with a fresh ``policy`` of the same name
        (``batch``, ``floor``: see the constructor; they are settings, not state)."""
        if not isinstance(snap, dict) or snap.get("version") != _SNAPSHOT_VERSION:
            raise ValueError(f"not a PageCache snapshot (version {_SNAPSHOT_VERSION})")
        if snap["policy"] != policy.name:
            raise ValueError(
                f"snapshot was taken with policy {snap['policy']!r}, got {policy.name!r}"
            )
        if snap["token_budget"] is not None and size_of is None:
            raise ValueError("this snapshot has a token_budget: pass size_of= to restore()")
        cache = cls(policy, snap["capacity"], token_budget=snap["token_budget"], size_of=size_of,
                    batch=batch, floor=floor)
        cache.clock = int(snap["clock"])
        cache.hits, cache.misses = int(snap["hits"]), int(snap["misses"])
        cache.evictions = int(snap["evictions"])
        cache._resident = {str(p): int(s) for p, s in snap["resident"]}
        cache._tokens = sum(cache._resident.values())
        cache.history = History.from_json(snap["history"])
        policy.load_state(snap["policy_state"])
        return cache

    def __repr__(self) -> str:
        return (
            f"PageCache({self.policy!r}, capacity={self.capacity}, "
            f"token_budget={self.token_budget}, resident={self.resident})"
        )


def replay(
    trace: Iterable[PageId], policy: str | EvictionPolicy, capacity: int, **options: Any
) -> ReplayResult:
    """Replay page ids: a first access is an admit (miss), later ones hit or page in.

    Options ``token_budget`` and ``size_of`` go to the cache, the rest to
    :func:`get_policy` (only with a policy name). ``belady`` gets ``future=trace``
    unless given.
    """
    if isinstance(trace, str):
        raise TypeError("trace must be a sequence of page ids, not one string")
    pages = list(trace)
    cache_opts = {k: options.pop(k) for k in ("token_budget", "size_of") if k in options}
    if isinstance(policy, str):
        if policy == "belady":
            options.setdefault("future", pages)
        policy = get_policy(policy, **options)
    elif options:
        raise ValueError(f"policy options {sorted(options)} need a policy name, not an instance")
    cache = PageCache(policy, capacity, **cache_opts)
    for pid in pages:
        if pid in cache.history.first:
            cache.access(pid)
        else:
            cache.admit(pid)
    return ReplayResult(hits=cache.hits, misses=cache.misses, evictions=cache.evictions)
