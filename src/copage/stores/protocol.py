"""The PageStore protocol: what a paged conversation persists, and how.

A store keeps many conversations. Each conversation has its configuration, its
turns (append-only, ordered by ``seq``), its closed pages (by turn range), the
current bookmark of each page, an append-only event log (admits, hits, faults,
evictions, recalls), one JSON snapshot of the pager's state (resident set,
policy state, counters) and one JSON state per page (its access history), upserted
like bookmarks so that a commit writes only the pages that changed. Every change made by one pager operation is written
by one :meth:`PageStore.commit` call, atomically: after it returns, the change
survives a crash of the process.

The change types (:class:`ChangeSet`, :class:`Event`, :class:`PageRecord`) are the
core's (``copage.core.changes``); they are re-exported here for the stores' users.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from copage.core.changes import ChangeSet, Event, PageRecord
from copage.core.registry import UnknownNameError, UnknownOptionError
from copage.core.types import Bookmark, Turn

__all__ = [
    "ChangeSet",
    "ConversationExists",
    "ConversationInfo",
    "ConversationNotFound",
    "Event",
    "PageRecord",
    "PageStore",
    "StoreError",
    "StoredConversation",
    "UnknownStoreOption",
    "UnknownStoreSetting",
    "VersionConflict",
    "iter_turns",
    "turns_of",
]


class StoreError(RuntimeError):
    """A store failed (I/O, schema, connection)."""


class UnknownStoreOption(UnknownOptionError, StoreError):
    """A store URL option the store does not take (the message lists the valid ones)."""


class UnknownStoreSetting(UnknownNameError, StoreError):
    """A store setting value that is not one of the valid ones (listed in the message)."""


class ConversationNotFound(StoreError, KeyError):
    """No conversation with that id (in that tenant)."""


class ConversationExists(StoreError):
    """``create_conversation`` on an id that is taken (in that tenant)."""


class VersionConflict(StoreError):
    """``commit`` with an ``expected_version`` that is no longer current."""


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    id: str
    tenant: str
    created_at: float
    updated_at: float
    turns: int
    pages: int
    version: int


@dataclass(slots=True)
class StoredConversation:
    """A conversation as loaded from a store."""

    id: str
    tenant: str
    config: dict[str, Any]
    turns: list[Turn]
    pages: list[PageRecord]
    bookmarks: dict[int, Bookmark]
    state: dict[str, Any]
    version: int
    #: The per-page states (``ChangeSet.page_state``), by page index; empty for a
    #: conversation stored before they were kept apart (its ``state`` holds them).
    page_state: dict[int, dict[str, Any]] = field(default_factory=dict)


@runtime_checkable
class PageStore(Protocol):
    """Persistence for paged conversations. See module docstring for the model.

    ``tenant`` scopes every call: a conversation id names a different conversation
    in each tenant, and no call with one tenant ever sees another tenant's rows.
    The default tenant is ``"default"``.
    """

    def create_conversation(
        self, conversation_id: str, config: Mapping[str, Any], *, tenant: str = "default",
        now: float = 0.0,
    ) -> None: ...

    def load(self, conversation_id: str, *, tenant: str = "default") -> StoredConversation:
        """Raise :class:`ConversationNotFound` if absent."""
        ...

    def exists(self, conversation_id: str, *, tenant: str = "default") -> bool: ...

    def commit(
        self, conversation_id: str, change: ChangeSet, *, tenant: str = "default",
        expected_version: int | None = None, now: float = 0.0,
    ) -> int:
        """Apply ``change`` atomically and durably; return the new version (old + 1).

        Raises :class:`VersionConflict` when ``expected_version`` is given and differs
        from the stored version (nothing is written then).
        """
        ...

    def events(
        self, conversation_id: str, *, tenant: str = "default", since_seq: int = 0
    ) -> list[Event]:
        """Events with ``seq >= since_seq``, in seq order (ConversationNotFound if absent)."""
        ...

    def list_conversations(self, *, tenant: str = "default") -> list[ConversationInfo]: ...

    def delete_conversation(self, conversation_id: str, *, tenant: str = "default") -> None: ...

    def lock(self, conversation_id: str, *, tenant: str = "default") -> AbstractContextManager[None]:
        """Hold an exclusive lock on one conversation (across processes for
        SQLite and PostgreSQL) so that load-modify-commit sequences serialise."""
        ...

    def close(self) -> None: ...


def iter_turns(conv: StoredConversation, record: PageRecord) -> Iterator[Turn]:
    """The turns of one stored page (``seq`` is the 0-based position in ``conv.turns``)."""
    yield from conv.turns[record.first_seq : record.last_seq + 1]


def turns_of(conv: StoredConversation, records: Sequence[PageRecord]) -> list[list[Turn]]:
    return [list(iter_turns(conv, r)) for r in records]
