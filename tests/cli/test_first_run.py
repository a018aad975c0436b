"""A new user's first mistakes: each is one line on stderr naming the fix and a non-zero
exit, never a traceback (the commands run as processes, as a user runs them)."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import copage

SRC = Path(copage.__file__).resolve().parents[1]  # the copage under test


def _run(*argv: str, env: dict[str, str] | None = None, user: int | None = None,
         ) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    full.update({"PYTHONPATH": str(SRC), **(env or {})})
    full.pop("COPAGE_STORE", None)
    cmd = [sys.executable, "-m", "copage.cli.main", *argv]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    return subprocess.run(cmd, check=False, env=full, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL, cwd="/")


def _one_line(done: subprocess.CompletedProcess[str], *words: str) -> str:
    assert done.returncode not in (0, None), done
    err = done.stderr.strip()
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    for w in words:
        assert w in err, err
    return err


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


UP = ["--upstream", "http://127.0.0.1:9/v1"]


def test_serve_with_an_unknown_store_scheme() -> None:
    _one_line(_run("serve", "--store", "mysql://x", *UP, "--port", str(_port())),
              "unknown store scheme 'mysql'", "postgresql", "sqlite")


def test_serve_with_an_unreachable_postgresql() -> None:
    _one_line(_run("serve", "--store", f"postgresql://nobody@127.0.0.1:{_port()}/x", *UP,
                   "--port", str(_port())), "cannot connect to PostgreSQL", "running")


def test_serve_with_a_model_and_no_key() -> None:
    _one_line(_run("serve", "--model", "openai:gpt-4o-mini", "--store", "memory://",
                   "--port", str(_port())), "no API key", "OPENAI_API_KEY")


@pytest.mark.parametrize("command", [["conversations", "list"],
                                     ["serve", *UP, "--port", "0"],
                                     ["mcp"]])
def test_a_store_path_in_a_missing_directory(tmp_path: Path, command: list[str]) -> None:
    """One rule: a typed path whose directory does not exist is an error, created by none."""
    if command[0] == "mcp":
        pytest.importorskip("mcp")
    if command[0] == "serve":
        command = [*command[:-1], str(_port())]
    db = tmp_path / "typo" / "none.db"
    _one_line(_run(*command, "--store", str(db)), "does not exist", "create it first")
    assert not db.parent.exists()


def test_the_default_store_is_created(tmp_path: Path) -> None:
    done = _run("conversations", "list", env={"XDG_DATA_HOME": str(tmp_path / "xdg")})
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "xdg" / "copage" / "copage.db").is_file()


@pytest.fixture
def read_only_dir() -> Iterator[Path]:
    """A directory holding a valid copage database, read-only to whoever runs the
    command (as root, which writes anywhere, the command runs as ``nobody``)."""
    from copage.stores import open_store

    base = Path(tempfile.mkdtemp(prefix="copage-ro-"))
    base.chmod(0o755)
    open_store(f"sqlite://{base / 'x.db'}").close()
    (base / "x.db").chmod(0o666)
    for extra in ("x.db-wal", "x.db-shm"):
        (base / extra).unlink(missing_ok=True)
    base.chmod(0o555)
    try:
        yield base
    finally:
        base.chmod(0o755)
        shutil.rmtree(base)


def test_a_database_in_a_read_only_directory(read_only_dir: Path) -> None:
    """Before: "not a usable SQLite database" with a traceback."""
    user = None
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv: a directory cannot be read-only")
        user = 65534
    db = read_only_dir / "x.db"
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone() == ("ok",)
    for command in (["conversations", "list"], ["serve", *UP, "--port", str(_port())]):
        err = _one_line(_run(*command, "--store", str(db), user=user), "read-only",
                        "writable")
        assert "not a usable" not in err
