"""Taking back :class:`~copage.memory.PagedMemory`'s latest commit: the bookkeeping behind
``PagedMemory.pop_turn`` (the Agents SDK session's ``pop_item``).

:class:`UndoLog` remembers, per memory object, what is needed to take back its latest
commit when that commit only added turns (the state stored before it, how many turns and
pages were there, the stored page states it rewrote); :func:`pop_turn` removes the latest
turn in one commit, from the open page or by taking that commit back (see
``docs/storage.md``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

from copage.core.changes import ChangeSet
from copage.core.pager import Pager
from copage.core.types import Turn
from copage.stores.protocol import StoredConversation

__all__ = ["UndoLog", "pop_turn"]


@dataclass(frozen=True, slots=True)
class _Undo:
    """How to take back the latest commit, when it only added turns: the state stored
    before it and how many turns and pages (and from which event seq) were there."""

    version: int  # the version the commit made
    turns: int
    pages: int
    events: int | None  # the commit's first event seq (None: it stored none)
    state: Mapping[str, Any]
    rows: Mapping[int, Mapping[str, Any]]  # stored page states of older pages it rewrote


class _Memory(Protocol):
    """What :func:`pop_turn` uses of a :class:`~copage.memory.PagedMemory`."""

    pager: Pager
    version: int
    _undo: UndoLog
    _deferred: bool
    _idset: set[str] | None

    def _applying(self) -> AbstractContextManager[None]: ...

    def _commit(self, change: ChangeSet | None = None) -> None: ...


class UndoLog:
    """What a memory object knows of its latest commit, to take it back."""

    __slots__ = ("plain", "rows", "stored_state", "undo")

    def __init__(self) -> None:
        self.undo: _Undo | None = None  # the latest commit, if it can be taken back
        self.stored_state: Mapping[str, Any] | None = None  # the snapshot as stored
        #: the page states (Pager.page_state) as stored, for taking back a commit
        self.rows: dict[int, Mapping[str, Any]] = {}
        self.plain = True  # only turns were added since the latest commit

    def created(self) -> None:
        """A new conversation was stored (as a load of it would restore)."""
        self.undo, self.stored_state, self.rows = None, {}, {}

    def loaded(self, conv: StoredConversation) -> None:
        """The conversation was loaded in full."""
        self.undo, self.stored_state, self.plain = None, conv.state, True
        self.rows = dict(conv.page_state)

    def refreshed(self, conv: StoredConversation) -> None:
        """What another writer added was read (see ``PagedMemory.refresh``)."""
        self.undo, self.stored_state, self.plain = None, conv.state, True
        self.rows.update(conv.page_state)

    def committed(self, change: ChangeSet, pager: Pager, version: int) -> None:
        """``change`` was stored as ``version``: remember how to take it back."""
        before = self.stored_state
        pages = len(pager.pages) - len(change.pages)
        # the rows this commit rewrote of pages it did not add, as stored before it
        old = {i: self.rows.get(i) for i, _ in change.page_state if i < pages}
        self.undo = _Undo(
            version, len(pager.turns) - len(change.turns), pages,
            change.events[0].seq if change.events else None, before,
            {i: r for i, r in old.items() if r is not None},
        ) if (self.plain and before is not None and change.turns and change.truncate is None
              and change.drop_pages is None and change.drop_events is None
              and all(r is not None for r in old.values())
              and all(i >= pages for i, _ in change.bookmarks)) else None
        if change.drop_pages is not None:
            for i in [i for i in self.rows if i >= change.drop_pages]:
                del self.rows[i]
        self.rows.update(change.page_state)
        if change.state is not None:
            self.stored_state = change.state
        self.plain = True


def pop_turn(mem: _Memory) -> Turn | None:
    """``PagedMemory.pop_turn``: remove the latest turn in one commit (see its docstring)."""
    log = mem._undo
    log.plain = False
    undo, version = log.undo, mem.version
    with mem._applying():
        turn = mem.pager.pop_turn()
    if turn is None:
        return _take_back(mem)
    if mem._idset is not None:
        mem._idset.discard(turn.id)
    mem._commit()
    if (undo is not None and undo.version == version and not mem._deferred
            and len(mem.pager.turns) >= undo.turns):
        # still that commit's turns on the same stored state: it can be taken back
        log.undo = dataclasses.replace(undo, version=mem.version)
    return turn


def _take_back(mem: _Memory) -> Turn | None:
    """Pop the latest turn by taking back the commit that added it (see pop_turn)."""
    log = mem._undo
    undo, old = log.undo, mem.pager
    if (mem._deferred or undo is None or undo.version != mem.version
            or not undo.turns < len(old.turns)
            or not old.can_rewind(undo.turns, undo.pages, undo.state)):
        return None
    turn, redo = old.turns[-1], old.turns[undo.turns:-1]
    with mem._applying():
        mem.pager = old.rewind(undo.turns, undo.pages, undo.state, undo.rows)
        for t in redo:  # the taken-back commit's other turns, added again
            mem.pager.add(t)
        change = mem.pager.drain()
        change.state = mem.pager.snapshot()  # the stored one is the taken-back commit's
        change.truncate, change.drop_pages = undo.turns, undo.pages
        change.drop_events = undo.events
    if mem._idset is not None:
        mem._idset.discard(turn.id)
    mem._commit(change)
    if all(i >= undo.pages for i, _ in change.bookmarks):
        # this commit goes back to the same stored state: it can be taken back too
        log.undo = dataclasses.replace(undo, version=mem.version)
    return turn
