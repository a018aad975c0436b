"""Model-driven paths of the one-setting studies, end to end with a scripted model.

``specificity``, ``generators`` and ``failures`` run their probes through
``PagedChat``; ``topology`` and ``selection`` are LLM-free even when a model is
given; ``nll`` asks the model for logprobs. Everything runs offline on a tiny
LoCoMo-format file, and the rates are checked against the script worked by hand.

The hand computation (k=1 resident page, probes asked at the end in file order,
the four facts at turns 0, 2, 4, 6; the script recalls the first bookmark once per
probe, then answers "peanuts"; the judge passes only the allergy question):

* fixed_10 -> p1 (turns 0-9, every fact), p2, p3; p3 resident. allergy: p1 evicted,
  recall p1 (right); budget: p1 resident, recall p2 (first bookmark, wrong), p2
  resident; choir: p1 evicted, recall p1 (right); doctor: p1 resident, recall p2.
  Per conversation 2 probes need a recall, both trigger, recall precision 2/4.
* fixed_5 -> p1 (turns 0-4: allergy, budget, choir), p2 (turn 6: doctor), ..., p5.
  The same recalls p1, p2, p1, p2, but the doctor probe needs p2: 3 probes need
  a recall, precision 3/4.
"""

from __future__ import annotations

import json
import re
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from copage.core.keywords import EXTRACTORS
from copage.core.types import ToolCall
from copage.eval.datasets import load_dataset
from copage.eval.datasets.probes import Dataset
from copage.eval.experiments.catalog import Unavailable, get_experiment
from copage.eval.experiments.interface import BenchContext, PagingSettings
from copage.eval.experiments.model_probe import CELL_KEYS
from copage.eval.experiments.runall import run_experiments
from copage.eval.scoring import category_label
from copage.llm import ChatRequest, ChatResponse, ScriptedModel

SPEC = "scripted:answerer"
QA = [("I am allergic to peanuts", "What am I allergic to?", "peanuts", 1),
      ("My budget is $1,200 for the laptop", "What is my laptop budget?", "$1,200", 2),
      ("Choir practice is every Tuesday", "When is choir practice?", "Tuesday", 3),
      ("Call Dr. Alvarez at 555-0199", "Who should I call?", "Dr. Alvarez", 4)]
FILLER = ["Tell me about gardening tomatoes", "Tomatoes need sun and water daily",
          "What about pruning roses", "Prune roses in late winter"]
CONVERSATIONS, PROBES = 2, 4
CALLS_PER_CELL = CONVERSATIONS * PROBES * 3  # recall, answer, judge
RECALLS = [["p1", True], ["p2", True], ["p1", True], ["p2", True]]  # per conversation, file order
EXPECTED = {"fixed_10": {"needs_recall": 4, "recall_precision": 2 / 4},
            "fixed_5": {"needs_recall": 6, "recall_precision": 3 / 4}}
MODEL_COLUMNS = {"model", "probes", "accuracy", "exact", "needs_recall", "trigger_rate",
                 "right_page_rate", "recall_precision", "model_prompt_tokens_mean"}
FREE_COLUMNS = {"dataset", *CELL_KEYS, "hit_rate", "faults", "routing_top1", "bookmark_tokens_mean"}
RECORD_KEYS = {"dataset", "model", *CELL_KEYS, "seed", "config", "conversation", "probe",
               "fact_type", "category",
               "needed", "evicted", "needs_recall", "triggered", "right_page", "recalls",
               "answer", "exact", "judge", "correct", "prompt_tokens", "model_calls", "cost_usd"}
BOOKMARK = re.compile(r"\[(p\d+)[:\]]")


def write_tiny(path: Path, turns: int = 24) -> Path:
    """A LoCoMo-format file: the four facts early, filler after, one probe per fact."""
    samples = []
    for c in range(CONVERSATIONS):
        items = []
        for i in range(turns):
            fact = i % 2 == 0 and i // 2 < len(QA)
            text = QA[i // 2][0] if fact else f"{FILLER[i % 4]} {c}-{i}"
            items.append({"speaker": "User" if i % 2 == 0 else "Assistant",
                          "dia_id": f"D1:{i + 1}", "text": text})
        qa = [{"question": q, "answer": a, "evidence": [f"D1:{2 * k + 1}"], "category": cat}
              for k, (_, q, a, cat) in enumerate(QA)]
        samples.append({"sample_id": f"tiny-{c}", "qa": qa, "conversation": {
            "speaker_a": "User", "speaker_b": "Assistant", "session_1": items}})
    path.write_text(json.dumps(samples), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Dataset:
    return load_dataset(str(write_tiny(tmp_path_factory.mktemp("data") / "tiny.json")))


def answerer(request: ChatRequest) -> ChatResponse | str:
    """Recall the first bookmark once, then answer "peanuts"; as judge, pass only the allergy probe."""
    if not request.tools:
        return "CORRECT" if "allergic" in str(request.messages[-1]["content"]) else "WRONG"
    if request.messages[-1]["role"] == "tool":
        return "peanuts"
    _, _, listed = str(request.messages[0]["content"]).partition("Evicted pages (bookmarks):")
    first = BOOKMARK.search(listed)
    if first is None:
        return "peanuts"
    call = ToolCall("c1", "recall", json.dumps({"page": first.group(1)}))
    return ChatResponse("", (call,), "tool_calls")


def scripted(step: Callable[[ChatRequest], ChatResponse | str], n: int = 2000) -> ScriptedModel:
    model = ScriptedModel(name="answerer")
    for _ in range(n):
        model.then(step)
    return model


def context(data: Dataset, out: Path, model: Any, **options: Any) -> BenchContext:
    return BenchContext([data], out, model=model, model_spec=SPEC,
                        paging=PagingSettings(k=(1,), order="file"),
                        options={"cache": False, "workers": 1, **options})


def records(out: Path, name: str) -> list[dict[str, Any]]:
    return [json.loads(x) for x in (out / name / "model_probes.jsonl").read_text().splitlines()]


def check_model_rows(rows: list[dict[str, Any]], keywords: set[str],
                     boundaries: tuple[str, ...] = ("fixed_10",)) -> None:
    """Model rows: one per (boundary, keywords), the LLM-free columns beside, rates by hand."""
    free = [r for r in rows if r["model"] is None]
    model_rows = [r for r in rows if r["model"] == SPEC]
    cells = {(r["boundary"], r["keywords"]) for r in model_rows}
    assert cells == {(b, k) for b in boundaries for k in keywords} == {
        (r["boundary"], r["keywords"]) for r in free}
    assert len(model_rows) == len(cells)
    for r in model_rows:
        assert MODEL_COLUMNS | FREE_COLUMNS <= set(r), r
        assert r["probes"] == CONVERSATIONS * PROBES and r["k"] == 1 and r["policy"] == "lru"
        assert r["needs_recall"] == EXPECTED[r["boundary"]]["needs_recall"]
        assert r["trigger_rate"] == 1.0 and r["right_page_rate"] == 1.0
        assert r["recall_precision"] == pytest.approx(EXPECTED[r["boundary"]]["recall_precision"])
        assert r["accuracy"] == pytest.approx(1 / 4) and r["exact"] == pytest.approx(1 / 4)
        assert r["model_prompt_tokens_mean"] is not None
        assert r["routing_top1"] is not None and r["bookmark_tokens_mean"] > 0
    for r in free:
        assert r.get("trigger_rate") is None and r.get("accuracy") is None


def check_records(out: Path, name: str, n_cells: int) -> None:
    """The JSONL has one record per probe and cell, with the recalls the script made."""
    recs = records(out, name)
    assert len(recs) == n_cells * CONVERSATIONS * PROBES
    by_unit: dict[tuple[Any, ...], list[Any]] = {}
    for r in recs:
        assert set(r) == RECORD_KEYS and r["model"] == SPEC
        assert r["triggered"] and r["model_calls"] == 2
        by_unit.setdefault((*(r[k] for k in CELL_KEYS), r["conversation"]), []).append(r["recalls"][0])
    assert all(v == RECALLS for v in by_unit.values())


def test_failures_model_breakdown_by_type(tmp_path: Path, tiny: Dataset) -> None:
    model = scripted(answerer)
    ctx = context(tiny, tmp_path, model)
    res = get_experiment("failures").run(ctx)
    assert len(model.requests) == CALLS_PER_CELL
    assert {"failures", "failures_model"} <= set(res.tables)
    assert all({"dataset", "type", "probes", "faults", "fault_rate", "routing_top1"} <= set(r)
               for r in res.tables["failures"])
    by_type = {r["type"]: r for r in res.tables["failures_model"]}
    assert set(by_type) == {str(category_label(c)) for *_, c in QA}
    # allergy (cat 1) and choir (cat 3) are the probes whose page was evicted, see above
    expect = {1: (2, 1.0, 1.0, 1.0), 2: (0, None, None, 0.0), 3: (2, 1.0, 1.0, 0.0),
              4: (0, None, None, 0.0)}
    for cat, (need, trig, right, acc) in expect.items():
        row = by_type[str(category_label(cat))]
        assert row["probes"] == CONVERSATIONS
        assert (row["needs_recall"], row["trigger_rate"], row["right_page_rate"],
                row["accuracy"]) == (need, trig, right, acc)
    check_records(tmp_path, "failures", 1)
    again = get_experiment("failures").run(ctx)
    assert len(model.requests) == CALLS_PER_CELL
    assert again.tables["failures_model"] == res.tables["failures_model"]


def test_specificity_model_rows_per_extractor(tmp_path: Path, tiny: Dataset) -> None:
    from copage.eval.experiments.specificity import EXTRACTORS_COMPARED

    model = scripted(answerer)
    ctx = context(tiny, tmp_path, model)
    res = get_experiment("specificity").run(ctx)
    assert len(model.requests) == len(EXTRACTORS_COMPARED) * CALLS_PER_CELL
    check_model_rows(res.tables["specificity"], set(EXTRACTORS_COMPARED))
    by_type = res.tables["specificity_by_type"]
    assert len(by_type) == len(EXTRACTORS_COMPARED) * len(QA)
    assert all({"dataset", "keywords", "type", "probes", "faults", "routing_top1"} <= set(r)
               for r in by_type)
    check_records(tmp_path, "specificity", len(EXTRACTORS_COMPARED))
    get_experiment("specificity").run(ctx)
    assert len(model.requests) == len(EXTRACTORS_COMPARED) * CALLS_PER_CELL


def test_generators_with_a_model_run_the_llm_generators_for_that_run(
        tmp_path: Path, tiny: Dataset) -> None:
    from copage.eval.experiments.generators import LLM, OFFLINE
    from copage.eval.llmkeywords import LLMKeywordWarning

    assert not set(LLM) & set(EXTRACTORS.names())  # nothing registers them by default
    model = scripted(answerer, 4000)
    cache = tmp_path / "responses.sqlite"
    ctx = context(tiny, tmp_path, model, cache=True, cache_path=str(cache))
    with warnings.catch_warnings():
        # the scripted answerer gives no keyword JSON: the generators fall back, warning
        warnings.simplefilter("ignore", LLMKeywordWarning)
        res = get_experiment("generators").run(ctx)
        calls = len(model.requests)
        check_model_rows(res.tables["generators"], {*OFFLINE, *LLM}, ("fixed_10", "fixed_5"))
        assert not set(LLM) & set(EXTRACTORS.names())  # registered for the run only
        check_records(tmp_path, "generators", 2 * (len(OFFLINE) + len(LLM)))
        get_experiment("generators").run(ctx)
    assert len(model.requests) == calls  # resumed from the log and the response cache


def test_generators_leave_the_global_registries_unchanged_throughout(
        tmp_path: Path, tiny: Dataset) -> None:
    """The LLM generators live in a registry of the run's own, passed in: the global
    EXTRACTORS and POLICIES hold the same names before, during (at every model call,
    keyword calls included) and after the run."""
    from copage.core.policies import POLICIES
    from copage.eval.experiments.generators import LLM
    from copage.eval.llmkeywords import LLMKeywordWarning
    from copage.eval.llmkeywords.keyword_prompts import SYSTEM

    before = (EXTRACTORS.names(), POLICIES.names())
    during: list[tuple[list[str], list[str]]] = []

    def step(request: ChatRequest) -> ChatResponse | str:
        during.append((EXTRACTORS.names(), POLICIES.names()))
        if request.messages[0].get("content") == SYSTEM:
            return keywords_reply(request)
        return answerer(request)

    model = scripted(step, 4000)
    ctx = context(tiny, tmp_path, model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", LLMKeywordWarning)
        res = get_experiment("generators").run(ctx)
    assert {r["keywords"] for r in res.tables["generators"] if r["model"] == SPEC} >= set(LLM)
    assert any(r.messages[0].get("content") == SYSTEM for r in model.requests)
    assert during and all(names == before for names in during)
    assert (EXTRACTORS.names(), POLICIES.names()) == before


def test_with_llm_extractors_makes_a_new_registry() -> None:
    from copage.core.config import PagerConfig
    from copage.eval.experiments.generators import LLM
    from copage.eval.llmkeywords import with_llm_extractors

    before = EXTRACTORS.names()
    extractors = with_llm_extractors(ScriptedModel(name="m"))
    assert extractors is not EXTRACTORS and EXTRACTORS.names() == before
    assert set(extractors.names()) == {*before, *LLM}
    config = PagerConfig(keywords="hybrid", extractors=extractors)
    assert config.to_dict()["keywords"] == "hybrid" and "extractors" not in config.to_dict()
    assert config == PagerConfig.from_dict(config.to_dict(), like=config)
    with pytest.raises(ValueError, match="unknown keyword extractor 'hybrid'"):
        PagerConfig.from_dict(config.to_dict())  # the global registry does not know it


# ------------------------------------------------------------ LLM keyword generators
KEYWORD_MARK = "llmmark"


def keywords_reply(request: ChatRequest) -> str:
    """Valid JSON for the contextual, batch and hybrid prompts: marker keywords per page."""
    prompt = str(request.messages[-1]["content"])
    one = re.search(r"Give (\d+) keywords for page (p\d+)", prompt)
    if one:
        return json.dumps([f"{KEYWORD_MARK}{one.group(2)}n{i}" for i in range(int(one.group(1)))])
    batch = re.search(r"For each page \(([^)]*)\) give (\d+) keywords", prompt)
    if batch:
        return json.dumps({p: [f"{KEYWORD_MARK}{p}n{i}" for i in range(int(batch.group(2)))]
                           for p in batch.group(1).split(", ")})
    pages = re.findall(r"Page (p\d+) \(current keywords", prompt)
    assert pages, prompt[:200]
    return json.dumps({p: f"{KEYWORD_MARK}{p}" for p in pages})


@pytest.fixture()
def llm_registered() -> Iterator[Callable[..., Any]]:
    """``register_llm_extractors``; the names leave the global registry afterwards."""
    from copage.eval.llmkeywords import LLM_EXTRACTOR_NAMES, register_llm_extractors

    try:
        yield register_llm_extractors
    finally:
        for name in LLM_EXTRACTOR_NAMES:
            EXTRACTORS.unregister(name)


def test_generators_run_registered_llm_generators_with_the_model(
        tmp_path: Path, tiny: Dataset, llm_registered: Callable[..., Any]) -> None:
    from copage.eval.experiments.generators import LLM, OFFLINE
    from copage.eval.llmkeywords import LLMKeywordWarning
    from copage.eval.llmkeywords.keyword_prompts import SYSTEM
    from copage.llm.response_cache import CachedModel, ResponseCache

    def step(request: ChatRequest) -> ChatResponse | str:
        if request.messages[0].get("content") == SYSTEM:
            return keywords_reply(request)
        return answerer(request)

    model = scripted(step, 4000)
    cache = tmp_path / "responses.sqlite"
    # bound to the cached model, as a run with the response cache on would be
    llm_registered(CachedModel(model, ResponseCache(cache)))
    ctx = context(tiny, tmp_path, model, cache=True, cache_path=str(cache))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = get_experiment("generators").run(ctx)
    assert not [w for w in caught if issubclass(w.category, LLMKeywordWarning)]
    assert not any("LLM generators" in n for n in res.notes)
    check_model_rows(res.tables["generators"], {*OFFLINE, *LLM}, ("fixed_10", "fixed_5"))
    kw_requests = [str(r.messages[-1]["content"]) for r in model.requests
                   if r.messages[0].get("content") == SYSTEM]
    assert any("Give " in p for p in kw_requests)  # llm-contextual
    assert any("For each page (" in p for p in kw_requests)  # llm-batch
    assert any("add exactly ONE new keyword" in p for p in kw_requests)  # hybrid
    shown = [str(r.messages[0]["content"]) for r in model.requests if r.tools]
    assert any(KEYWORD_MARK in s.partition("Evicted pages")[2] for s in shown)
    check_records(tmp_path, "generators", 2 * (len(OFFLINE) + len(LLM)))
    used = len(model.requests)
    again = get_experiment("generators").run(ctx)  # JSONL resume + response cache
    assert len(model.requests) == used
    assert again.tables["generators"] == res.tables["generators"]


# ------------------------------------------------------------ LLM-free with a model
def test_topology_and_selection_make_no_model_calls(tmp_path: Path, tiny: Dataset) -> None:
    model = ScriptedModel(name="answerer")  # empty script: any call would raise
    ctx = context(tiny, tmp_path, model)
    first = {r.name: r for r in run_experiments(ctx, ["topology", "selection"])}
    assert model.requests == []
    topo = first["topology"].tables
    assert len(topo["topology"]) == CONVERSATIONS
    for r in topo["topology"]:
        assert {"dataset", "conversation", "boundary", "k", "probes", "probe_page_accesses",
                "revisit_rate", "hit_fifo", "hit_lru", "hit_lfu", "lru_minus_fifo",
                "pages"} <= set(r)
        # every probe reads p1: 3 of 4 accesses revisit it; only the first one misses
        assert (r["probe_page_accesses"], r["revisit_rate"]) == (4, 0.75)
        assert r["hit_fifo"] == r["hit_lru"] == r["hit_lfu"] == 0.75
    assert topo["topology_summary"][0]["revisit_rate"] == 0.75
    sel = first["selection"].tables
    assert [r["split"] for r in sel["selection_conversations"]] == ["choose", "report"]
    assert all({"mass", "faults_heuristic", "routing_heuristic", "faults_discriminative",
                "routing_discriminative", "rule_picks"} <= set(r)
               for r in sel["selection_conversations"])
    assert {"dataset", "conversations", "mass_mean", "threshold", "routing_always_heuristic",
            "routing_always_discriminative", "routing_rule",
            "routing_oracle"} <= set(sel["selection"][0])
    for name in ("topology", "selection"):
        assert (tmp_path / name / "result.json").exists()
        assert not (tmp_path / name / "model_probes.jsonl").exists()
    second = {r.name: r for r in run_experiments(ctx, ["topology", "selection"])}
    assert all(any("resumed" in n for n in r.notes) for r in second.values())
    assert second["topology"].tables == json.loads(json.dumps(topo))


# ------------------------------------------------------------ nll
def nll_reply(request: ChatRequest) -> ChatResponse:
    """Four tokens at NLL 1.0 with the full context, 2.0 with the gist one."""
    gist = "Summary of an earlier part" in json.dumps([m["content"] for m in request.messages])
    return ChatResponse(text="an answer", logprobs=[-2.0 if gist else -1.0] * 4, model="nll")


def test_nll_runs_writes_files_and_resumes(tmp_path: Path, tiny: Dataset) -> None:
    from copage.eval.nll import CASES

    exp = get_experiment("nll")
    assert exp.needs_model and not isinstance(exp, Unavailable)  # the real experiment, found
    model = scripted(nll_reply, 2 * len(CASES))
    ctx = context(tiny, tmp_path, model)
    (res,) = run_experiments(ctx, ["nll"])
    assert len(model.requests) == 2 * len(CASES)
    assert all(r.logprobs for r in model.requests)
    rows = res.tables["nll"]
    assert [r["case"] for r in rows] == [c.id for c in CASES]
    for r in rows:
        assert {"kind", "fact_types", "tokens_full", "tokens_gist", "mean_nll_full",
                "mean_nll_gist", "delta_mean_nll", "delta_max_window", "model"} <= set(r)
        assert (r["mean_nll_full"], r["mean_nll_gist"]) == (pytest.approx(1.0), pytest.approx(2.0))
        assert r["delta_mean_nll"] == pytest.approx(1.0) and r["model"] == SPEC
    summary = res.tables["nll_summary"][0]
    assert summary["experimental_delta_mean"] == pytest.approx(1.0)
    assert summary["gist_lower_cases"] == 0
    for name in ("nll.md", "nll.csv", "nll.json", "nll.png", "result.json"):
        assert (tmp_path / "nll" / name).exists(), name
    (again,) = run_experiments(ctx, ["nll"])  # the script is used up: a call would raise
    assert len(model.requests) == 2 * len(CASES)
    assert any("resumed" in n for n in again.notes) and again.tables["nll"] == rows
