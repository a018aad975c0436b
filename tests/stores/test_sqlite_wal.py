"""Switching to WAL while other connections hold the file (``copage.sqlite_wal``)."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from copage.llm.model_types import ChatResponse
from copage.llm.response_cache import ResponseCache
from copage.sqlite_wal import enable_wal


class _Flaky:
    """A connection whose journal-mode switch fails ``fails`` times with ``error``."""

    def __init__(self, fails: int, error: str) -> None:
        self.fails, self.error, self.calls = fails, error, 0

    def execute(self, sql: str) -> _Flaky:
        assert sql == "PRAGMA journal_mode=WAL"
        self.calls += 1
        if self.calls <= self.fails:
            raise sqlite3.OperationalError(self.error)
        return self

    def fetchone(self) -> tuple[str]:
        return ("wal",)


def test_a_locked_file_is_retried_until_the_switch_succeeds() -> None:
    conn = _Flaky(3, "database is locked")
    assert enable_wal(conn, timeout=5.0) == "wal"  # type: ignore[arg-type]
    assert conn.calls == 4


def test_other_errors_and_the_timeout_are_raised() -> None:
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        enable_wal(_Flaky(1, "disk I/O error"), timeout=5.0)  # type: ignore[arg-type]
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        enable_wal(_Flaky(10**6, "database is locked"), timeout=0.05)  # type: ignore[arg-type]


def test_many_first_opens_of_one_new_file_all_succeed(tmp_path: Path) -> None:
    """Six threads open the same new cache file at once, sixty times over: before the
    retry about one round in thirty lost a writer to "database is locked" (the journal
    switch does not always wait on the busy handler)."""
    for round_ in range(60):
        path = tmp_path / f"c{round_}.sqlite"
        errors: list[BaseException] = []

        def writer(n: int, path: Path = path, errors: list[BaseException] = errors) -> None:
            try:
                cache = ResponseCache(path)
                cache.put(f"{n}", "s", ChatResponse(text=f"{n}"))
                cache.close()
            except BaseException as e:  # noqa: BLE001 - collected for the assertion
                errors.append(e)

        threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert errors == []
        assert len(ResponseCache(path)) == 6
