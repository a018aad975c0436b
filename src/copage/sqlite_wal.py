"""Switching a SQLite file to WAL when other connections may be opening it too.

``PRAGMA journal_mode=WAL`` needs the file to itself for a moment, and SQLite does not
always wait for it through the busy handler: when several connections open a new file
at once (the response cache's writers, two proxy workers on one store), one of them
can get "database is locked" at once, whatever ``timeout`` it was opened with. The
switch is retried here, with a short backoff, until it succeeds or ``timeout`` has
passed; any other error is raised at once. Imports nothing of copage.
"""

from __future__ import annotations

import sqlite3
import time

__all__ = ["enable_wal"]


def _busy(error: sqlite3.OperationalError) -> bool:
    text = str(error).lower()
    return "locked" in text or "busy" in text


def enable_wal(conn: sqlite3.Connection, *, timeout: float = 30.0) -> str:
    """Run ``PRAGMA journal_mode=WAL`` on ``conn`` and return the journal mode it
    reports (``"wal"``, or what the file could be switched to), retrying while another
    connection holds the lock, for at most ``timeout`` seconds."""
    deadline = time.monotonic() + max(0.0, timeout)
    delay = 0.005
    while True:
        try:
            return str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0])
        except sqlite3.OperationalError as e:
            if not _busy(e) or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)
