"""The PostgreSQL page store (psycopg 3): same schema and migrations as SQLite.

Connections: one connection per store object, guarded by a mutex (so a server may
share the store; commits from one process are serialised, which is also what
SQLite does). Each commit is one transaction that first locks the conversation
row (``SELECT ... FOR UPDATE``), so concurrent commits from several processes
serialise and ``expected_version`` is checked against the latest version.
Loads run in a ``REPEATABLE READ`` read-only transaction (one snapshot).

Locking: :meth:`PostgresStore.lock` takes ``pg_advisory_lock`` on a 64-bit hash of
(schema, tenant, conversation id), held on a dedicated connection for the
duration (advisory locks are re-entrant per session, so two threads must not
share that connection). Idle lock connections are kept for reuse.

``schema`` (optional) puts the tables in that schema (created if missing).
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, cast

import psycopg
from psycopg import sql

from copage.stores.migrations import CREATE_MIGRATIONS_TABLE, POSTGRES, pending
from copage.stores.protocol import StoreError
from copage.stores.sqlcore import Cursor, SqlStore

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}\Z")
_MIGRATION_LOCK = 0x636F706167650001  # "copage" + 1: serialises migrations of concurrent openers


class PostgresStore(SqlStore):
    """PageStore in a PostgreSQL database (tables migrated when opened)."""

    placeholder = "%s"
    row_lock_clause = " FOR UPDATE"
    integrity_error = psycopg.IntegrityError

    def __init__(self, dsn: str, *, schema: str | None = None, connect_timeout: int = 10) -> None:
        if schema is not None and not _IDENT.match(schema):
            raise StoreError(f"invalid PostgreSQL schema name {schema!r} (letters, digits, _)")
        self.dsn, self.schema, self._timeout = dsn, schema, connect_timeout
        self._mutex = threading.RLock()
        self._idle_lock_conns: list[psycopg.Connection[Any]] = []
        self._conn: psycopg.Connection[Any] | None = self._connect(use_schema=True)
        try:
            self._migrate()
        except BaseException:
            self.close()
            raise

    def _connect(self, *, use_schema: bool) -> psycopg.Connection[Any]:
        try:
            conn = psycopg.connect(self.dsn, autocommit=True, connect_timeout=self._timeout)
        except psycopg.Error as e:
            raise StoreError(f"cannot connect to PostgreSQL at {_redact(self.dsn)}: {e}") from None
        if use_schema and self.schema:
            ident = sql.Identifier(self.schema)
            try:
                conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(ident))
            except psycopg.errors.UniqueViolation:
                pass  # another process created it at the same moment
            conn.execute(sql.SQL("SET search_path TO {}").format(ident))
        return conn

    def _migrate(self) -> None:
        with self._tx(True) as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            cur.execute(CREATE_MIGRATIONS_TABLE.format(real=POSTGRES.real))
            cur.execute("SELECT name FROM _migrations")
            applied = [str(r[0]) for r in cur.fetchall()]
            where = f"PostgreSQL database {_redact(self.dsn)} (schema {self.schema or 'public'})"
            for migration in pending(applied, where):
                migration(cur.execute, POSTGRES)
                cur.execute(
                    "INSERT INTO _migrations (name, applied_at) VALUES (%s, %s)",
                    (migration.__name__, time.time()),
                )

    def _live(self, fresh: bool = False) -> psycopg.Connection[Any]:
        """The store's connection (mutex held): a new one if it is broken or ``fresh``."""
        if self._conn is None:
            raise StoreError(f"PostgreSQL store {_redact(self.dsn)} is closed")
        if fresh or self._conn.broken:
            self._conn.close()
            self._conn = self._connect(use_schema=True)
        return self._conn

    @contextmanager
    def _tx(self, write: bool) -> Iterator[Cursor]:
        with self._mutex, ExitStack() as stack:
            # A connection the server ended while it sat idle (a restart, a failover,
            # pg_terminate_backend) is not known to be dead until used: its BEGIN fails.
            # Nothing has run then, so the transaction starts again on a new connection.
            for attempt in (0, 1):
                conn = self._live(fresh=attempt > 0)
                try:
                    stack.enter_context(conn.transaction())
                    break
                except psycopg.OperationalError as e:
                    if attempt or not _dead(conn):
                        raise StoreError(f"PostgreSQL error ({_redact(self.dsn)}): {e}"
                                         ) from None
            try:
                with conn.cursor() as cur:
                    if not write:
                        cur.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
                    yield cast(Cursor, cur)
            except psycopg.Error as e:
                raise StoreError(f"PostgreSQL error ({_redact(self.dsn)}): {e}") from None

    def version(self, conversation_id: str, *, tenant: str = "default") -> int | None:
        """The stored version, or None if absent (one autocommit statement: one round trip;
        once more on a new connection when the server had ended this one)."""
        with self._mutex:
            for attempt in (0, 1):
                conn = self._live(fresh=attempt > 0)
                try:
                    row = conn.execute(
                        "SELECT version FROM conversations WHERE tenant=%s AND id=%s",
                        (tenant, conversation_id),
                    ).fetchone()
                    break
                except psycopg.Error as e:
                    if attempt or not _dead(conn):
                        raise StoreError(f"PostgreSQL error ({_redact(self.dsn)}): {e}"
                                         ) from None
        return None if row is None else int(row[0])

    @contextmanager
    def lock(self, conversation_id: str, *, tenant: str = "default") -> Iterator[None]:
        """Exclusive lock on one conversation (``pg_advisory_lock``), across processes."""
        with self._advisory("pg_advisory_lock", conversation_id, tenant):
            yield

    @contextmanager
    def try_lock(self, conversation_id: str, *, tenant: str = "default") -> Iterator[bool]:
        """Like :meth:`lock` without waiting (``pg_try_advisory_lock``): yields True if taken."""
        with self._advisory("pg_try_advisory_lock", conversation_id, tenant) as taken:
            yield taken

    @contextmanager
    def _advisory(self, function: str, conversation_id: str, tenant: str) -> Iterator[bool]:
        """Run ``function`` (``pg_advisory_lock`` or ``pg_try_advisory_lock``) on a lock
        connection kept for the duration; unlock and return the connection after."""
        key = lock_key(self.schema or "public", tenant, conversation_id)
        with self._mutex:
            idle = self._idle_lock_conns.pop() if self._idle_lock_conns else None
        conn, row = self._lock_on(idle, function, key, conversation_id)
        # pg_advisory_lock returns void (NULL): reaching here means it was taken
        taken = function == "pg_advisory_lock" or bool(row and row[0])
        try:
            yield taken
        finally:
            try:
                if taken:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (key,))
                with self._mutex:
                    self._idle_lock_conns.append(conn)
            except psycopg.Error:
                conn.close()  # ending the session releases its advisory locks

    def _lock_on(self, idle: psycopg.Connection[Any] | None, function: str, key: int,
                 conversation_id: str) -> tuple[psycopg.Connection[Any], Any]:
        """Run the lock ``function`` on ``idle`` (or a new connection); once more on a new
        connection when the server had ended the idle one."""
        for attempt in (0, 1):
            conn = idle if idle is not None and not idle.broken and attempt == 0 else (
                self._connect(use_schema=False))
            try:
                return conn, conn.execute(f"SELECT {function}(%s)", (key,)).fetchone()
            except psycopg.Error as e:
                dead = _dead(conn) and conn is idle
                conn.close()
                if not dead:
                    raise StoreError(f"cannot take the lock on {conversation_id!r}: {e}"
                                     ) from None
                # the others kept idle with it are likely gone too
                self._drop_idle()
        raise AssertionError("unreachable: the second attempt returns or raises")

    def _drop_idle(self) -> None:
        with self._mutex:
            idle, self._idle_lock_conns = self._idle_lock_conns, []
        for conn in idle:
            conn.close()

    def close(self) -> None:
        """Close all connections (idempotent)."""
        with self._mutex:
            for conn in self._idle_lock_conns:
                conn.close()
            self._idle_lock_conns.clear()
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"PostgresStore({_redact(self.dsn)!r}, schema={self.schema!r})"


def _dead(conn: psycopg.Connection[Any]) -> bool:
    """Whether a statement failed because the connection is gone (not the statement)."""
    return conn.closed or conn.broken


def lock_key(*parts: str) -> int:
    """A signed 64-bit advisory-lock key from the parts (sha256, first 8 bytes)."""
    digest = hashlib.sha256("\0".join(parts).encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _redact(dsn: str) -> str:
    """The DSN without its password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.Error:
        return "<unparseable dsn>"
    info.pop("password", None)
    return " ".join(f"{k}={v}" for k, v in info.items())
