"""No acknowledged turn is ever lost: SIGKILL a writer at random moments."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from copage import PagedMemory
from copage.stores.sqlite import SQLiteStore

WRITER = Path(__file__).with_name("memory_writer.py")


def _acked(proc: subprocess.Popen[str], deadline: float) -> list[int]:
    acks: list[int] = []
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        if line.startswith("ack "):
            acks.append(int(line.split()[1]))
    return acks


@pytest.mark.slow
def test_sigkill_never_loses_an_acknowledged_turn(tmp_path: Path) -> None:
    db = tmp_path / "kill.db"
    rng = random.Random(7)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    acknowledged: list[int] = []
    next_turn = 0
    for _round in range(12):
        proc = subprocess.Popen(
            [sys.executable, str(WRITER), str(db), str(next_turn), "400"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        # let it start (imports) and write for a random while, then kill -9
        assert proc.stdout is not None
        first = proc.stdout.readline()
        if first.startswith("ack "):
            acknowledged.append(int(first.split()[1]))
        time.sleep(rng.uniform(0.0, 0.25))
        os.kill(proc.pid, signal.SIGKILL)
        acknowledged.extend(_acked(proc, time.monotonic() + 5))
        proc.wait()
        mem = PagedMemory(store=SQLiteStore(db), conversation_id="kill")
        stored = [int(t.text.split()[2]) for t in mem.turns]
        # every acknowledged turn is there, in order, and nothing is torn
        assert set(acknowledged) <= set(stored)
        assert stored == list(range(len(stored)))
        covered = [i for p in mem.pages for i in range(len(p.turns))]
        assert len(covered) + len(mem.pager.open_turns) == len(stored)
        assert len(mem.resident) <= 2
        mem.store.close()
        next_turn = len(stored)
    assert len(acknowledged) > 20
    with sqlite3.connect(db) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
