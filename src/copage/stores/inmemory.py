"""The in-memory page store: same semantics as the SQL stores, nothing survives the process.

Values are kept as the same JSON text the SQL stores write, so callers can never
mutate stored state through a returned (or passed-in) object, and a value that
one store rejects, every store rejects.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from copage.stores import codec
from copage.stores.change_checks import InvalidChange, check_change, where
from copage.stores.protocol import (
    ChangeSet,
    ConversationExists,
    ConversationInfo,
    ConversationNotFound,
    Event,
    PageRecord,
    StoredConversation,
    VersionConflict,
)


@dataclass(slots=True)
class _Conv:
    config: str
    created_at: float
    state: str = "{}"
    updated_at: float = 0.0
    version: int = 0
    turns: list[str] = field(default_factory=list)
    pages: list[PageRecord] = field(default_factory=list)
    bookmarks: dict[int, str] = field(default_factory=dict)
    events: dict[int, tuple[int, str, int | None, str]] = field(default_factory=dict)
    page_state: dict[int, str] = field(default_factory=dict)
    #: The version that wrote each bookmark and page state (``load_since``).
    written: dict[tuple[str, int], int] = field(default_factory=dict)


class MemoryStore:
    """PageStore in a dict; thread-safe; ``lock()`` excludes threads of this process."""

    def __init__(self) -> None:
        self._convs: dict[tuple[str, str], _Conv] = {}
        self._mutex = threading.RLock()
        #: Per-conversation lock and how many holders or waiters use it; an entry is
        #: dropped when unused and its conversation absent (deleted or never created).
        self._locks: dict[tuple[str, str], list[Any]] = {}

    def _get(self, conversation_id: str, tenant: str) -> _Conv:
        conv = self._convs.get((tenant, conversation_id))
        if conv is None:
            raise ConversationNotFound(f"{where(conversation_id, tenant)} not found")
        return conv

    def create_conversation(
        self,
        conversation_id: str,
        config: Mapping[str, Any],
        *,
        tenant: str = "default",
        now: float = 0.0,
    ) -> None:
        """Create an empty conversation; raise ConversationExists if the id is taken."""
        name = where(conversation_id, tenant)
        cfg = codec.dumps(dict(config), f"config of {name}")
        with self._mutex:
            if (tenant, conversation_id) in self._convs:
                raise ConversationExists(f"{name} already exists")
            self._convs[(tenant, conversation_id)] = _Conv(cfg, now, updated_at=now)

    def load(self, conversation_id: str, *, tenant: str = "default") -> StoredConversation:
        """Load a deep copy; raise ConversationNotFound if absent."""
        return self.load_since(conversation_id, tenant=tenant)

    def load_since(self, conversation_id: str, *, tenant: str = "default", turns_from: int = 0,
                   pages_from: int = 0, since_version: int | None = None
                   ) -> StoredConversation:
        """As :meth:`load`, with only the turns from seq ``turns_from`` and the pages
        from index ``pages_from`` (for catching up with another writer); with
        ``since_version``, only the bookmarks and page states written by later commits."""
        name = where(conversation_id, tenant)
        after = -1 if since_version is None else since_version
        with self._mutex:
            c = self._get(conversation_id, tenant)
            turns, pages = c.turns[turns_from:], c.pages[pages_from:]
            bms = {i: b for i, b in c.bookmarks.items() if c.written.get(("b", i), 0) > after}
            rows = {i: d for i, d in c.page_state.items() if c.written.get(("s", i), 0) > after}
            config, state, version = c.config, c.state, c.version
        return StoredConversation(
            id=conversation_id,
            tenant=tenant,
            config=codec.object_from_json(config, f"{name} (config)"),
            turns=[codec.turn_from_json(t, f"{name}, turn seq={turns_from + i}")
                   for i, t in enumerate(turns)],
            pages=list(pages),
            bookmarks={
                i: codec.bookmark_from_json(b, f"{name}, bookmark {i}")
                for i, b in sorted(bms.items())
            },
            state=codec.object_from_json(state, f"{name} (state)"),
            version=version,
            page_state={i: codec.object_from_json(d, f"{name}, page state {i}")
                        for i, d in sorted(rows.items())},
        )

    def exists(self, conversation_id: str, *, tenant: str = "default") -> bool:
        """Whether the conversation exists in ``tenant``."""
        with self._mutex:
            return (tenant, conversation_id) in self._convs

    def version(self, conversation_id: str, *, tenant: str = "default") -> int | None:
        """The stored version (commits so far), or None if the conversation is absent."""
        with self._mutex:
            c = self._convs.get((tenant, conversation_id))
            return None if c is None else c.version

    def stamp(self, conversation_id: str, *, tenant: str = "default"
              ) -> tuple[int, float] | None:
        """``(version, created_at)``, or None if absent: a re-created conversation of the
        same id has another ``created_at`` (see :mod:`copage.session.memcache`)."""
        with self._mutex:
            c = self._convs.get((tenant, conversation_id))
            return None if c is None else (c.version, c.created_at)

    def commit(
        self,
        conversation_id: str,
        change: ChangeSet,
        *,
        tenant: str = "default",
        expected_version: int | None = None,
        now: float = 0.0,
    ) -> int:
        """Apply ``change`` atomically; return the new version."""
        name = where(conversation_id, tenant)
        enc = codec.encode_change(change, name)
        turns = [j for _, j in enc.turns]
        bms = enc.bookmarks
        events = [(seq, (ts, kind, page, detail)) for seq, ts, kind, page, detail in enc.events]
        state = enc.state
        with self._mutex:
            c = self._get(conversation_id, tenant)
            if expected_version is not None and expected_version != c.version:
                raise VersionConflict(
                    f"commit to {name}: expected version {expected_version}, stored {c.version}"
                )
            kept = c.pages if change.drop_pages is None else c.pages[:change.drop_pages]
            check_change(change, len(c.turns), len(c.pages), name,
                         kept[-1].last_seq if kept else -1)
            drop_events = change.drop_events
            for seq, _ in events:
                if seq in c.events and (drop_events is None or seq < drop_events):
                    raise InvalidChange(f"commit to {name}: event seq {seq} is already stored")
            # The rows removed are the latest added (dicts keep insertion order), so the
            # cost is theirs, not the conversation's.
            if change.drop_pages is not None:
                del c.pages[change.drop_pages:]
                while c.bookmarks and next(reversed(c.bookmarks)) >= change.drop_pages:
                    c.bookmarks.popitem()
                for i in [i for i in c.page_state if i >= change.drop_pages]:
                    del c.page_state[i]
                    c.written.pop(("s", i), None)
            if drop_events is not None:
                while c.events and next(reversed(c.events)) >= drop_events:
                    c.events.popitem()
            if change.truncate is not None:
                del c.turns[change.truncate:]
            c.turns.extend(turns)
            c.pages.extend(change.pages)
            c.bookmarks.update(bms)
            c.page_state.update(enc.page_state)
            c.written.update({("b", i): c.version + 1 for i, _ in bms})
            c.written.update({("s", i): c.version + 1 for i, _ in enc.page_state})
            c.events.update(events)
            if state is not None:
                c.state = state
            c.version += 1
            c.updated_at = now
            return c.version

    def restore_conversation(
        self, conversation_id: str, config: Mapping[str, Any], change: ChangeSet, *,
        tenant: str = "default", created_at: float = 0.0, updated_at: float = 0.0,
        replace: bool = False, version: int = 1,
    ) -> int:
        """Create a conversation holding ``change`` at once (all or nothing; versions as
        :meth:`copage.stores.sqlcore.SqlStore.restore_conversation`)."""
        name = where(conversation_id, tenant)
        cfg = codec.dumps(dict(config), f"config of {name}")
        key = (tenant, conversation_id)
        with self._mutex:  # reentrant: commit below runs under it, unseen by others
            old = self._convs.get(key)
            if old is not None and not replace:
                raise ConversationExists(f"{name} already exists")
            new = max(version, 1, old.version + 1 if old is not None else 1)
            self._convs[key] = _Conv(cfg, created_at, updated_at=created_at, version=new - 1)
            try:
                return self.commit(conversation_id, change, tenant=tenant, now=updated_at)
            except BaseException:
                if old is None:
                    del self._convs[key]
                else:
                    self._convs[key] = old
                raise

    def events(
        self, conversation_id: str, *, tenant: str = "default", since_seq: int = 0
    ) -> list[Event]:
        """Events with ``seq >= since_seq``, in seq order."""
        name = where(conversation_id, tenant)
        with self._mutex:
            rows = sorted(self._get(conversation_id, tenant).events.items())
        return [
            Event(s, ts, k, p, codec.object_from_json(d, f"{name}, event seq={s}"))
            for s, (ts, k, p, d) in rows
            if s >= since_seq
        ]

    def list_conversations(self, *, tenant: str = "default") -> list[ConversationInfo]:
        """The tenant's conversations, oldest first."""
        with self._mutex:
            infos = [
                ConversationInfo(
                    cid, t, c.created_at, c.updated_at, len(c.turns), len(c.pages), c.version
                )
                for (t, cid), c in self._convs.items()
                if t == tenant
            ]
        return sorted(infos, key=lambda i: (i.created_at, i.id))

    def delete_conversation(self, conversation_id: str, *, tenant: str = "default") -> None:
        """Delete the conversation; raise ConversationNotFound if absent."""
        with self._mutex:
            self._get(conversation_id, tenant)
            del self._convs[(tenant, conversation_id)]
            entry = self._locks.get((tenant, conversation_id))
            if entry is not None and entry[1] == 0:
                del self._locks[(tenant, conversation_id)]

    def _use_lock(self, key: tuple[str, str]) -> threading.Lock:
        with self._mutex:
            entry = self._locks.setdefault(key, [threading.Lock(), 0])
            entry[1] += 1
            lk: threading.Lock = entry[0]
            return lk

    def _unuse_lock(self, key: tuple[str, str]) -> None:
        with self._mutex:
            entry = self._locks[key]
            entry[1] -= 1
            if entry[1] == 0 and key not in self._convs:
                del self._locks[key]

    @contextmanager
    def lock(self, conversation_id: str, *, tenant: str = "default") -> Iterator[None]:
        """Exclusive lock on one conversation (threads of this process)."""
        key = (tenant, conversation_id)
        lk = self._use_lock(key)
        try:
            with lk:
                yield
        finally:
            self._unuse_lock(key)

    @contextmanager
    def try_lock(self, conversation_id: str, *, tenant: str = "default") -> Iterator[bool]:
        """Like :meth:`lock` without waiting: yields True if taken (held for the block)."""
        key = (tenant, conversation_id)
        lk = self._use_lock(key)
        try:
            if not lk.acquire(blocking=False):
                yield False
                return
            try:
                yield True
            finally:
                lk.release()
        finally:
            self._unuse_lock(key)

    def close(self) -> None:
        """Nothing to release; the data stays until the object is dropped."""

    def __repr__(self) -> str:
        return f"MemoryStore({len(self._convs)} conversations)"
