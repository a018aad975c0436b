"""Recognising a conversation from the messages a client resends (transparent mode).

Each stored turn carries ``meta["h"]``, a hash chain over the client-visible
transcript up to and including it: ``h_i = sha256(h_{i-1} || canonical(message_i))``.
System messages leave the chain as it is: the system prompt is a setting of the
conversation (the latest one is pinned), not part of its transcript, so a client
whose system prompt changes on every request (the time, the date, retrieved context)
still continues its conversation (conversations stored while system messages were
linked are still found by that chain, :func:`legacy_chain`). A client that
resends the whole history sends messages whose prefix hashes to the head of the
conversation it continues. :class:`TranscriptIndex` maps (tenant, head) to the
conversation, so the lookup is one indexed query, restricted to the caller's tenant.
Beside the head it keeps ``prev``, the chain through the last turn's request
(everything before the stored answer), so a retry of that request, which resends
exactly those messages, is recognised too.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from copage.server.request import Message

GENESIS = ""


def link(prev: str, message: Message) -> str:
    """The chain hash after ``message`` (``prev`` itself after a system message)."""
    if message.role == "system":
        return prev
    return _hash(prev, message)


def _hash(prev: str, message: Message) -> str:
    payload = json.dumps(message.canonical(), separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256((prev + "\n" + payload).encode("utf-8", "surrogatepass")).hexdigest()


def chain(messages: Sequence[Message], start: str = GENESIS) -> list[str]:
    """``[h_0=start, h_1, ..., h_n]`` over ``messages``."""
    out = [start]
    for m in messages:
        out.append(link(out[-1], m))
    return out


def legacy_chain(messages: Sequence[Message]) -> list[str] | None:
    """:func:`chain` as stored before system messages left it (they were linked like the
    others), or None when ``messages`` holds no system message (the two chains agree).
    Conversations stored then keep heads of that chain until they continue, so a
    transparent-mode lookup that finds nothing by :func:`chain` looks them up by this."""
    if not any(m.role == "system" for m in messages):
        return None
    out = [GENESIS]
    for m in messages:
        out.append(_hash(out[-1], m))
    return out


def tail_of(asked: Message, answer: Message, start: str = GENESIS) -> str:
    """The key of a conversation's last exchange (its request's last message and the
    answer): a client that trims its history (keeps the system prompt and the last few
    messages) still sends it, so its window is found by it (``start``: the caller's
    chain start, so that another identity's exchange never matches)."""
    return chain([asked, answer], "tail:" + start)[-1]


def digest(messages: Sequence[Message]) -> str:
    """The chain over ``messages`` alone (from :data:`GENESIS`): identifies a run of messages."""
    return chain(messages)[-1]


class Match(NamedTuple):
    """A conversation whose head equals the chain after ``length`` incoming messages."""

    conversation_id: str
    length: int


class TranscriptIndex(Protocol):
    """Head hash per conversation, per tenant."""

    def find(self, tenant: str, heads: Sequence[str]) -> Match | None:
        """The conversation whose head is ``heads[i]`` for the largest such ``i``."""
        ...

    def find_prev(self, tenant: str, prev: str) -> str | None:
        """The conversation whose last turn was asked by the messages chaining to ``prev``."""
        ...

    def find_tail(self, tenant: str, tail: str) -> list[tuple[str, str]]:
        """Up to two (conversation, head) whose last exchange has the key ``tail``
        (:func:`tail_of`); two means it is not one conversation's."""
        ...

    def put(self, tenant: str, conversation_id: str, head: str, prev: str = "",
            tail: str = "") -> None: ...

    def close(self) -> None: ...


def _best(rows: Sequence[tuple[str, str]], heads: Sequence[str]) -> Match | None:
    pos = {h: i for i, h in enumerate(heads) if h}
    best: Match | None = None
    for cid, head in rows:
        i = pos.get(head)
        if i is not None and (best is None or i > best.length):
            best = Match(cid, i)
    return best


class MemoryIndex:
    """In-process index (for the ``memory://`` store)."""

    def __init__(self) -> None:
        self._heads: dict[tuple[str, str], tuple[str, str]] = {}
        self._by_head: dict[tuple[str, str], set[str]] = {}
        self._by_prev: dict[tuple[str, str], set[str]] = {}
        self._tails: dict[tuple[str, str], str] = {}
        self._by_tail: dict[tuple[str, str], set[str]] = {}
        self._mutex = threading.Lock()

    def find(self, tenant: str, heads: Sequence[str]) -> Match | None:
        with self._mutex:
            rows = [(c, h) for h in set(heads) for c in self._by_head.get((tenant, h), ())]
        return _best(rows, heads)

    def find_prev(self, tenant: str, prev: str) -> str | None:
        with self._mutex:
            found = self._by_prev.get((tenant, prev))
            return min(found) if found else None

    def find_tail(self, tenant: str, tail: str) -> list[tuple[str, str]]:
        with self._mutex:
            found = sorted(self._by_tail.get((tenant, tail), ()))[:2]
            return [(c, self._heads[(tenant, c)][0]) for c in found]

    def put(self, tenant: str, conversation_id: str, head: str, prev: str = "",
            tail: str = "") -> None:
        with self._mutex:
            old_tail = self._tails.pop((tenant, conversation_id), None)
            if old_tail is not None:
                self._by_tail.get((tenant, old_tail), set()).discard(conversation_id)
            if tail:
                self._tails[(tenant, conversation_id)] = tail
                self._by_tail.setdefault((tenant, tail), set()).add(conversation_id)
            old = self._heads.get((tenant, conversation_id))
            if old is not None:
                self._by_head.get((tenant, old[0]), set()).discard(conversation_id)
                self._by_prev.get((tenant, old[1]), set()).discard(conversation_id)
            self._heads[(tenant, conversation_id)] = (head, prev)
            self._by_head.setdefault((tenant, head), set()).add(conversation_id)
            if prev:
                self._by_prev.setdefault((tenant, prev), set()).add(conversation_id)

    def close(self) -> None:
        return None


_CREATE = (
    ("CREATE TABLE IF NOT EXISTS copage_proxy_heads (tenant TEXT NOT NULL, "
     "conversation_id TEXT NOT NULL, head TEXT NOT NULL, PRIMARY KEY (tenant, conversation_id))"),
    "CREATE INDEX IF NOT EXISTS copage_proxy_heads_by_head ON copage_proxy_heads (tenant, head)",
)
#: Added later: tables made by older versions get the column when opened.
_ADD_PREV = "ALTER TABLE copage_proxy_heads ADD COLUMN {if_not} prev TEXT NOT NULL DEFAULT ''"
_INDEX_PREV = ("CREATE INDEX IF NOT EXISTS copage_proxy_heads_by_prev "
               "ON copage_proxy_heads (tenant, prev)")
#: Added later still: the key of the last exchange (:func:`tail_of`).
_ADD_TAIL = "ALTER TABLE copage_proxy_heads ADD COLUMN {if_not} tail TEXT NOT NULL DEFAULT ''"
_INDEX_TAIL = ("CREATE INDEX IF NOT EXISTS copage_proxy_heads_by_tail "
               "ON copage_proxy_heads (tenant, tail)")
_UPSERT = ("INSERT INTO copage_proxy_heads (tenant, conversation_id, head, prev, tail) "
           "VALUES ({p}, {p}, {p}, {p}, {p}) ON CONFLICT (tenant, conversation_id) "
           "DO UPDATE SET head = excluded.head, prev = excluded.prev, tail = excluded.tail")
_FIND_TAIL = ("SELECT conversation_id, head FROM copage_proxy_heads WHERE tenant = {p} "
              "AND tail = {p} ORDER BY conversation_id LIMIT 2")
_FIND_PREV = ("SELECT conversation_id FROM copage_proxy_heads WHERE tenant = {p} AND prev = {p} "
              "ORDER BY conversation_id LIMIT 1")


class SQLiteIndex:
    """The index as a table in the store's SQLite file (own connection).

    ``synchronous`` should be the store's level: the SQLite default (``FULL``)
    fsyncs the WAL on every ``put``, which cost more than the rest of a turn.
    """

    def __init__(self, path: str | Path, synchronous: str = "NORMAL") -> None:
        if synchronous.upper() not in ("OFF", "NORMAL", "FULL", "EXTRA"):
            raise ValueError(f"unknown synchronous level {synchronous!r}")
        self._mutex = threading.Lock()
        self._conn = sqlite3.connect(path, timeout=30.0, isolation_level=None,
                                     check_same_thread=False)
        self._conn.execute(f"PRAGMA synchronous={synchronous.upper()}")
        for stmt in _CREATE:
            self._conn.execute(stmt)
        columns = {r[1] for r in self._conn.execute("PRAGMA table_info(copage_proxy_heads)")}
        for name, add in (("prev", _ADD_PREV), ("tail", _ADD_TAIL)):
            if name not in columns:
                try:
                    self._conn.execute(add.format(if_not=""))
                except sqlite3.OperationalError as e:  # another process added it meanwhile
                    if "duplicate column" not in str(e):
                        raise
        self._conn.execute(_INDEX_PREV)
        self._conn.execute(_INDEX_TAIL)

    def find(self, tenant: str, heads: Sequence[str]) -> Match | None:
        wanted = sorted({h for h in heads if h})
        rows: list[tuple[str, str]] = []
        with self._mutex:
            for i in range(0, len(wanted), 500):
                part = wanted[i : i + 500]
                rows += self._conn.execute(
                    "SELECT conversation_id, head FROM copage_proxy_heads WHERE tenant = ? "
                    f"AND head IN ({','.join('?' * len(part))})", (tenant, *part),
                ).fetchall()
        return _best(rows, heads)

    def find_prev(self, tenant: str, prev: str) -> str | None:
        with self._mutex:
            row = self._conn.execute(_FIND_PREV.format(p="?"), (tenant, prev)).fetchone()
        return None if row is None else str(row[0])

    def find_tail(self, tenant: str, tail: str) -> list[tuple[str, str]]:
        with self._mutex:
            rows = self._conn.execute(_FIND_TAIL.format(p="?"), (tenant, tail)).fetchall()
        return [(str(c), str(h)) for c, h in rows]

    def put(self, tenant: str, conversation_id: str, head: str, prev: str = "",
            tail: str = "") -> None:
        with self._mutex:
            self._conn.execute(_UPSERT.format(p="?"),
                               (tenant, conversation_id, head, prev, tail))

    def close(self) -> None:
        with self._mutex:
            self._conn.close()


class PostgresIndex:
    """The index as a table in the store's PostgreSQL schema (own connection)."""

    def __init__(self, dsn: str, schema: str | None) -> None:
        self._mutex = threading.Lock()
        self._dsn, self._schema = dsn, schema
        self._conn: Any = self._connect()
        with self._conn.transaction():
            self._conn.execute("SELECT pg_advisory_xact_lock(7165427890123)")
            for stmt in (*_CREATE, _ADD_PREV.format(if_not="IF NOT EXISTS"), _INDEX_PREV,
                         _ADD_TAIL.format(if_not="IF NOT EXISTS"), _INDEX_TAIL):
                self._conn.execute(stmt)

    def _connect(self) -> Any:
        import psycopg
        from psycopg import sql

        conn = psycopg.connect(self._dsn, autocommit=True)
        # Heads are a lookup aid written after the store's (durable) commit; a crash
        # between the two already loses a head, so waiting for a WAL flush here (a
        # second fsync per turn) buys nothing. A lost head only means a transparent
        # client's next request starts a new conversation.
        conn.execute("SET synchronous_commit = off")
        if self._schema:
            conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(self._schema)))
        return conn

    def _live(self) -> Any:
        """The connection, replaced by a new one if it broke (server restart, network); call
        with the mutex held."""
        if self._conn.broken:
            self._conn.close()
            self._conn = self._connect()
        return self._conn

    def _execute(self, query: str, args: tuple[Any, ...]) -> Any:
        """One statement (each is idempotent); once more on a new connection when the
        server had ended this one while it sat idle (a restart, pg_terminate_backend)."""
        import psycopg

        with self._mutex:
            try:
                cur = self._live().execute(query, args)
            except psycopg.OperationalError:
                if not (self._conn.closed or self._conn.broken):
                    raise
                cur = self._live().execute(query, args)
            return cur.fetchall() if cur.description is not None else []

    def find(self, tenant: str, heads: Sequence[str]) -> Match | None:
        wanted = sorted({h for h in heads if h})
        rows = self._execute("SELECT conversation_id, head FROM copage_proxy_heads "
                             "WHERE tenant = %s AND head = ANY(%s)", (tenant, wanted))
        return _best([(str(c), str(h)) for c, h in rows], heads)

    def find_prev(self, tenant: str, prev: str) -> str | None:
        rows = self._execute(_FIND_PREV.format(p="%s"), (tenant, prev))
        return None if not rows else str(rows[0][0])

    def find_tail(self, tenant: str, tail: str) -> list[tuple[str, str]]:
        rows = self._execute(_FIND_TAIL.format(p="%s"), (tenant, tail))
        return [(str(c), str(h)) for c, h in rows]

    def put(self, tenant: str, conversation_id: str, head: str, prev: str = "",
            tail: str = "") -> None:
        self._execute(_UPSERT.format(p="%s"), (tenant, conversation_id, head, prev, tail))

    def close(self) -> None:
        with self._mutex:
            self._conn.close()


def index_for(store: object) -> TranscriptIndex:
    """The index that lives beside ``store`` (same file or database), else in memory."""
    from copage.stores.sqlite import SQLiteStore

    if isinstance(store, SQLiteStore):
        return SQLiteIndex(store.path, store.synchronous)
    if type(store).__name__ == "PostgresStore":
        attrs: dict[str, Any] = vars(store)
        return PostgresIndex(str(attrs["dsn"]), attrs.get("schema"))
    return MemoryIndex()
