"""The SQLite page store: one file, many conversations, WAL, one transaction per commit.

Durability: ``journal_mode=WAL`` with ``synchronous=NORMAL`` by default: a commit
survives a crash of the process (it is in the WAL once ``commit`` returns) but not
a power loss or OS crash, which may lose the last commits (never corrupt the file).
``synchronous=FULL`` fsyncs every commit and was about 9x slower here (below the
2,000 turns/s target); ``docs/storage.md`` has the measurements.

Locking: :meth:`SQLiteStore.lock` takes an ``flock`` on a per-conversation lock
file in ``<db>.locks/`` next to the database. ``flock`` locks belong to the open
file description, so the lock excludes other processes *and* other threads or
store objects in the same process (each ``lock()`` opens its own descriptor).
Lock files are never deleted (deleting a held lock file races with waiters).
Requires a POSIX local file system.

Threads: one connection per store object, opened with ``check_same_thread=False``
and guarded by a re-entrant mutex, so a server may share one store.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from copage.sqlite_wal import enable_wal
from copage.stores.migrations import CREATE_MIGRATIONS_TABLE, SQLITE, pending
from copage.stores.protocol import StoreError, UnknownStoreSetting
from copage.stores.sqlcore import Cursor, SqlStore

SYNCHRONOUS_LEVELS = ("OFF", "NORMAL", "FULL", "EXTRA")
DEFAULT_SYNCHRONOUS = "NORMAL"


class SQLiteStore(SqlStore):
    """PageStore in one SQLite file (created, and migrated, when opened)."""

    integrity_error = sqlite3.IntegrityError

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        synchronous: str = DEFAULT_SYNCHRONOUS,
        timeout: float = 30.0,
    ) -> None:
        if str(path) == ":memory:":
            raise StoreError(
                "SQLiteStore needs a file path; use 'memory://' for an in-memory store"
            )
        if synchronous.upper() not in SYNCHRONOUS_LEVELS:
            raise UnknownStoreSetting("synchronous level", synchronous, SYNCHRONOUS_LEVELS)
        self.path = Path(path)
        if self.path.is_dir():
            raise StoreError(f"{self.path} is a directory, not a SQLite database file")
        if not self.path.parent.is_dir():
            raise StoreError(
                f"cannot open {self.path}: directory {self.path.parent} does not exist"
            )
        readonly = _read_only(self.path)
        if readonly is not None:
            raise StoreError(readonly)
        self.synchronous = synchronous.upper()
        self._mutex = threading.RLock()
        try:
            conn = sqlite3.connect(
                self.path, timeout=timeout, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as e:
            raise StoreError(f"cannot open SQLite database {self.path}: {e}") from None
        self._conn: sqlite3.Connection | None = conn
        try:
            mode = enable_wal(conn, timeout=timeout)
            if str(mode).lower() != "wal":
                raise StoreError(f"{self.path}: could not enable WAL (journal_mode={mode})")
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            self._migrate()
        except sqlite3.DatabaseError as e:
            self.close()
            if "readonly" in str(e) or "read-only" in str(e):
                raise StoreError(_read_only(self.path, force=True) or str(e)) from None
            raise StoreError(
                f"{self.path} is not a usable SQLite database ({e}); "
                "point the store at a new path or a copage database"
            ) from None
        except BaseException:
            self.close()
            raise

    def _migrate(self) -> None:
        with self._tx(True) as cur:
            cur.execute(CREATE_MIGRATIONS_TABLE.format(real=SQLITE.real))
            cur.execute("SELECT name FROM _migrations")
            applied = [str(r[0]) for r in cur.fetchall()]
            for migration in pending(applied, str(self.path)):
                migration(cur.execute, SQLITE)
                cur.execute(
                    "INSERT INTO _migrations (name, applied_at) VALUES (?, ?)",
                    (migration.__name__, time.time()),
                )

    @contextmanager
    def _tx(self, write: bool) -> Iterator[Cursor]:
        with self._mutex:
            conn = self._conn
            if conn is None:
                raise StoreError(f"SQLite store {self.path} is closed")
            try:
                cur = conn.cursor()
                cur.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                yield cur
                cur.execute("COMMIT")
            except BaseException as e:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                if isinstance(e, sqlite3.Error):
                    raise StoreError(f"SQLite error on {self.path}: {e}") from None
                raise

    @contextmanager
    def lock(self, conversation_id: str, *, tenant: str = "default") -> Iterator[None]:
        """Exclusive lock on one conversation, across threads and processes (flock)."""
        fd = self._lock_fd(conversation_id, tenant)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    @contextmanager
    def try_lock(self, conversation_id: str, *, tenant: str = "default") -> Iterator[bool]:
        """Like :meth:`lock` without waiting: yields True if taken (held for the block)."""
        fd = self._lock_fd(conversation_id, tenant)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                yield False
                return
            yield True
        finally:
            os.close(fd)

    def _lock_fd(self, conversation_id: str, tenant: str) -> int:
        lock_dir = self.path.with_name(self.path.name + ".locks")
        digest = hashlib.sha256(f"{tenant}\0{conversation_id}".encode()).hexdigest()[:32]
        try:
            return os.open(lock_dir / f"{digest}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:  # first lock on this database (or the directory was removed)
            lock_dir.mkdir(exist_ok=True)
            return os.open(lock_dir / f"{digest}.lock", os.O_RDWR | os.O_CREAT, 0o644)

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check`` result (``"ok"`` when healthy)."""
        with self._mutex:
            if self._conn is None:
                raise StoreError(f"SQLite store {self.path} is closed")
            rows = self._conn.execute("PRAGMA integrity_check").fetchall()
        return "\n".join(str(r[0]) for r in rows)

    def close(self) -> None:
        """Close the connection (idempotent)."""
        with self._mutex:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def __repr__(self) -> str:
        return f"SQLiteStore({str(self.path)!r}, synchronous={self.synchronous!r})"


def _read_only(path: Path, *, force: bool = False) -> str | None:
    """What is wrong when the database cannot be written (a read-only file, or a read-only
    directory: SQLite writes ``-wal`` and ``-shm`` files beside the database), else
    None; ``force``: SQLite said so, name the likeliest cause."""
    fix = "make it writable, or copy the database to a writable directory"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{path} is read-only: {fix}"
    if path.parent.is_dir() and (force or not os.access(path.parent, os.W_OK)):
        return (f"{path}: directory {path.parent} is read-only (SQLite writes {path.name}-wal "
                f"and {path.name}-shm beside the database): {fix}")
    return None
