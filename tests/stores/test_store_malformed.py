"""Bad input: wrong files, newer databases, corrupt rows, bad URLs; all give clear errors."""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from store_helpers import PG_URL
from test_store_contract import bm

from copage.core.types import Turn
from copage.stores import (
    STORES,
    ChangeSet,
    CorruptRow,
    Event,
    PageRecord,
    StoreError,
    UnknownNameError,
    open_store,
)
from copage.stores.inmemory import MemoryStore
from copage.stores.migrations import MIGRATION_NAMES
from copage.stores.sqlite import SQLiteStore


def test_non_sqlite_file_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("this is not a database\n" * 100)
    with pytest.raises(StoreError, match="notes.txt is not a usable SQLite database"):
        SQLiteStore(path)


def test_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="is a directory"):
        SQLiteStore(tmp_path)
    with pytest.raises(StoreError, match="does not exist"):
        SQLiteStore(tmp_path / "missing" / "x.db")
    with pytest.raises(StoreError, match="memory://"):
        SQLiteStore(":memory:")
    with pytest.raises(StoreError, match="synchronous"):
        SQLiteStore(tmp_path / "x.db", synchronous="SOMETIMES")


def test_migrations_recorded_and_newer_database_refused(tmp_path: Path) -> None:
    path = tmp_path / "x.db"
    SQLiteStore(path).close()
    SQLiteStore(path).close()  # reopening applies nothing twice
    with sqlite3.connect(path) as db:
        names = [r[0] for r in db.execute("SELECT name FROM _migrations ORDER BY rowid")]
        assert names == MIGRATION_NAMES
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        db.execute("INSERT INTO _migrations VALUES ('m999_from_the_future', 0)")
    with pytest.raises(StoreError, match="newer copage.*m999_from_the_future"):
        SQLiteStore(path)


def _corrupt(path: Path, sql: str) -> None:
    with sqlite3.connect(path) as db:
        db.execute(sql)


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ('UPDATE turns SET data=\'{"id": "t1", broken\' WHERE seq=1', "turns row seq=1"),
        (
            'UPDATE turns SET data=\'{"role": "user"}\' WHERE seq=0',
            "turns row seq=0: KeyError: 'id'",
        ),
        ("UPDATE conversations SET state='[1, 2'", "conversations row \\(state\\)"),
        ("UPDATE bookmarks SET data='nope'", "bookmarks row page_index=0"),
        ("UPDATE events SET detail='{'", "events row seq=0"),
    ],
)
def test_corrupt_row_names_conversation_and_row(tmp_path: Path, sql: str, expected: str) -> None:
    path = tmp_path / "x.db"
    store = SQLiteStore(path)
    store.create_conversation("chat-7", {}, tenant="acme")
    store.commit(
        "chat-7",
        ChangeSet(
            turns=[(0, Turn("t0", "user", "a")), (1, Turn("t1", "user", "b"))],
            pages=[PageRecord(0, 0, 1, 5)],
            bookmarks=[(0, bm(0, "a"))],
            events=[Event(0, 0, "admit", 0)],
        ),
        tenant="acme",
    )
    _corrupt(path, sql)
    with pytest.raises(CorruptRow, match=f"conversation 'chat-7' \\(tenant 'acme'\\).*{expected}"):
        store.load("chat-7", tenant="acme")
        store.events("chat-7", tenant="acme")
    store.close()


def test_open_store_urls(tmp_path: Path) -> None:
    assert isinstance(open_store("memory://"), MemoryStore)
    for url in (
        str(tmp_path / "a.db"),
        f"sqlite://{tmp_path / 'b.db'}",
        f"sqlite://{tmp_path / 'c.db'}?synchronous=FULL",
    ):
        store = open_store(url)
        assert isinstance(store, SQLiteStore)
        assert store.synchronous == ("FULL" if "FULL" in url else "NORMAL")
        store.close()
    with pytest.raises(UnknownNameError, match="valid store schemes: memory, postgres, postgresql"):
        open_store("mysql://localhost/db")
    with pytest.raises(StoreError, match="valid options: synchronous"):
        open_store(f"sqlite://{tmp_path / 'd.db'}?journal=off")
    with pytest.raises(StoreError, match="needs a path"):
        open_store("sqlite://")
    with pytest.raises(StoreError, match="no path"):
        open_store("memory://somewhere")
    assert {"memory", "sqlite", "postgresql"} <= set(STORES.names())


def test_missing_psycopg_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    monkeypatch.delitem(sys.modules, "copage.stores.postgres", raising=False)
    with pytest.raises(StoreError, match=r"copage\[postgres\]"):
        open_store("postgresql://nobody@127.0.0.1:1/x")


def test_postgres_unreachable_is_a_store_error() -> None:
    pytest.importorskip("psycopg")
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL"):
        open_store("postgresql://nobody:secret@127.0.0.1:1/x?connect_timeout=2")


@pytest.mark.postgres
def test_postgres_corrupt_row_and_newer_schema(pg_schema: Callable[[], str]) -> None:
    import psycopg

    schema = pg_schema()
    store = open_store(f"{PG_URL}?schema={schema}")
    store.create_conversation("c9", {})
    store.commit("c9", ChangeSet(turns=[(0, Turn("t0", "user", "a"))]))
    with psycopg.connect(PG_URL, autocommit=True) as db:
        db.execute(f'UPDATE "{schema}".turns SET data = %s', ("{oops",))
        with pytest.raises(CorruptRow, match="conversation 'c9'.*turns row seq=0"):
            store.load("c9")
        store.close()
        db.execute(f'INSERT INTO "{schema}"._migrations VALUES (%s, 0)', ("m999_future",))
    with pytest.raises(StoreError, match="newer copage.*m999_future"):
        open_store(f"{PG_URL}?schema={schema}")
