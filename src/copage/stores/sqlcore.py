"""The PageStore logic shared by the SQLite and PostgreSQL stores.

Queries are written once with ``?`` placeholders; a backend supplies transactions
(:meth:`SqlStore._tx`), a placeholder style and its cross-process :meth:`lock`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol, Self

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


class Cursor(Protocol):
    """The part of a DB-API cursor the stores use (sqlite3 and psycopg agree on it)."""

    @property
    def rowcount(self) -> int: ...

    def execute(self, sql: Any, params: Sequence[Any] = ..., /) -> Any: ...
    def executemany(self, sql: Any, params: Any, /) -> Any: ...
    def fetchone(self) -> Any: ...
    def fetchall(self) -> list[Any]: ...


class SqlStore(ABC):
    """A PageStore over one SQL connection; subclasses bind a backend."""

    placeholder = "?"
    row_lock_clause = ""  # row-lock clause for the version read in commit (PostgreSQL)
    integrity_error: type[Exception] = Exception

    @abstractmethod
    def _tx(self, write: bool) -> AbstractContextManager[Cursor]:
        """A transaction (serialised with other writers when ``write``), mapping errors."""

    @abstractmethod
    def lock(
        self, conversation_id: str, *, tenant: str = "default"
    ) -> AbstractContextManager[None]:
        """Exclusive cross-process lock on one conversation."""

    @abstractmethod
    def try_lock(
        self, conversation_id: str, *, tenant: str = "default"
    ) -> AbstractContextManager[bool]:
        """Like :meth:`lock` without waiting: yields True if taken, False if busy."""

    @abstractmethod
    def close(self) -> None:
        """Close the connection."""

    def _q(self, sql: str) -> str:
        return sql if self.placeholder == "?" else sql.replace("?", self.placeholder)

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
        with self._tx(True) as cur:
            cur.execute(
                self._q(
                    "INSERT INTO conversations (tenant, id, config, state, version, n_turns, "
                    "n_pages, created_at, updated_at) VALUES (?, ?, ?, '{}', 0, 0, 0, ?, ?) "
                    "ON CONFLICT (tenant, id) DO NOTHING"
                ),
                (tenant, conversation_id, cfg, now, now),
            )
            if cur.rowcount == 0:
                raise ConversationExists(f"{name} already exists")

    def exists(self, conversation_id: str, *, tenant: str = "default") -> bool:
        """Whether the conversation exists in ``tenant``."""
        with self._tx(False) as cur:
            return self._head(cur, conversation_id, tenant) is not None

    def version(self, conversation_id: str, *, tenant: str = "default") -> int | None:
        """The stored version (commits so far), or None if the conversation is absent."""
        with self._tx(False) as cur:
            head = self._head(cur, conversation_id, tenant)
        return None if head is None else head[0]

    def stamp(self, conversation_id: str, *, tenant: str = "default"
              ) -> tuple[int, float] | None:
        """``(version, created_at)``, or None if absent: a re-created conversation of the
        same id has another ``created_at`` (see :mod:`copage.session.memcache`)."""
        with self._tx(False) as cur:
            cur.execute(self._q("SELECT version, created_at FROM conversations "
                                "WHERE tenant=? AND id=?"), (tenant, conversation_id))
            row = cur.fetchone()
        return None if row is None else (int(row[0]), float(row[1]))

    def load(self, conversation_id: str, *, tenant: str = "default") -> StoredConversation:
        """Load everything; raise ConversationNotFound if absent."""
        return self.load_since(conversation_id, tenant=tenant)

    def load_since(self, conversation_id: str, *, tenant: str = "default", turns_from: int = 0,
                   pages_from: int = 0, since_version: int | None = None
                   ) -> StoredConversation:
        """As :meth:`load`, with only the turns from seq ``turns_from`` and the pages
        from index ``pages_from`` (for catching up with another writer); with
        ``since_version``, only the bookmarks and page states written by later commits."""
        name = where(conversation_id, tenant)
        key = (tenant, conversation_id)
        with self._tx(False) as cur:
            cur.execute(
                self._q("SELECT config, state, version FROM conversations WHERE tenant=? AND id=?"),
                key,
            )
            row = cur.fetchone()
            if row is None:
                raise ConversationNotFound(f"{name} not found")
            cur.execute(self._q(_SELECT_FROM.format("seq, data", "turns", "seq")),
                        (*key, turns_from))
            turn_rows = cur.fetchall()
            cur.execute(
                self._q(
                    _SELECT_FROM.format(
                        "page_index, first_seq, last_seq, tokens", "pages", "page_index"
                    )
                ),
                (*key, pages_from),
            )
            page_rows = cur.fetchall()
            after = -1 if since_version is None else since_version
            cur.execute(self._q(_SELECT_CHANGED.format("bookmarks")), (*key, after))
            bm_rows = cur.fetchall()
            cur.execute(self._q(_SELECT_CHANGED.format("page_state")), (*key, after))
            ps_rows = cur.fetchall()
        turns = []
        for pos, (seq, data) in enumerate(turn_rows, turns_from):
            if seq != pos:
                raise codec.CorruptRow(f"{name}: turn seqs are not contiguous at seq {seq}")
            turns.append(codec.turn_from_json(data, f"{name}, turns row seq={seq}"))
        return StoredConversation(
            id=conversation_id,
            tenant=tenant,
            config=codec.object_from_json(row[0], f"{name}, conversations row (config)"),
            turns=turns,
            pages=[PageRecord(int(i), int(a), int(b), int(t)) for i, a, b, t in page_rows],
            bookmarks={
                int(i): codec.bookmark_from_json(d, f"{name}, bookmarks row page_index={i}")
                for i, d in bm_rows
            },
            state=codec.object_from_json(row[1], f"{name}, conversations row (state)"),
            version=int(row[2]),
            page_state={
                int(i): codec.object_from_json(d, f"{name}, page_state row page_index={i}")
                for i, d in ps_rows
            },
        )

    def commit(
        self,
        conversation_id: str,
        change: ChangeSet,
        *,
        tenant: str = "default",
        expected_version: int | None = None,
        now: float = 0.0,
    ) -> int:
        """Apply ``change`` in one transaction; return the new version."""
        name = where(conversation_id, tenant)
        enc = codec.encode_change(change, name)
        with self._tx(True) as cur:
            head = self._head(cur, conversation_id, tenant, for_update=True)
            if head is None:
                raise ConversationNotFound(f"{name} not found")
            version = head[0]
            if expected_version is not None and expected_version != version:
                raise_conflict(name, expected_version, version)
            self._apply(cur, conversation_id, tenant, change, enc, head, now)
        return version + 1

    def restore_conversation(
        self, conversation_id: str, config: Mapping[str, Any], change: ChangeSet, *,
        tenant: str = "default", created_at: float = 0.0, updated_at: float = 0.0,
        replace: bool = False, version: int = 1,
    ) -> int:
        """Create a conversation holding ``change`` (a whole exported conversation) in
        one transaction: either all of it is stored or nothing is (an existing one of
        that id is kept too). Raises ConversationExists unless ``replace``. Returns the
        new version: ``version`` (the exported one), or one more than the replaced
        conversation's when that is higher, so that a cached copy of the replaced one
        (:mod:`copage.session.memcache` compares versions) is never taken for it."""
        name = where(conversation_id, tenant)
        cfg = codec.dumps(dict(config), f"config of {name}")
        enc = codec.encode_change(change, name)
        with self._tx(True) as cur:
            new = max(version, 1)
            if replace:
                old = self._head(cur, conversation_id, tenant, for_update=True)
                if old is not None:
                    new = max(new, old[0] + 1)
                    self._delete_rows(cur, conversation_id, tenant)
            cur.execute(
                self._q(
                    "INSERT INTO conversations (tenant, id, config, state, version, n_turns, "
                    "n_pages, created_at, updated_at) VALUES (?, ?, ?, '{}', ?, 0, 0, ?, ?) "
                    "ON CONFLICT (tenant, id) DO NOTHING"
                ),
                (tenant, conversation_id, cfg, new - 1, created_at, created_at),
            )
            if cur.rowcount == 0:
                raise ConversationExists(f"{name} already exists")
            self._apply(cur, conversation_id, tenant, change, enc, (new - 1, 0, 0), updated_at)
        return new

    def _apply(self, cur: Cursor, conversation_id: str, tenant: str, change: ChangeSet,
               enc: codec.EncodedChange, head: tuple[int, int, int], now: float) -> None:
        """Write ``change`` (encoded as ``enc``) on top of the stored ``head``
        (version, turns, pages) inside the caller's transaction."""
        name = where(conversation_id, tenant)
        key = (tenant, conversation_id)
        turns = [(*key, *row) for row in enc.turns]
        bms = [(*key, *row) for row in enc.bookmarks]
        events = [(*key, *row) for row in enc.events]
        state = enc.state
        version, n_turns, n_pages = head
        last_paged = -1
        if change.truncate is not None:
            keep = n_pages if change.drop_pages is None else change.drop_pages
            cur.execute(self._q("SELECT MAX(last_seq) FROM pages WHERE tenant=? AND "
                                "conversation_id=? AND page_index < ?"), (*key, keep))
            row = cur.fetchone()
            last_paged = -1 if row is None or row[0] is None else int(row[0])
        check_change(change, n_turns, n_pages, name, last_paged)
        if change.drop_pages is not None:  # a page close taken back
            for table in ("pages", "bookmarks", "page_state"):
                cur.execute(self._q(f"DELETE FROM {table} WHERE tenant=? AND "
                                    "conversation_id=? AND page_index >= ?"),
                            (*key, change.drop_pages))
            n_pages = change.drop_pages
        if change.drop_events is not None:
            cur.execute(self._q("DELETE FROM events WHERE tenant=? AND conversation_id=? "
                                "AND seq >= ?"), (*key, change.drop_events))
        if change.truncate is not None:
            cur.execute(self._q("DELETE FROM turns WHERE tenant=? AND conversation_id=? "
                                "AND seq >= ?"), (*key, change.truncate))
            n_turns = change.truncate
        if turns:
            cur.executemany(
                self._q(
                    "INSERT INTO turns (tenant, conversation_id, seq, data) VALUES (?, ?, ?, ?)"
                ),
                turns,
            )
        if change.pages:
            cur.executemany(
                self._q(
                    "INSERT INTO pages (tenant, conversation_id, page_index, first_seq, last_seq, "
                    "tokens) VALUES (?, ?, ?, ?, ?, ?)"
                ),
                [
                    (tenant, conversation_id, p.index, p.first_seq, p.last_seq, p.tokens)
                    for p in change.pages
                ],
            )
        if bms:
            cur.executemany(
                self._q(
                    "INSERT INTO bookmarks (tenant, conversation_id, page_index, data, version) "
                    "VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant, conversation_id, page_index) "
                    "DO UPDATE SET data = excluded.data, version = excluded.version"
                ),
                [(*row, version + 1) for row in bms],
            )
        if events:
            self._insert_events(cur, events, name)
        if enc.page_state:
            cur.executemany(
                self._q(
                    "INSERT INTO page_state (tenant, conversation_id, page_index, data, "
                    "version) VALUES (?, ?, ?, ?, ?) ON CONFLICT (tenant, conversation_id, "
                    "page_index) DO UPDATE SET data = excluded.data, "
                    "version = excluded.version"
                ),
                [(*key, i, d, version + 1) for i, d in enc.page_state],
            )
        cur.execute(
            self._q(
                "UPDATE conversations SET version=?, n_turns=?, n_pages=?, updated_at=?, "
                "state=COALESCE(?, state) WHERE tenant=? AND id=?"
            ),
            (
                version + 1,
                n_turns + len(turns),
                n_pages + len(change.pages),
                now,
                state,
                tenant,
                conversation_id,
            ),
        )

    def _insert_events(self, cur: Cursor, rows: list[tuple[Any, ...]], name: str) -> None:
        try:
            cur.executemany(
                self._q(
                    "INSERT INTO events (tenant, conversation_id, seq, turn_seq, kind, page_index, "
                    "detail) VALUES (?, ?, ?, ?, ?, ?, ?)"
                ),
                rows,
            )
        except self.integrity_error:
            seqs = ", ".join(str(r[2]) for r in rows)
            raise InvalidChange(
                f"commit to {name}: an event seq among {seqs} is already stored"
            ) from None

    def events(
        self, conversation_id: str, *, tenant: str = "default", since_seq: int = 0
    ) -> list[Event]:
        """Events with ``seq >= since_seq``, in seq order."""
        name = where(conversation_id, tenant)
        with self._tx(False) as cur:
            if self._head(cur, conversation_id, tenant) is None:
                raise ConversationNotFound(f"{name} not found")
            cur.execute(
                self._q(
                    "SELECT seq, turn_seq, kind, page_index, detail FROM events "
                    "WHERE tenant=? AND conversation_id=? AND seq>=? ORDER BY seq"
                ),
                (tenant, conversation_id, since_seq),
            )
            rows = cur.fetchall()
        return [
            Event(
                int(s),
                int(ts),
                str(k),
                None if p is None else int(p),
                codec.object_from_json(d, f"{name}, events row seq={s}"),
            )
            for s, ts, k, p, d in rows
        ]

    def list_conversations(self, *, tenant: str = "default") -> list[ConversationInfo]:
        """The tenant's conversations, oldest first."""
        with self._tx(False) as cur:
            cur.execute(
                self._q(
                    "SELECT id, created_at, updated_at, n_turns, n_pages, version FROM conversations "
                    "WHERE tenant=? ORDER BY created_at, id"
                ),
                (tenant,),
            )
            rows = cur.fetchall()
        return [
            ConversationInfo(str(i), tenant, float(c), float(u), int(t), int(p), int(v))
            for i, c, u, t, p, v in rows
        ]

    def delete_conversation(self, conversation_id: str, *, tenant: str = "default") -> None:
        """Delete the conversation and all its rows; raise ConversationNotFound if absent."""
        with self._tx(True) as cur:
            if not self._delete_rows(cur, conversation_id, tenant):
                raise ConversationNotFound(f"{where(conversation_id, tenant)} not found")

    def _delete_rows(self, cur: Cursor, conversation_id: str, tenant: str) -> bool:
        """Delete a conversation's rows in the caller's transaction; False if absent."""
        cur.execute(
            self._q("DELETE FROM conversations WHERE tenant=? AND id=?"),
            (tenant, conversation_id),
        )
        if cur.rowcount == 0:
            return False
        for table in ("turns", "pages", "bookmarks", "events", "page_state"):
            cur.execute(
                self._q(f"DELETE FROM {table} WHERE tenant=? AND conversation_id=?"),
                (tenant, conversation_id),
            )
        return True

    def _head(
        self, cur: Cursor, conversation_id: str, tenant: str, *, for_update: bool = False
    ) -> tuple[int, int, int] | None:
        sql = "SELECT version, n_turns, n_pages FROM conversations WHERE tenant=? AND id=?"
        if for_update:
            sql += self.row_lock_clause
        cur.execute(self._q(sql), (tenant, conversation_id))
        row = cur.fetchone()
        return None if row is None else (int(row[0]), int(row[1]), int(row[2]))

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_SELECT_CHANGED = ("SELECT page_index, data FROM {0} WHERE tenant=? AND conversation_id=? "
                   "AND version > ? ORDER BY page_index")
_SELECT_FROM = ("SELECT {0} FROM {1} WHERE tenant=? AND conversation_id=? AND {2} >= ? "
                "ORDER BY {2}")


def raise_conflict(name: str, expected: int, actual: int) -> None:
    """Raise VersionConflict with both versions in the message."""
    raise VersionConflict(f"commit to {name}: expected version {expected}, stored {actual}")
