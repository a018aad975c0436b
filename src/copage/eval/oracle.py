"""Belady with a model: the offline oracle given the *scheduled* future of a paging run.

LLM-free, ``belady`` is given the whole access sequence (every admit and every
probe's evidence pages, :func:`copage.eval.simulation.access_sequence`) and the
cache checks each access against it. With a model the sequence also holds the
model's own recalls, which nobody knows beforehand, so that check cannot hold.
:class:`ScheduledBelady` is the same oracle (evict the page whose next *scheduled*
use is farthest; never-used-again first, ties by least recent use) with a clock of
its own that follows the schedule instead of every access:

* an admit moves the clock past that admit in the future;
* before each probe the runner moves the clock to the start of that probe's
  accesses (:meth:`ScheduledBelady.at`);
* a recall of the page the schedule names next moves the clock past it; any other
  recall (a wrong page, a second recall) is an access the oracle was not told of
  and leaves the clock where it is.

So the oracle knows which pages every probe will need, as in the simulation, and
nothing about the model; the accuracy gap between it and the online policies is
then measured with the same model (the paper's Belady rows). Registered as the
policy ``belady_scheduled`` in the registry :func:`policies` returns (for model runs of
the paging studies only; the global registry is not changed).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import ClassVar

from copage.core.policies import POLICIES, EvictionPolicy
from copage.core.policies.belady import BeladyPolicy
from copage.core.policies.policy import JSON, History
from copage.core.registry import Registry
from copage.core.types import PageId

NAME = "belady_scheduled"


class ScheduledBelady(BeladyPolicy):
    """Belady's MIN on the scheduled future, tolerant of unscheduled accesses."""

    name: ClassVar[str] = NAME

    def __init__(self, future: Iterable[PageId] | None = None) -> None:
        super().__init__(future)
        self.cursor = 0
        self._admit_at: dict[PageId, int] = {}
        for i, pid in enumerate(self.future):
            self._admit_at.setdefault(pid, i)

    def at(self, position: int) -> None:
        """Move the clock to ``position`` of the future (never backwards)."""
        self.cursor = max(self.cursor, position)

    def validate(self, pid: PageId, now: int) -> None:
        """Every access is allowed (unscheduled ones are the model's)."""

    def observe(self, pid: PageId, history: History, now: int) -> None:
        """Follow the schedule: an admit, or the scheduled next access, moves the clock."""
        if history.first.get(pid) == now and pid in self._admit_at:
            self.at(self._admit_at[pid] + 1)
        elif self.cursor < len(self.future) and self.future[self.cursor] == pid:
            self.cursor += 1

    def victim(self, candidates: Sequence[PageId], history: History, now: int) -> PageId:
        """The candidate whose next scheduled use is farthest (never-again first, then LRU)."""
        return max(candidates, key=lambda p: (self.next_use(p, self.cursor), -history.last[p]))

    def state(self) -> JSON:
        """The future's length and the clock."""
        return {"future_length": len(self.future), "cursor": self.cursor}

    def load_state(self, state: JSON) -> None:
        """Restore the clock (the future must have the same length)."""
        super().load_state(state)
        cursor = state.get("cursor", 0)
        self.cursor = int(cursor) if isinstance(cursor, int) else 0

    def __repr__(self) -> str:
        return f"ScheduledBelady(future=<{len(self.future)} accesses>, at={self.cursor})"


def policies() -> Registry[EvictionPolicy]:
    """The policies with ``belady_scheduled`` added: a new registry, passed to the
    configs of the model runs (``PagerConfig(policies=...)``); the global ``POLICIES``
    never holds it (it is a policy for model runs only, not one a user picks)."""
    return POLICIES.extended({NAME: ScheduledBelady})
