"""``copage conversations export`` / ``import`` from the command line: SQLite -> PostgreSQL,
refusals with one-line errors and nothing written."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from copage.cli.main import main
from copage.memory import PagedMemory
from copage.stores import open_store

PG = "postgresql://postgres@127.0.0.1:5432/test"


@pytest.fixture
def pg_url() -> str:
    psycopg = pytest.importorskip("psycopg")
    try:
        psycopg.connect(PG, connect_timeout=3).close()
    except psycopg.Error as e:
        pytest.skip(f"PostgreSQL unreachable: {e}")
    schema = f"copage_cli_{uuid.uuid4().hex[:10]}"
    yield f"{PG}?schema={schema}"
    with psycopg.connect(PG, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


@pytest.mark.postgres
def test_export_then_import_on_the_command_line(tmp_path: Path, pg_url: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    sqlite = f"sqlite://{tmp_path / 'a.db'}"
    mem = PagedMemory(store=sqlite, conversation_id="alice", tenant="t1", boundary="fixed_4",
                      resident_pages=2)
    for i in range(30):
        mem.add("user" if i % 2 == 0 else "assistant", f"message {i} about topic {i % 5}")
    out = tmp_path / "alice.jsonl"
    assert main(["conversations", "export", "alice", "--store", sqlite, "--tenant", "t1",
                 "-o", str(out)]) == 0
    assert main(["conversations", "import", str(out), "--store", pg_url]) == 0
    assert "imported alice (tenant 'default')" in capsys.readouterr().out
    # taken: refused, nothing changed; --as stores a copy
    assert main(["conversations", "import", str(out), "--store", pg_url]) == 1
    assert "already exists: nothing imported" in capsys.readouterr().err
    assert main(["conversations", "import", str(out), "--store", pg_url, "--as", "bob"]) == 0
    store = open_store(pg_url)
    assert store.load("alice").turns == store.load("bob").turns == mem.turns
    store.close()
    # a file cut at its last line: a one-line error naming the line, exit 2, nothing stored
    cut = tmp_path / "cut.jsonl"
    lines = out.read_text().splitlines(keepends=True)
    cut.write_text("".join(lines[:-1]) + lines[-1][:10])
    assert main(["conversations", "import", str(cut), "--store", pg_url, "--as", "carol"]) == 2
    err = capsys.readouterr().err
    assert f"cut.jsonl, line {len(lines)}: not JSON" in err and err.count("\n") == 1
    store = open_store(pg_url)
    assert not store.exists("carol")
    store.close()
    assert main(["conversations", "export", "nobody", "--store", sqlite]) == 1
    assert "no conversation 'nobody'" in capsys.readouterr().err
