"""The one JSONL log of every model-driven experiment: repair, de-duplication, real kill -9.

Two kill tests run real subprocesses: one kills a writer in the middle of writing a
(large) row and checks the torn line is repaired; one kills a ``paging`` model run
(slow scripted model) in the middle of a conversation, twice, with a torn line
left behind, and checks the resumed run ends with every probe exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from copage.eval.runner.log import JsonlLog, LogRepairWarning


def _row(probe: str, **kw: object) -> dict[str, object]:
    return {"dataset": "d", "conversation": "c", "probe": probe, "method": "bookmark_recall",
            "model": "m", "config": "x", **kw}


def test_a_half_written_last_line_is_cut_so_the_next_row_is_not_glued(tmp_path: Path) -> None:
    path = tmp_path / "probes.jsonl"
    JsonlLog(path).append(_row("q0"))
    with path.open("a") as f:
        f.write('{"dataset": "d", "conv')  # what a kill in the middle of a write leaves
    with pytest.warns(LogRepairWarning, match="partial"):
        log = JsonlLog(path)
    assert len(log) == 1 and log.repaired["partial"] == len('{"dataset": "d", "conv')
    log.append(_row("q1"))
    assert [json.loads(x)["probe"] for x in path.read_text().splitlines()] == ["q0", "q1"]
    assert len(JsonlLog(path)) == 2


def test_duplicates_count_once_and_the_last_row_wins(tmp_path: Path) -> None:
    path = tmp_path / "probes.jsonl"
    log = JsonlLog(path)
    for answer in ("a", "b"):
        for q in ("q0", "q1", "q2"):
            log.append(_row(q, answer=answer))
    log.append(_row("q0", answer="c"))
    assert len(log) == 3 and log.get(_row("q0"))["answer"] == "c"  # type: ignore[index]
    with path.open("a") as f:
        f.write("not json\n")
    with pytest.warns(LogRepairWarning, match="duplicates 4"):
        again = JsonlLog(path)
    assert len(again) == 3 and again.repaired["unreadable"] == 1
    assert {r["probe"]: r["answer"] for r in again} == {"q0": "c", "q1": "b", "q2": "b"}
    assert len(path.read_text().splitlines()) == 3  # compacted


def test_non_finite_numbers_are_written_as_null(tmp_path: Path) -> None:
    path = tmp_path / "probes.jsonl"
    JsonlLog(path).append(_row("q0", score=float("nan"), ratio=float("inf")))
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    row = json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c}"))
    assert row["score"] is None and row["ratio"] is None


WRITER = """
import sys
from copage.eval.runner.log import JsonlLog
log = JsonlLog(sys.argv[1])
start = len(log)
for i in range(start, start + 400):
    log.append({"dataset": "d", "conversation": "c", "probe": f"q{i:06d}", "method": "m",
                "model": "x", "config": "", "pad": "x" * int(sys.argv[2])})
"""
PAD = 4_000_000


def _line_length(tmp_path: Path) -> int:
    probe = tmp_path / "one.jsonl"
    JsonlLog(probe).append({"dataset": "d", "conversation": "c", "probe": "q000000", "method": "m",
                            "model": "x", "config": "", "pad": "x" * PAD})
    return probe.stat().st_size


def test_kill_9_in_the_middle_of_writing_a_row(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    length = _line_length(tmp_path)
    torn = 0
    for _ in range(12):
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(PAD)])
        deadline = time.monotonic() + 60
        killed = False
        while time.monotonic() < deadline and proc.poll() is None:
            size = path.stat().st_size if path.exists() else 0
            if size % length:  # a row is being written right now
                os.kill(proc.pid, signal.SIGKILL)
                killed = True
                break
        proc.wait()
        assert killed, "the writer finished or stalled before a kill"
        size = path.stat().st_size
        if size % length:
            torn += 1
            with pytest.warns(LogRepairWarning, match="partial"):
                log = JsonlLog(path)
        else:
            log = JsonlLog(path)
        assert len(log) == size // length  # every complete row, none of the torn one
        assert path.stat().st_size == len(log) * length  # the file now ends on a newline
        if torn >= 2:
            break
    assert torn >= 1, "no kill landed inside a write"
    rows = [json.loads(x) for x in path.read_bytes().splitlines()]
    assert [r["probe"] for r in rows] == [f"q{i:06d}" for i in range(len(rows))]


RUN = """
import json, sys, time
from pathlib import Path
from copage.eval.datasets import load_dataset
from copage.eval.experiments.interface import BenchContext, PagingSettings
from copage.eval.experiments.paging import EXPERIMENT
from copage.llm import ScriptedModel

def step(request):
    time.sleep(float(sys.argv[3]))
    return "peanuts" if request.tools else "CORRECT"

model = ScriptedModel(name="slow")
for _ in range(10000):
    model.then(step)
ctx = BenchContext([load_dataset(sys.argv[1])], Path(sys.argv[2]), model=model,
                   model_spec="scripted:slow",
                   paging=PagingSettings(boundary=("fixed_4",), policy=("lru",), k=(1,), order="file"),
                   options={"cache": False, "workers": 1})
result = EXPERIMENT.run(ctx)
print(json.dumps(result.tables["paging_model"]))
"""


def _tiny(path: Path, probes: int = 4) -> Path:
    facts = [("I am allergic to peanuts", "What am I allergic to?", "peanuts"),
             ("My budget is $1,200 for the laptop", "What is my laptop budget?", "$1,200"),
             ("Choir practice is every Tuesday", "When is choir practice?", "Tuesday"),
             ("Call Dr. Alvarez at 555-0199", "Who should I call?", "Dr. Alvarez")]
    samples = []
    for c in range(2):
        items = []
        for i in range(16):
            text = facts[i // 2][0] if i % 2 == 0 and i // 2 < probes else f"Filler {c}-{i} about tomatoes"
            items.append({"speaker": "User" if i % 2 == 0 else "Assistant",
                          "dia_id": f"D1:{i + 1}", "text": text})
        qa = [{"question": q, "answer": a, "evidence": [f"D1:{2 * k + 1}"], "category": 4}
              for k, (_, q, a) in enumerate(facts[:probes])]
        samples.append({"sample_id": f"tiny-{c}", "qa": qa, "conversation": {
            "speaker_a": "User", "speaker_b": "Assistant", "session_1": items}})
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


def _lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _run_until(data: Path, out: Path, lines: int | None, delay: float) -> Any:
    """Run the paging model run; kill -9 it once the log has ``lines`` lines (None: finish)."""
    log = out / "paging" / "model_probes.jsonl"
    proc = subprocess.Popen([sys.executable, "-c", RUN, str(data), str(out), str(delay)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if lines is None:
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode == 0, stderr
        return json.loads(stdout.strip().splitlines()[-1])
    deadline = time.monotonic() + 120
    while _lines(log) < lines:
        assert proc.poll() is None, f"finished before {lines} lines: {proc.communicate()[1]}"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    return None


def test_paging_model_run_survives_kill_9_in_the_middle_of_a_conversation(tmp_path: Path) -> None:
    """Killed twice inside conversation 1 (and a torn line left), the run still ends with all
    8 probes once: a conversation is done only when each of its probes has a row."""
    data = _tiny(tmp_path / "tiny.json")
    out = tmp_path / "run"
    log = out / "paging" / "model_probes.jsonl"
    _run_until(data, out, 2, 0.15)  # two of conversation 1's four probes logged
    with log.open("ab") as f:
        f.write(b'{"answer": "pean')  # a row cut by the kill
    _run_until(data, out, 5, 0.15)  # conversation 1 asked again, killed after three more rows
    rows = _run_until(data, out, None, 0.0)
    assert len(rows) == 1 and rows[0]["probes"] == 8, rows
    with pytest.warns(LogRepairWarning):  # the duplicates of the reruns (and the torn line)
        final = JsonlLog(log, ("conversation", "probe"))
    assert sorted((r["conversation"], r["probe"]) for r in final) == sorted(
        (f"tiny-{c}", f"tiny-{c}/q{k}") for c in range(2) for k in range(4))
