"""The NLL fault-detection experiment with a scripted model (fixed logprobs)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from copage.eval.nll import (
    CASES,
    FACT_TYPES,
    NllError,
    reply_stats,
    rolling_mean,
    run_nll,
)
from copage.llm import ChatRequest, ChatResponse, ScriptedModel
from copage.llm.testing import _copage_forbid_network_models  # noqa: F401  (autouse fixture)

GIST_MARK = "Summary of an earlier part"

# Per case: (logprobs A, logprobs B). Expected deltas worked out by hand below.
LOGPROBS: dict[str, tuple[list[float], list[float]]] = {
    "dinner": ([-0.5] * 40, [-0.5] * 8 + [-2.0] * 32),
    "report": ([-1.0] * 10, [-0.6] * 10),
    "toothache": ([-1.0] * 10, [-1.0] * 10),
    "moving": ([-1.0] * 10, [-1.0] * 10),
    "control": ([-1.0] * 5, [-1.5] * 5),
}


def answer(request: ChatRequest) -> ChatResponse:
    text = json.dumps([m["content"] for m in request.messages])
    question = str(request.messages[-1]["content"])
    case = next(c for c in CASES if c.question == question)
    gist = GIST_MARK in text
    lp = LOGPROBS[case.id][1 if gist else 0]
    return ChatResponse(text=f"{case.id} {'B' if gist else 'A'}", logprobs=lp, model="fixed")


def scripted() -> ScriptedModel:
    model = ScriptedModel(name="fixed")
    for _ in range(10):
        model.then(answer)
    return model


def test_rolling_mean_by_hand() -> None:
    assert rolling_mean([1.0, 2.0, 3.0, 4.0, 5.0], 2) == [1.5, 2.5, 3.5, 4.5]
    assert rolling_mean([1.0, 2.0, 3.0, 4.0, 5.0], 4) == [2.5, 3.5]
    assert rolling_mean([1.0, 2.0, 3.0, 4.0, 5.0], 5) == [3.0]
    assert rolling_mean([1.0, 2.0, 3.0], 32) == [2.0]  # shorter than w: one window


@pytest.mark.parametrize("bad", [0, -1, True, 2.5])
def test_rolling_mean_bad_window(bad: Any) -> None:
    with pytest.raises(ValueError, match="window"):
        rolling_mean([1.0], bad)


def test_rolling_mean_empty() -> None:
    with pytest.raises(ValueError, match="empty reply"):
        rolling_mean([], 3)


def test_reply_stats_by_hand() -> None:
    s = reply_stats("x", [-1.0, -2.0, -3.0], 2)
    assert s.nll == (1.0, 2.0, 3.0)
    assert s.rolling == (1.5, 2.5)
    assert s.mean == 2.0 and s.max_window == 2.5 and s.tokens == 3
    with pytest.raises(ValueError, match="non-finite"):
        reply_stats("x", [float("-inf")], 2)


def test_run_nll_deltas_summary_and_files(tmp_path: Path) -> None:
    model = scripted()
    result = run_nll(model, tmp_path / "out", 32)
    by = {c.case: c for c in result.cases}
    # dinner: A mean 0.5, one window value 0.5 ... B mean (8*0.5 + 32*2)/40 = 1.7,
    # B windows: start 0 -> (8*0.5 + 24*2)/32 = 1.625, start 8 -> 2.0 (the max).
    assert by["dinner"].full.mean == pytest.approx(0.5)
    assert by["dinner"].gist.mean == pytest.approx(1.7)
    assert by["dinner"].gist.rolling[0] == pytest.approx(1.625)
    assert len(by["dinner"].gist.rolling) == 40 - 32 + 1
    assert by["dinner"].delta_mean == pytest.approx(1.2)
    assert by["dinner"].delta_max == pytest.approx(1.5)
    assert by["report"].delta_mean == pytest.approx(-0.4)
    assert by["report"].delta_max == pytest.approx(-0.4)
    assert by["control"].delta_mean == pytest.approx(0.5)
    s = result.summary
    assert s.experimental_delta_mean == pytest.approx((1.2 - 0.4) / 4)
    assert s.experimental_delta_max == pytest.approx((1.5 - 0.4) / 4)
    assert s.control_delta_mean == pytest.approx(0.5)
    assert s.control_delta_max == pytest.approx(0.5)
    assert (s.experimental_cases, s.gist_lower_cases) == (4, 1)
    assert result.model == "scripted:fixed"

    files = result.files
    assert set(files) == {"markdown", "csv", "json", "plot"}
    md = files["markdown"].read_text()
    assert "produced by model scripted:fixed" in md and "| dinner |" in md and "+1.200" in md
    rows = list(csv.DictReader(files["csv"].open()))
    assert [r["case"] for r in rows] == ["dinner", "report", "toothache", "moving", "control"]
    assert float(rows[0]["delta_max_window"]) == pytest.approx(1.5)
    data = json.loads(files["json"].read_text())
    assert data["model"] == "scripted:fixed" and data["window"] == 32
    assert data["cases"][0]["gist"]["nll"][-1] == pytest.approx(2.0)
    assert files["plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_requests_are_greedy_with_logprobs_and_gist_hides_the_fact(tmp_path: Path) -> None:
    model = scripted()
    run_nll(model, tmp_path, 32, max_tokens=40, plot=False)
    assert len(model.requests) == 10
    for r in model.requests:
        assert r.temperature == 0.0 and r.logprobs is True and r.max_tokens == 40
    texts = [json.dumps([m["content"] for m in r.messages]) for r in model.requests]
    full, gist = texts[0], texts[1]  # dinner A, dinner B (concurrency 1 keeps the order)
    assert "peanut" in full and "peanut" not in gist
    assert "$180" in full and "$180" not in gist
    assert GIST_MARK in gist and GIST_MARK not in full


def test_missing_logprobs_is_a_clear_error(tmp_path: Path) -> None:
    model = ScriptedModel(name="nolp")
    for _ in range(10):
        model.reply("an answer")  # no logprobs
    with pytest.raises(NllError, match="returned no logprobs"):
        run_nll(model, tmp_path, 32)


def test_empty_logprobs_is_a_clear_error(tmp_path: Path) -> None:
    model = ScriptedModel(name="empty")
    for _ in range(10):
        model.reply("", logprobs=[])
    with pytest.raises(NllError, match="empty reply"):
        run_nll(model, tmp_path, 32)


def test_anthropic_refused_before_any_call(tmp_path: Path) -> None:
    class Fake:
        spec = "anthropic:claude-haiku-4-5"
        name = "claude-haiku-4-5"
        calls = 0

        async def complete(self, request: ChatRequest) -> ChatResponse:
            Fake.calls += 1
            return ChatResponse(text="x")

    with pytest.raises(NllError, match="no token logprobs"):
        run_nll(Fake(), tmp_path, 32)
    assert Fake.calls == 0


def test_cases_cover_the_seven_fact_types() -> None:
    exp = [c for c in CASES if not c.control]
    ctl = [c for c in CASES if c.control]
    assert len(exp) == 4 and len(ctl) == 1
    assert {t for c in exp for t in c.fact_types} == set(FACT_TYPES)
    for c in exp:
        critical = [e for e in c.exchanges if e.gist]
        assert len(critical) >= 3 and len(c.fact_types) >= 3
        for e in critical:
            assert e.gist is not None and len(e.gist) < len(e.user)
    assert ctl[0].fact_types == () and any(e.gist for e in ctl[0].exchanges)
    with pytest.raises(ValueError, match="condition"):
        CASES[0].messages("C")


def test_cli_and_experiment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from copage.cli.main import main
    from copage.eval.experiments.interface import BenchContext
    from copage.eval.nll.experiment import EXPERIMENT

    # A scripted spec has an empty script: the model error is reported, exit 1.
    assert main(["nll", "--model", "scripted:x", "--out", str(tmp_path), "--no-cache"]) == 1
    assert "model error" in capsys.readouterr().err
    assert main(["nll", "--model", "scripted:x", "--window", "0", "--no-cache"]) == 2

    assert EXPERIMENT.name == "nll" and EXPERIMENT.needs_model is True
    res = EXPERIMENT.run(BenchContext(datasets=(), out=tmp_path, model=scripted()))
    assert len(res.tables["nll"]) == 5
    assert res.tables["nll_summary"][0]["gist_lower_cases"] == 1
    assert res.notes == ["produced by model scripted:fixed"]
    assert res.figures and res.figures[0].exists()
