"""Crash test: SIGKILL a writer at random moments; every acknowledged turn must survive."""

from __future__ import annotations

import os
import random
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from crash_child import turn_text
from store_helpers import PG_URL

from copage.stores import open_store
from copage.stores.sqlite import SQLiteStore

CHILD = Path(__file__).with_name("crash_child.py")


def _run_round(url: str, rng: random.Random) -> dict[int, int]:
    """Start the child, let it append for a random time, SIGKILL it; return its acks."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.Popen(
        [sys.executable, str(CHILD), url, "conv"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert proc.stdout is not None
    try:
        ready = proc.stdout.readline()
        assert ready.startswith("ready"), f"child failed: {ready!r} {proc.stderr.read()!r}"
        lines: list[str] = []
        deadline = time.monotonic() + rng.uniform(0.0, 0.25)
        while (left := deadline - time.monotonic()) > 0:
            if select.select([proc.stdout], [], [], left)[0]:
                lines.append(proc.stdout.readline())
        proc.send_signal(signal.SIGKILL)
        lines.extend(proc.stdout.readlines())  # acks written before the kill are acknowledged
    finally:
        proc.kill()
        proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()
    acks: dict[int, int] = {}
    for line in lines:
        if line.endswith("\n"):  # a line cut by the kill was not acknowledged
            _, seq, version = line.split()
            acks[int(seq)] = int(version)
    return acks


def _crash_rounds(url: str, rounds: int, seed: int, check: Callable[[], None]) -> None:
    rng = random.Random(seed)
    acked: dict[int, int] = {}
    for _ in range(rounds):
        acked.update(_run_round(url, rng))
    assert acked, "the child never acknowledged a commit"
    store = open_store(url)
    try:
        conv = store.load("conv")
        n = len(conv.turns)
        assert max(acked) < n, "an acknowledged turn is missing"
        assert [t.text for t in conv.turns] == [turn_text(s) for s in range(n)]
        assert [t.id for t in conv.turns] == [f"t{s}" for s in range(n)]
        assert all(version == seq + 1 for seq, version in acked.items())
        assert conv.version == n and conv.state["n"] == n
        assert [e.seq for e in store.events("conv")] == list(range(n))
    finally:
        store.close()
    check()


def _sqlite_crash(tmp_path: Path, rounds: int, seed: int) -> None:
    path = tmp_path / "crash.db"

    def integrity() -> None:
        store = SQLiteStore(path)
        try:
            assert store.integrity_check() == "ok"
        finally:
            store.close()

    _crash_rounds(f"sqlite://{path}", rounds=rounds, seed=seed, check=integrity)


def test_sqlite_survives_sigkill_quick(tmp_path: Path) -> None:
    _sqlite_crash(tmp_path, rounds=5, seed=11)


@pytest.mark.slow
def test_sqlite_survives_sigkill_30_rounds(tmp_path: Path) -> None:
    _sqlite_crash(tmp_path, rounds=30, seed=20240611)


@pytest.mark.postgres
def test_postgres_survives_sigkill(pg_schema: Callable[[], str]) -> None:
    _crash_rounds(f"{PG_URL}?schema={pg_schema()}", rounds=2, seed=7, check=lambda: None)
