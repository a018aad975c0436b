"""A pager's change recording: what changed since the caller last drained it.

:class:`ChangeLog` holds the pending :class:`~copage.core.changes.ChangeSet` (turns,
pages, bookmarks and events the pager added), whether the state snapshot changed
(``dirty``), the pages whose bookmark epoch changed and the event counter.
:meth:`copage.core.pager.Pager.drain` hands the changes over with the snapshot and the
per-page states that changed (see :class:`copage.memory.PagedMemory`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from copage.core.changes import ChangeSet, Event
from copage.core.pager_stats import Counters
from copage.core.types import PageId, page_index

__all__ = ["ChangeLog"]


class ChangeLog:
    """The changes a pager made since the last drain (see the module docstring)."""

    def __init__(self) -> None:
        self.pending = ChangeSet()
        self.dirty = True  # the first drain stores a snapshot
        self.epochs: set[int] = set()  # pages whose bookmark epoch changed
        self.seq = 0  # the last event's number

    def event(self, turn: int, kind: str, idx: int | None,
              detail: dict[str, Any] | None = None) -> None:
        """Log an event of page ``idx`` (None: of no page) at turn ``turn``."""
        self.seq += 1
        self.pending.events.append(Event(self.seq, turn, kind, idx, detail or {}))

    def note(self, turn: int, kind: str, idx: int | None, detail: dict[str, Any] | None,
             counters: Counters) -> None:
        """Log an event made outside the pager; a ``speculative`` one that showed pages
        (``detail["paged_in"]``) counts as a fill in ``counters``."""
        self.event(turn, kind, idx, detail)
        shown = (detail or {}).get("paged_in") if kind == "speculative" else None
        if shown:
            counters.fills += 1
            counters.fill_pages += len(shown)
            self.dirty = True

    def drain(self, touched: set[PageId], snapshot: Callable[[], dict[str, Any]],
              page_state: Callable[[int], dict[str, Any]]) -> ChangeSet:
        """Return and reset the pending changes; with them, when anything changed, the
        ``snapshot()`` and the ``page_state(i)`` of each page whose bookmark epoch
        changed or that was accessed (``touched``, cleared here)."""
        change, self.pending = self.pending, ChangeSet()
        changed = self.epochs | {page_index(p) for p in touched}
        if change.pages or change.events or change.bookmarks or self.dirty or changed:
            change.state = snapshot()
            change.page_state = [(i, page_state(i)) for i in sorted(changed)]
            self.dirty = False
        touched.clear()
        self.epochs = set()
        return change

    def discard(self, touched: set[PageId]) -> None:
        """Forget the pending changes (and clear ``touched``)."""
        self.pending = ChangeSet()
        self.epochs = set()
        touched.clear()
