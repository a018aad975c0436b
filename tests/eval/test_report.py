"""The report: summary.json, tables, figures, self-contained HTML; progress bars."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from copage.eval.experiments.interface import ExperimentResult
from copage.eval.progress import Progress, format_seconds
from copage.eval.report import build_summary, write_report
from copage.eval.report.paper import pivot
from copage.eval.report.plots import NO_FIGURES
from copage.eval.report.tables import markdown

POLICIES = [{"dataset": d, "model": None, "policy": p, "group": "paper", "hit_rate": h}
            for d, hs in (("a", (0.5, 0.6, 0.7, 0.9)), ("b", (0.2, 0.3, 0.4, 0.5)))
            for p, h in zip(("fifo", "lru", "lfu", "belady"), hs, strict=True)]


def test_write_report_is_self_contained_and_complete(tmp_path: Path) -> None:
    main = ExperimentResult("main", {"methods": [
        {"dataset": "a", "model": None, "method": "bm25", "probes": 20,
         "evidence_coverage": 0.5, "prompt_tokens_mean": 900.0}]})
    paging = ExperimentResult("paging", {
        "paging": [{"dataset": "a", "boundary": "fixed_5", "policy": "lru", "hit_rate": 0.6}],
        "boundaries": [{"dataset": "a", "model": None, "boundary": "fixed_5", "hit_rate": 0.6}],
        "policies": POLICIES,
        "topology": [{"dataset": "a", "revisit_rate": 0.3, "lru_minus_fifo": 0.1}]}, notes=["n1"])
    paths = write_report(tmp_path, [main, paging], {"seed": 0}, ["intro line"])
    summary = json.loads(paths["summary"].read_text())
    assert summary["methods"][0]["method"] == "bm25" and summary["paging"][0]["policy"] == "lru"
    html = paths["html"].read_text()
    assert not re.search(r"""(src|href)\s*=\s*['"]?(https?:|//)""", html)
    assert html.count("data:image/png;base64,") == 4  # methods, boundary, policies, topology
    assert "intro line" in html and "n1" in html
    assert (tmp_path / "tables" / "table8_policies.csv").read_text().splitlines()[0].startswith("policy")
    for png in (tmp_path / "figures").glob("*.png"):
        assert png.read_bytes()[:4] == b"\x89PNG"


def test_pivot_and_markdown_layout() -> None:
    rows = pivot(POLICIES, "policy", ["hit_rate"])
    assert rows[3] == {"policy": "belady", "group": "paper", "a hit_rate": 0.9, "b hit_rate": 0.5}
    md = markdown(rows[:1])
    assert md.splitlines()[0] == "| policy | group | a hit_rate | b hit_rate |"
    assert "0.500" in md and markdown([]) == "_no rows_\n"


def test_summary_without_main_or_paging_has_empty_lists() -> None:
    s = build_summary([ExperimentResult("formats", {"formats": []})], {})
    assert s["methods"] == [] and s["paging"] == [] and "formats" in s["experiments"]


def test_progress_line_eta_calls_and_cost() -> None:
    now = [0.0]
    buf = io.StringIO()
    prog = Progress(stream=buf, clock=lambda: now[0])
    task = prog.start("grid", 4)
    now[0] = 10.0
    prog.advance(task, calls=3, cache_hits=1, cost=0.002)
    line = prog.line(task)
    assert "1/4" in line and "25%" in line and "ETA 0:30" in line
    assert "calls 3 cache 1" in line and "$0.0020" in line
    prog.finish(task)
    assert buf.getvalue().count("\n") >= 2
    assert format_seconds(3700) == "1:01:40" and format_seconds(75.2) == "1:15"


def test_report_without_matplotlib_says_so_instead_of_crashing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain ``pip install copage`` has no matplotlib: the run still writes its report."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "matplotlib" else real(name, *a))
    main = ExperimentResult("main", {"methods": [
        {"dataset": "a", "model": None, "method": "bm25", "probes": 20,
         "evidence_coverage": 0.5, "prompt_tokens_mean": 900.0}]})
    paths = write_report(tmp_path, [main], {"seed": 0})
    html = paths["html"].read_text()
    assert NO_FIGURES in paths["markdown"].read_text() and "data:image/png" not in html
    assert "Figures skipped: matplotlib is not installed" in html
    assert not list(tmp_path.glob("figures/*.png"))
    assert "bm25" in paths["markdown"].read_text()
