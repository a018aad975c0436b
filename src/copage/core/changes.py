"""The change types: what one pager operation changes, for a store to persist.

The pager (pure) produces them and the stores (adapters) consume them, so they
live in the core and the stores depend on it, not the reverse.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from copage.core.types import Bookmark, Turn

__all__ = ["ChangeSet", "Event", "PageRecord"]


@dataclass(frozen=True, slots=True)
class PageRecord:
    """A closed page as stored: its turn range ``[first_seq, last_seq]`` (inclusive)."""

    index: int
    first_seq: int
    last_seq: int
    tokens: int


@dataclass(frozen=True, slots=True)
class Event:
    """One entry of the access log (for stats and the inspector).

    ``kind`` is one of ``admit`` (page closed), ``hit``, ``fault`` (page-in),
    ``evict``, ``recall`` (a recall tool call, ``detail`` holds its outcome),
    ``speculative`` (page-in before the model call). ``detail["by"]`` on hits and
    faults names what used the page (``probe``, ``recall``, ``speculative``).
    """

    seq: int
    turn_seq: int
    kind: str
    page_index: int | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ChangeSet:
    """Everything one pager operation changes; a store writes it atomically (``commit``)."""

    turns: list[tuple[int, Turn]] = field(default_factory=list)  # (seq, turn), new only
    pages: list[PageRecord] = field(default_factory=list)  # new pages
    bookmarks: list[tuple[int, Bookmark]] = field(default_factory=list)  # (page index, bm) upserts
    events: list[Event] = field(default_factory=list)
    state: Mapping[str, Any] | None = None  # replaces the snapshot when not None
    #: (page index, state) upserts: the pager's per-page state (access history, bookmark
    #: epoch), kept apart from the snapshot so that a commit writes only changed pages.
    page_state: list[tuple[int, Mapping[str, Any]]] = field(default_factory=list)
    #: When not None, the stored turns from this seq on are removed first (turns of the
    #: open page only: no stored page may hold one); ``turns`` then continue from it.
    truncate: int | None = None
    #: When not None, the stored pages (and their bookmarks) from this index on are
    #: removed first (taking back the commit that closed them); ``truncate`` may then
    #: remove the turns those pages held, and ``pages`` continue from this index.
    drop_pages: int | None = None
    #: When not None, the stored events from this seq on are removed first.
    drop_events: int | None = None

    def empty(self) -> bool:
        """True when the change writes nothing."""
        return not (self.turns or self.pages or self.bookmarks or self.events or self.state
                    or self.page_state or self.truncate is not None or self.drop_pages is not None
                    or self.drop_events is not None)
