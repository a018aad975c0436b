"""``copage bench``: the CLI end to end on a tiny LoCoMo-format file (LLM-free and scripted model)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from copage.cli.main import main
from copage.core.types import ToolCall
from copage.eval.datasets import load_dataset
from copage.eval.experiments.interface import BenchContext, PagingSettings
from copage.eval.simulation import Cell, simulate
from copage.llm import ScriptedModel
from copage.llm.model_types import ChatRequest, ChatResponse, Usage

FACTS = ["I am allergic to peanuts", "My budget is $1,200 for the laptop",
         "Choir practice is every Tuesday", "Call Dr. Alvarez at 555-0199"]
FILLER = ["Tell me about gardening tomatoes", "Tomatoes need sun and water daily",
          "What about pruning roses", "Prune roses in late winter"]


def tiny_locomo(path: Path, convs: int = 2, turns: int = 24) -> Path:
    """A LoCoMo-format file: facts early, filler after, one probe per fact."""
    samples = []
    for c in range(convs):
        items = []
        for i in range(turns):
            text = FACTS[i // 2] if i % 2 == 0 and i // 2 < len(FACTS) else FILLER[i % 4] + f" {c}-{i}"
            items.append({"speaker": "User" if i % 2 == 0 else "Assistant", "dia_id": f"D1:{i + 1}",
                          "text": text})
        qa = [{"question": q, "answer": a, "evidence": [f"D1:{2 * k + 1}"], "category": 4}
              for k, (q, a) in enumerate([("What am I allergic to?", "peanuts"),
                                          ("What is my laptop budget?", "$1,200"),
                                          ("When is choir practice?", "Tuesday"),
                                          ("Who should I call?", "Dr. Alvarez")])]
        samples.append({"sample_id": f"tiny-{c}", "qa": qa, "conversation": {
            "speaker_a": "User", "speaker_b": "Assistant", "session_1": items}})
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


SMALL = ["--boundary", "fixed_4,fixed_8", "--policy", "fifo,lru,belady,lrfu", "--quiet",
         "--workers", "1"]


@pytest.fixture()
def data(tmp_path: Path) -> Path:
    return tiny_locomo(tmp_path / "tiny.json")


def test_default_run_writes_summary_report_tables_and_figures(tmp_path: Path, data: Path) -> None:
    out = tmp_path / "run"
    assert main(["bench", "--dataset", str(data), "--out", str(out), *SMALL]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["methods"], "main (LLM-free) rows expected"
    for row in summary["methods"]:
        assert {"dataset", "model", "method", "probes", "evidence_coverage",
                "prompt_tokens_mean"} <= set(row)
        assert row["model"] is None
    expected = simulate(load_dataset(str(data)), [Cell("fixed_4", "lru", 5, "heuristic")])[0].keys()
    assert len(summary["paging"]) == 2 * 4
    assert all(set(expected) <= set(r) for r in summary["paging"])
    html = (out / "report.html").read_text()
    assert not re.search(r"""(src|href)\s*=\s*['"]?https?:""", html)
    assert "data:image/png;base64," in html
    assert (out / "tables" / "table7_boundaries.md").read_text().startswith("|")
    assert (out / "tables" / "paging_paging.csv").exists()
    pngs = {p.name for p in (out / "figures").glob("*.png")}
    assert {"boundary.png", "policies.png", "topology.png", "methods.png"} <= pngs
    assert "nll" not in summary["experiments"]  # it needs --model: not in the LLM-free default


def test_same_out_resumes_without_running_again(tmp_path: Path, data: Path) -> None:
    out = tmp_path / "run"
    args = ["bench", "paging,formats", "--dataset", str(data), "--out", str(out), *SMALL]
    assert main(args) == 0
    result = out / "paging" / "result.json"
    before = (result.stat().st_mtime_ns, result.read_text())
    assert main(args) == 0
    assert (result.stat().st_mtime_ns, result.read_text()) == before
    notes = json.loads((out / "summary.json").read_text())["experiments"]["paging"]["notes"]
    assert any("resumed" in n for n in notes)
    assert main([*args[:-len(SMALL)], *SMALL, "--seed", "3"]) == 0  # other settings: rerun
    assert result.read_text() != before[1]


def test_unknown_names_list_the_valid_ones(capsys: pytest.CaptureFixture[str], data: Path) -> None:
    assert main(["bench", "nope", "--dataset", str(data)]) == 2
    err = capsys.readouterr().err
    assert "paging" in err and "selection" in err and "nope" in err
    assert main(["bench", "--dataset", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert "synthetic" in err and "controlled" in err and "ablation-deepseek" in err
    assert main(["bench", "--policy", "nope", "--dataset", str(data)]) == 2
    assert "lru" in capsys.readouterr().err


def _step(request: ChatRequest) -> ChatResponse | str:
    """Test double: recall p1 once when tools are offered, then answer; judge says CORRECT."""
    if not request.tools:
        return "CORRECT"
    if any(m.get("role") == "tool" for m in request.messages):
        return "peanuts"
    return ChatResponse("", (ToolCall("c1", "recall", json.dumps({"page": "p1"})),),
                        "tool_calls", Usage(10, 1))


def scripted(n: int = 400) -> ScriptedModel:
    model = ScriptedModel(name="test-double")
    for _ in range(n):
        model.then(_step)
    return model


def _ctx(tmp_path: Path, data: Path, model: Any, **paging: Any) -> BenchContext:
    return BenchContext([load_dataset(str(data))], tmp_path / "run", model=model,
                        model_spec="scripted:test-double", paging=PagingSettings(**paging),
                        options={"cache": False, "workers": 1})


def test_paging_and_formats_model_paths_run_end_to_end(tmp_path: Path, data: Path) -> None:
    from copage.eval.experiments.bookmark_formats import EXPERIMENT as FORMATS
    from copage.eval.experiments.paging import EXPERIMENT as PAGING

    model = scripted()
    ctx = _ctx(tmp_path, data, model, boundary=("fixed_4",), policy=("lru", "belady"), k=(2,),
               order="file")
    res = PAGING.run(ctx)
    rows = res.tables["paging_model"]
    assert [r["policy"] for r in rows] == ["lru", "belady"]  # belady runs with the model too
    row = rows[0]
    assert row["probes"] == 8 and row["model"] == "scripted:test-double"
    # By hand, per conversation (fixed_4: p1 = allergy + budget, p2 = choir + doctor; p5, p6
    # resident at the end; the script recalls p1 every time): allergy needs p1 (evicted:
    # recall, right page, p1 now resident); budget needs p1 (resident: no recall needed);
    # choir and doctor need p2 (evicted: recall p1, wrong page). 3 need a recall, 1 right.
    assert row["needs_recall"] == 6 and row["trigger_rate"] == 1.0
    assert row["right_page_rate"] == pytest.approx(1 / 3) and row["accuracy"] == 1.0
    assert row["exact"] == pytest.approx(2 / 8)  # "peanuts" matches the two allergy probes only
    used = len(model.requests)
    PAGING.run(ctx)  # resumes from model_probes.jsonl: no new requests
    assert len(model.requests) == used
    ctx.seed = 7  # another seed (probe order, random keywords): asked again, not resumed
    again = PAGING.run(ctx).tables["paging_model"]
    assert len(model.requests) == 2 * used and again[0]["probes"] == 8
    ctx.seed = 0
    fres = FORMATS.run(_ctx(tmp_path, data, model, policy=("lru",), k=(2,), boundary=("fixed_4",)))
    fm = [r for r in fres.tables["formats"] if r.get("model")]
    assert {r["format"] for r in fm} == {"compact", "minimal", "snippet", "structured", "gist"}
    assert all(r["trigger_rate"] == 1.0 and r["bookmark_tokens_mean"] for r in fm)
