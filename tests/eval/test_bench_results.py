"""Results that were wrong or stale: each test here failed on the code before the fix.

Abstention wording, resume keys (settings, templates, judges added later), the nll
figure in the report, ``--model scripted:NAME``, progress of model runs, the
methods figure, strict JSON, and exact match with the generator's answer forms.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest

from copage.cli.main import main
from copage.core.types import ToolCall
from copage.eval.datasets import load_dataset
from copage.eval.datasets.probes import Probe
from copage.eval.experiments.interface import BenchContext, ExperimentResult, PagingSettings
from copage.eval.experiments.methods_table import EXPERIMENT as MAIN
from copage.eval.methods import INSTRUCTION
from copage.eval.progress import Progress
from copage.eval.report import write_report
from copage.eval.runner.judging import static_scores
from copage.eval.scoring import locomo_f1
from copage.llm import ChatRequest, ChatResponse, ScriptedModel

SPEC = "scripted:answerer"
METHODS = ["full_context", "bookmark_recall"]


def respond(request: ChatRequest) -> ChatResponse | str:
    system = str(request.messages[0].get("content", ""))
    if system.startswith("You grade"):
        return '{"score": 4}'
    if system.startswith("You label"):
        return '{"label": "CORRECT"}'
    if request.tools and request.messages[-1]["role"] != "tool" and "Evicted pages (bookmarks):" in system:
        return ChatResponse("", (ToolCall("c1", "recall", '{"page": "p1"}'),), "tool_calls")
    return "Not mentioned in the conversation"


def scripted(n: int = 2000, name: str = "answerer") -> ScriptedModel:
    model = ScriptedModel(name=name)
    for _ in range(n):
        model.then(respond)
    return model


def ctx_for(out: Path, model: Any, **kw: Any) -> BenchContext:
    options = {"cache": False, "concurrency": 1, "bootstrap_b": 200, "budget": 450, "budgets": ()}
    options.update(kw.pop("options", {}))
    return BenchContext(datasets=[load_dataset("controlled")], out=out, seed=1, model=model,
                        model_spec=SPEC, probes=4, methods=METHODS, options=options, **kw)


def answered(res: ExperimentResult) -> int:
    note = next(n for n in res.notes if n.startswith("model run:"))
    return int(re.search(r"(\d+) probes answered", note).group(1))  # type: ignore[union-attr]


# 1 ---------------------------------------------------------------- abstention
def test_the_instructed_abstention_scores_one_on_category_5() -> None:
    tail = INSTRUCTION.split("does not contain the answer, ", 1)[1]
    compliant = re.sub(r"^(reply:|say that)\s*", "", tail).rstrip(".")
    assert locomo_f1(compliant, None, 5) == 1.0
    assert locomo_f1(compliant.capitalize() + ".", None, 5) == 1.0


# 2 ---------------------------------------------------------------- resume keys
def test_changed_settings_are_answered_again_not_resumed(tmp_path: Path) -> None:
    first = MAIN.run(ctx_for(tmp_path, scripted()))
    assert answered(first) == 4 * len(METHODS)
    again = MAIN.run(ctx_for(tmp_path, scripted()))
    assert answered(again) == 0  # same settings: resumed
    other = MAIN.run(ctx_for(tmp_path, scripted(), paging=PagingSettings(boundary=("fixed_20",), k=(1,))))
    assert answered(other) == 4 * len(METHODS)  # another boundary: other prompts, asked again
    budget = MAIN.run(ctx_for(tmp_path, scripted(), options={"budget": 600}))
    assert answered(budget) == 4 * len(METHODS)
    rows = [r for r in budget.tables["methods"] if r["model"] == SPEC]
    assert [r["probes"] for r in rows] == [4] * len(METHODS)  # only this setting's rows


def test_a_changed_prompt_template_is_answered_again(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from copage.core import prompt
    from copage.eval.methods import templates

    assert answered(MAIN.run(ctx_for(tmp_path, scripted()))) == 4 * len(METHODS)
    monkeypatch.setattr(prompt, "PREAMBLE", prompt.PREAMBLE + " Be brief.")
    templates.template_texts.cache_clear()
    try:
        assert answered(MAIN.run(ctx_for(tmp_path, scripted()))) == 4 * len(METHODS)
    finally:
        templates.template_texts.cache_clear()


def _judge(name: str, strict: bool) -> ScriptedModel:
    def step(req: ChatRequest) -> str:
        if str(req.messages[0]["content"]).startswith("You label"):
            return '{"label": "CORRECT"}'
        answer = str(req.messages[-1]["content"]).rsplit(": ", 1)[-1]
        return f'{{"score": {max(1, 1 + len(answer) % 5 - (1 if strict else 0))}}}'
    m = ScriptedModel(name=name)
    for _ in range(500):
        m.then(step)
    return m


def test_a_judge_added_on_resume_is_run(tmp_path: Path) -> None:
    from copage.eval.experiments.multi_judge import EXPERIMENT as JUDGES

    answers = iter(["peanuts", "a", "the sofa", "Tuesday!", "no", "$1,200", "March 14"] * 30)
    answerer = ScriptedModel(name="answerer")
    for _ in range(200):
        answerer.then(lambda req: next(answers) if req.messages[-1]["role"] != "tool" else "ok")
    lenient = _judge("lenient", False)
    ctx = BenchContext(datasets=[load_dataset("controlled")], out=tmp_path, model=answerer,
                       model_spec=SPEC, judges={"lenient": lenient},
                       options={"cache": False, "judge_probes": 5, "bootstrap_b": 200,
                                "concurrency": 1})
    JUDGES.run(ctx)
    asked = len(answerer.requests)
    strict = _judge("strict", True)
    ctx.judges = {"lenient": lenient, "strict": strict}
    res = JUDGES.run(ctx)
    assert len(answerer.requests) == asked  # answers resumed
    assert len(strict.requests) == 15 * 2  # 15 answers x (scale5, binary), judged now
    (pair,) = res.tables["agreement"]
    assert pair["n"] == 15 and pair["pearson"] == pair["pearson"]  # a number, not NaN
    means = {(r["method"], r["judge"]): r["n"] for r in res.tables["judges"]}
    assert all(means[(m, "strict")] == 5 for m in ("bookmark_recall", "full_context", "bm25"))


# 4 ---------------------------------------------------------------- nll figure
def test_the_nll_figure_reaches_figures_and_the_html(tmp_path: Path) -> None:
    from copage.eval.experiments.runall import run_experiments
    from copage.eval.nll import CASES

    model = ScriptedModel(name="nll")
    for _ in range(2 * len(CASES)):
        model.then(lambda req: ChatResponse(text="ok", logprobs=[-1.0] * 4, model="nll"))
    ctx = BenchContext([load_dataset("controlled")], tmp_path, model=model, model_spec="scripted:nll",
                       options={"cache": False})
    for _ in range(2):  # the second time resumed from result.json
        results = run_experiments(ctx, ["nll"])
        paths = write_report(tmp_path, results, {}, [])
        assert (tmp_path / "figures" / "nll.png").read_bytes()[:4] == b"\x89PNG"
        assert "alt='nll'" in paths["html"].read_text()


# 5 ---------------------------------------------------------------- scripted from the CLI
def test_scripted_model_from_the_cli_fails_cleanly(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["bench", "main", "--dataset", "controlled", "--model", "scripted:nobody",
                 "--probes", "2", "--out", str(tmp_path / "run"), "--quiet", "--no-cache"])
    assert code == 1
    err = capsys.readouterr().err
    assert "model error" in err and "script exhausted" in err and "resume" in err


# 6 ---------------------------------------------------------------- progress of model runs
def test_main_and_judges_model_runs_show_progress(tmp_path: Path) -> None:
    from copage.eval.experiments.multi_judge import EXPERIMENT as JUDGES

    buf = io.StringIO()
    MAIN.run(ctx_for(tmp_path, scripted(), progress=Progress(stream=buf)))
    lines = [x for x in buf.getvalue().splitlines() if x.startswith("main (model)")]
    assert lines and f"{4 * len(METHODS)}/{4 * len(METHODS)}" in lines[-1] and "calls" in lines[-1]
    buf = io.StringIO()
    JUDGES.run(ctx_for(tmp_path, scripted(), progress=Progress(stream=buf)))
    lines = [x for x in buf.getvalue().splitlines() if x.startswith("judges (model)")]
    assert lines and f"{4 * len(METHODS)}/{4 * len(METHODS)}" in lines[-1] and "calls" in lines[-1]


# 7 ---------------------------------------------------------------- methods figure
def test_methods_figure_has_no_empty_panel_and_uses_the_scored_count(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from copage.eval.report import plots
    from copage.eval.stats import wilson_interval

    rows = [{"dataset": "d", "model": None, "method": "bm25", "probes": 20, "evidence_coverage": 0.5},
            {"dataset": "d", "model": "m", "method": "bm25", "probes": 20, "evidence_coverage": 0.5,
             "accuracy": 0.5, "accuracy_n": 8}]
    figs: list[Any] = []
    monkeypatch.setattr(plots, "_save", lambda fig, path: figs.append(fig) or path)
    plots.methods_plot({"main": {"methods": rows}}, tmp_path)
    (fig,) = figs
    axes = fig.axes
    assert len(axes) == 2 and all(len(ax.patches) == 1 for ax in axes)
    from matplotlib.container import ErrorbarContainer

    (bars,) = [c for c in axes[1].containers if isinstance(c, ErrorbarContainer)]
    (seg,) = bars.lines[2][0].get_segments()
    ci = wilson_interval(4, 8)
    assert (seg[0][0], seg[1][0]) == (pytest.approx(ci.low), pytest.approx(ci.high))


# 8 ---------------------------------------------------------------- strict JSON
def test_summary_and_result_json_write_null_for_nan(tmp_path: Path) -> None:
    from copage.eval.experiments.catalog import EXPERIMENTS
    from copage.eval.experiments.runall import run_experiments

    class NanExperiment:
        name = "nan_check"
        needs_model = False
        description = "writes NaN"

        def run(self, ctx: BenchContext) -> ExperimentResult:
            return ExperimentResult(self.name, {"t": [{"pearson": float("nan"), "x": float("inf")}]})

    EXPERIMENTS.register("nan_check", NanExperiment)
    try:
        results = run_experiments(BenchContext([], tmp_path), ["nan_check"])
    finally:
        EXPERIMENTS.unregister("nan_check")
    write_report(tmp_path, results, {"a": float("nan")}, [])

    def strict(text: str) -> Any:
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"bare {c} in JSON"))

    summary = strict((tmp_path / "summary.json").read_text())
    assert summary["experiments"]["nan_check"]["tables"]["t"] == [{"pearson": None, "x": None}]
    assert summary["settings"]["a"] is None
    stored = strict((tmp_path / "nan_check" / "result.json").read_text())
    assert stored["tables"]["t"] == [{"pearson": None, "x": None}]


# 9 ---------------------------------------------------------------- answer forms
@pytest.mark.parametrize(("answer", "gold", "forms"), [
    ("It is due April 6th", "April 6", ("April 6", "April 6th", "6 April")),
    ("about six hundred bucks", "$600", ("$600", "600 dollars", "six hundred bucks")),
])
def test_exact_match_accepts_the_generators_answer_forms(answer: str, gold: str,
                                                         forms: tuple[str, ...]) -> None:
    probe = Probe("s/q0", "q?", gold, 4, ("D1:1",), meta={"answer_forms": forms})
    assert static_scores(probe, answer, synthetic=True)["exact_match"] == 1.0
    assert static_scores(probe, "no idea", synthetic=True)["exact_match"] == 0.0


def test_bench_datasets_carry_the_answer_forms() -> None:
    from copage.eval.experiments.common import load_bench_dataset

    ds = load_bench_dataset("ablation")
    probes = [p for c in ds.conversations for p in c.probes]
    assert all(p.answer in p.meta["answer_forms"] for p in probes)
    assert any(len(p.meta["answer_forms"]) > 1 for p in probes)
