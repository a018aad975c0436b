"""``copage simulate`` from the command line: JSON only on stdout, friendly errors."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from copage.cli.main import main

SAMPLE = Path(__file__).resolve().parents[2].parent / "shared/data/locomo/locomo-sample.json"


def test_json_grid_on_builtin_dataset(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["simulate", "controlled", "--boundary", "fixed_5,segment", "--policy", "lru,belady",
                 "-k", "2,3", "--json"])
    assert code == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 8
    assert {(r["boundary"], r["policy"], r["k"]) for r in rows} == {
        (b, p, k) for b in ("fixed_5", "segment") for p in ("lru", "belady") for k in (2, 3)}
    assert all(r["dataset"] == "controlled" and r["probes"] == 22 for r in rows)


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "controlled", "--boundary", "fixed_5", "--policy", "fifo"]) == 0
    out = capsys.readouterr().out
    assert "hit_rate" in out and "fixed_5" in out and "tokenizer o200k_base" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--policy", "nope"], "unknown policy 'nope'; valid policies: adaptive, belady"),
        (["--boundary", "fixed_0"], "fixed_0"),
        (["--boundary", "zigzag"], "fixed_N, tokens_N"),
        (["--keywords", "nope"], "discriminative"),
        (["--format", "nope"], "minimal"),
        (["-k", "0"], "positive integers"),
        (["no-such-file.json"], "presets: ablation"),
    ],
)
def test_bad_names_list_valid_ones(args: list[str], message: str,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "controlled", *args] if args[0].startswith("-") else ["simulate", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_non_utf8_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"\xff\xfe[]")
    assert main(["simulate", str(bad)]) == 2
    assert "bad.json" in capsys.readouterr().err


@pytest.mark.skipif(not SAMPLE.exists(), reason="LoCoMo sample not present")
def test_console_script_on_locomo_prints_only_json() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "copage.cli.main", "simulate", str(SAMPLE), "--boundary", "fixed_10",
         "--policy", "lru,fifo", "--keywords", "heuristic,discriminative", "--json"],
        capture_output=True, text=True, check=True,
    )
    rows = json.loads(proc.stdout)
    assert len(rows) == 4 and all(r["probes"] == 302 for r in rows)
    assert rows[0]["probes_skipped"] == {"empty_evidence": 2}
    by_kw = {r["keywords"]: r["routing_top1"] for r in rows if r["policy"] == "lru"}
    assert by_kw["discriminative"] > by_kw["heuristic"]


@pytest.mark.parametrize(
    "args, message",
    [(["--policy", ","], "--policy needs at least one value"),
     (["-k", ""], "-k needs at least one value"),
     (["--boundary", " , "], "--boundary needs at least one value"),
     (["--keywords", ""], "--keywords needs at least one value")],
)
def test_empty_lists_are_errors_not_empty_grids(args: list[str], message: str,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "controlled", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_deeply_nested_json_is_a_clear_error(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    assert main(["simulate", str(deep), "--boundary", "fixed_5", "--policy", "lru"]) == 2
    err = capsys.readouterr().err
    assert "nested too deeply" in err and "Traceback" not in err


def test_repairs_are_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    turns = [{"speaker": "A" if i % 2 else "B", "dia_id": f"D1:{i}", "text": f"topic {i} words"}
             for i in range(1, 13)]
    turns.append(dict(turns[0]))  # a duplicate id: repaired
    qa = [{"question": "what topic", "answer": "x", "evidence": ["D1:2; D1:9"], "category": 1}]
    data = [{"sample_id": "s", "conversation": {"speaker_a": "A", "speaker_b": "B",
                                                "session_1": turns}, "qa": qa}]
    path = tmp_path / "repairs.json"
    path.write_text(json.dumps(data))
    base = ["simulate", str(path), "--boundary", "fixed_2", "--policy", "lru", "-k", "1"]
    assert main(base) == 0
    assert "repaired duplicate_turn_id 1, evidence_split 1" in capsys.readouterr().out
    assert main([*base, "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["repairs"] == {"duplicate_turn_id": 1, "evidence_split": 1}


def test_segment_interleaved_pages_the_open_buffer() -> None:
    """Issue 11: with the open page bounded by max_len, the ablation preset no longer hits
    1.000 for every policy under segment / interleaved / k=3."""
    from copage.eval.datasets import load_dataset
    from copage.eval.simulation import Cell, simulate

    ds = load_dataset("ablation", seed=0)
    rows = simulate(ds, [Cell("segment", p, 3, "heuristic", placement="interleaved")
                         for p in ("lru", "fifo")])
    assert all(r["hit_rate"] < 1.0 and r["faults"] > 0 for r in rows)
