"""The judges experiment with two scripted judges."""

from __future__ import annotations

from pathlib import Path

import pytest

from copage.eval.datasets import load_dataset
from copage.eval.experiments.interface import BenchContext
from copage.eval.experiments.multi_judge import EXPERIMENT
from copage.llm import ChatRequest, ScriptedModel


def judge(strict: bool) -> ScriptedModel:
    """Scale5: by answer length (a strict judge gives one point less); binary: CORRECT."""
    def step(req: ChatRequest) -> str:
        if str(req.messages[0]["content"]).startswith("You label"):
            return '{"label": "CORRECT"}'
        answer = str(req.messages[-1]["content"]).rsplit(": ", 1)[-1]
        score = min(5, 1 + len(answer) % 5) - (1 if strict and len(answer) % 5 else 0)
        return f'{{"score": {max(1, score)}}}'
    m = ScriptedModel(name="strict" if strict else "lenient")
    for _ in range(200):
        m.then(step)
    return m


def test_judges_experiment_two_judges(tmp_path: Path) -> None:
    answers = iter(["peanuts", "a", "the sofa", "Tuesday!", "no", "$1,200", "March 14"] * 20)
    answerer = ScriptedModel(name="answerer")
    for _ in range(100):
        answerer.then(lambda req: next(answers) if req.messages[-1]["role"] != "tool" else "ok")
    ctx = BenchContext(datasets=[load_dataset("controlled")], out=tmp_path, model=answerer,
                       model_spec="scripted:answerer",
                       judges={"lenient": judge(False), "strict": judge(True)},
                       options={"cache": False, "judge_probes": 5, "bootstrap_b": 300,
                                "concurrency": 1})
    res = EXPERIMENT.run(ctx)
    means = res.tables["judges"]
    assert {r["method"] for r in means} == {"bookmark_recall", "full_context", "bm25"}
    assert {r["judge"] for r in means} == {"lenient", "strict", "average"}
    for method in ("bookmark_recall", "full_context", "bm25"):
        by = {r["judge"]: r["scale5_mean"] for r in means if r["method"] == method}
        assert by["strict"] <= by["lenient"]
        assert by["average"] == pytest.approx((by["strict"] + by["lenient"]) / 2)
    (pair,) = res.tables["agreement"]
    assert {pair["judge_a"], pair["judge_b"]} == {"lenient", "strict"}
    assert pair["n"] == 15 and pair["pearson"] > 0.5
    # the value, against the reference implementation (the ``krippendorff`` package)
    import json

    import krippendorff
    import numpy as np

    rows = [json.loads(x) for x in (tmp_path / "judges" / "probes.jsonl").read_text().splitlines()]
    data = np.array([[r["judges"][j]["scale5"]["score"] for r in rows] for j in ("lenient", "strict")],
                    dtype=float)
    want = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
    assert pair["krippendorff_alpha_ordinal"] == pytest.approx(want)
    assert {r["method_b"] for r in res.tables["significance"]} == {"full_context", "bm25"}


def test_judges_experiment_needs_a_model(tmp_path: Path) -> None:
    ctx = BenchContext(datasets=[load_dataset("controlled")], out=tmp_path)
    assert "needs --model" in EXPERIMENT.run(ctx).notes[0]
