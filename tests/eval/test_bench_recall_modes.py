"""``copage bench main`` with PagedChat's recall modes and prompt styles, and --categories.

The scripted model is a test tool here: it checks what reaches the model and what
the rows and tables say, never a model's quality.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from test_bench import tiny_locomo
from test_methods import PAD, SETTINGS, _budget_for, _conv

from copage.cli.bench import build_context
from copage.cli.main import build_parser
from copage.core.types import ToolCall
from copage.eval.datasets.probes import Conversation, Probe
from copage.eval.experiments.common import filter_categories, parse_categories, sample_probes
from copage.eval.experiments.interface import BenchContext
from copage.eval.experiments.methods_table import EXPERIMENT, method_config
from copage.eval.methods import MethodSettings, Variant, get_method
from copage.eval.methods.readers import choose_reader, page_reader
from copage.eval.runner.aggregate import needed_paged_in_rate, summarise
from copage.llm import ChatRequest, ChatResponse, ScriptedModel
from copage.session.prompts import REMINDER
from copage.session.records import ProbeRecord, RecallRecord


# ------------------------------------------------------------------ variants and readers
def test_variant_passes_recall_mode_and_prompt_style_to_paged_chat() -> None:
    settings = replace(SETTINGS, prompt_style="compact")
    opts = Variant(recall="choose").chat_options(settings)
    assert opts["recall_mode"] == "choose" and opts["prompt"] == "compact"
    assert Variant(recall="choose", speculative=True).mode == "speculative+choose"
    assert Variant(speculative=True).chat_options(SETTINGS)["recall_mode"] == "speculative+tool"
    assert Variant().chat_options(SETTINGS)["prompt"] == "paper"
    assert Variant(recall="choose+tool").steps == ("choose", "tool")
    with pytest.raises(ValueError, match="choose"):
        Variant(recall="pick")
    with pytest.raises(ValueError, match="compact"):
        MethodSettings(prompt_style="tiny")

REMINDER_TEXT = REMINDER.format(tool="recall")  # the compact style's reminder


def test_resume_key_holds_recall_mode_and_prompt_style() -> None:
    paper, compact = SETTINGS, replace(SETTINGS, prompt_style="compact")
    tool, choose = get_method("bookmark_recall"), get_method("bookmark_recall+choose")
    keys = {method_config(m, s) for m in (tool, choose) for s in (paper, compact)}
    assert len(keys) == 4
    bm25 = get_method("bm25")  # one prompt: its rows stay valid across prompt styles
    assert method_config(bm25, paper) == method_config(bm25, compact)


def test_choose_reader_is_the_bookmark_rule() -> None:
    marks = [("p1", "[p1:quokka]"), ("p2", "[p2:ferry, tickets]")]
    for question in ("the ferry tickets?", "Xylophone?", "quokka photos"):
        assert choose_reader(question, marks) == page_reader(question, marks)
    assert choose_reader("Xylophone?", marks) is None


def test_choose_offline_prompt_has_the_pick_and_no_tool() -> None:
    conv = _conv(PAD)
    settings = replace(SETTINGS, budget=_budget_for(conv, 1))
    prep = get_method("bookmark_recall+choose").prepare(conv, settings)
    built = prep.build(conv.probes[0])  # "zanzibar ferry tickets": p1 evicted, its bookmark matches
    assert built.routed == "p1" and "D1:3" in built.context_turn_ids
    assert built.tools == [] and all(m["role"] != "tool" for m in built.messages)
    system = built.messages[0]["content"]
    assert "Evicted pages" not in system and "recall" not in system
    none = prep.build(conv.probes[3])  # no bookmark shares a word: the pick is "none"
    assert none.routed is None and "D1:3" not in none.context_turn_ids
    # the choose call is paid besides the answer: more tokens than the answer prompt alone
    from copage.eval.methods import message_tokens

    assert built.prompt_tokens > message_tokens(built.messages, built.tools, prep.tokenizer)
    # choose+tool: the pick, then the tool reader on the bookmarks left (tool offered)
    both = get_method("bookmark_recall+choose+tool").prepare(conv, settings).build(conv.probes[1])
    assert [t["function"]["name"] for t in both.tools] == ["recall"]


def test_compact_style_reaches_the_offline_prompt() -> None:
    conv = _conv(PAD)
    settings = replace(SETTINGS, budget=_budget_for(conv, 1), prompt_style="compact")
    built = get_method("bookmark_recall").prepare(conv, settings).build(conv.probes[0])
    question = next(m for m in built.messages if m["role"] == "user"
                    and m["content"].startswith(conv.probes[0].question))
    assert REMINDER_TEXT in question["content"]
    assert "Evicted pages:\n- p1" in built.messages[0]["content"]


# ------------------------------------------------------------------ a model run
def _answerer(request: ChatRequest) -> ChatResponse | str:
    system = str(request.messages[0].get("content", ""))
    if system.startswith("You find where"):  # the choose call: pick the page it lists first
        listed = str(request.messages[-1]["content"]).split("\n- ", 1)[1].split(" ", 1)[0]
        return json.dumps({"page": listed.rstrip(":")})
    if request.tools and request.messages[-1]["role"] != "tool":
        return ChatResponse("", (ToolCall("c1", "recall", '{"page": "p1"}'),), "tool_calls")
    return "peanuts"


def _scripted(n: int = 300) -> ScriptedModel:
    model = ScriptedModel(name="answerer")
    for _ in range(n):
        model.then(_answerer)
    return model


def _ctx(out: Path, data: Path, model: Any, methods: list[str], **options: Any) -> BenchContext:
    from copage.eval.experiments.common import load_bench_dataset

    return BenchContext(datasets=[load_bench_dataset(str(data))], out=out, seed=0, model=model,
                        model_spec="scripted:answerer", probes=4, methods=methods,
                        options={"cache": False, "concurrency": 1, "bootstrap_b": 200,
                                 "budget": 300, "budgets": (), "no_judge": True, **options})


def test_choose_model_run_rows_and_table(tmp_path: Path) -> None:
    data = tiny_locomo(tmp_path / "tiny.json", turns=48)  # longer than the budget: paged
    model = _scripted()
    methods = ["bm25", "bookmark_recall", "bookmark_recall+choose"]
    # 500 tokens: the choose call and the answer call, both billed, fit (300 does not)
    res = EXPERIMENT.run(_ctx(tmp_path / "run", data, model, methods, budget=500))
    rows = [json.loads(x) for x in (tmp_path / "run" / "main" / "probes.jsonl").read_text().splitlines()]
    chosen = [r for r in rows if r["method"] == "bookmark_recall+choose"]
    assert chosen and all(r["calls"] == 2 for r in chosen)  # the choose call, then the answer
    assert all(r["tool_calls"][0]["tool"] == "choose" for r in chosen)
    choose_requests = [q for q in model.requests if str(q.messages[0]["content"]).startswith("You find")]
    assert len(choose_requests) == len(chosen)
    answers = [q for q in model.requests if not str(q.messages[0]["content"]).startswith("You find")]
    assert any(q.tools == () and "Evicted pages" not in str(q.messages[0]["content"]) for q in answers)
    table = {r["method"]: r for r in res.tables["methods"] if r["model"] == "scripted:answerer"}
    for name in ("bookmark_recall", "bookmark_recall+choose"):
        r = table[name]
        assert {"trigger_rate", "right_page_rate", "needed_paged_in_rate", "needs_recall",
                "triggered", "tool_trigger_rate", "provider_prompt_tokens_mean"} <= set(r)
    assert table["bookmark_recall+choose"]["trigger_rate"] == 1.0  # a pick counts as a trigger
    assert table["bookmark_recall+choose"]["tool_trigger_rate"] == 0.0  # no tool in choose mode
    assert table["bookmark_recall"]["tool_trigger_rate"] == 1.0
    pairs = {(s["method_a"], s["method_b"]) for s in res.tables["significance"]}
    assert ("bm25", "bookmark_recall+choose") in pairs and ("bookmark_recall", "bm25") in pairs
    assert ("bm25", "bookmark_recall") not in pairs  # each pair once


def test_prompt_style_changes_the_requests_and_the_key(tmp_path: Path) -> None:
    data = tiny_locomo(tmp_path / "tiny.json", turns=48)  # longer than the budget: paged
    paper = _scripted()
    EXPERIMENT.run(_ctx(tmp_path / "run", data, paper, ["bm25", "bookmark_recall"]))
    compact = _scripted()
    EXPERIMENT.run(_ctx(tmp_path / "run", data, compact, ["bm25", "bookmark_recall"],
                        prompt_style="compact"))
    # bm25's rows are reused (one prompt); bookmark_recall is asked again, in the compact style
    assert all(REMINDER_TEXT in str(q.messages) for q in compact.requests
               if q.tools and q.messages[-1]["role"] == "user")
    assert not any(REMINDER_TEXT in str(q.messages) for q in paper.requests)
    n_bm25 = sum(1 for q in paper.requests if not q.tools)
    assert n_bm25 == 4 and all(q.tools for q in compact.requests)  # bm25 not asked again
    rows = (tmp_path / "run" / "main" / "probes.jsonl").read_text().splitlines()
    assert len(rows) == 4 + 4 + 4  # bm25 once, bookmark_recall in both styles


# ------------------------------------------------------------------ metrics
def test_needed_paged_in_rate_counts_every_step() -> None:
    def rec(evicted: tuple[str, ...], spec: tuple[str, ...] = (),
            calls: tuple[tuple[str, str, str], ...] = ()) -> ProbeRecord:
        return ProbeRecord(evicted, evicted, spec,
                           tuple(RecallRecord(f"c{i}", t, "", s, p) for i, (t, s, p) in enumerate(calls)))

    records = [
        rec(("p1",), spec=("p1",)),  # speculative
        rec(("p2",), calls=(("choose", "paged_in", "p2"),)),  # a choose pick
        rec(("p3",), calls=(("recall", "paged_in", "p4"), ("recall", "paged_in", "p3"))),
        rec(("p5",), calls=(("recall", "resident", "p5"),)),  # not a page-in
        rec(("p6",), calls=(("recall", "paged_in", "p7"),)),  # the wrong page
        rec(()),  # needed nothing evicted: not in the pool
    ]
    rate = needed_paged_in_rate(records)
    assert (rate.hits, rate.total) == (3, 5)


def test_server_prompt_tokens_in_the_table() -> None:
    rows = [{"method": "bm25", "answer": "a", "prompt_tokens_total": 90,
             "provider_prompt_tokens": [100, 20], "scores": {"locomo_f1": 1.0}},
            {"method": "bm25", "answer": "b", "prompt_tokens_total": 50,
             "provider_prompt_tokens": [60], "scores": {"locomo_f1": 0.0}}]
    out = summarise(rows)
    assert out["provider_prompt_tokens_mean"] == 90 and out["prompt_tokens_mean"] == 70
    assert summarise([{**rows[0], "provider_prompt_tokens": [0]}])["provider_prompt_tokens_mean"] is None


# ------------------------------------------------------------------ --categories
def _cats() -> Conversation:
    conv = _conv()
    probes = tuple(Probe(f"c/k{i}", f"Question {i}?", "x", 1 + i % 5, ("D1:3",)) for i in range(20))
    return replace(conv, probes=probes)


def test_categories_filter_before_the_seeded_sample() -> None:
    from copage.eval.datasets.probes import Dataset

    ds = Dataset("d", (_cats(),))
    kept = filter_categories(ds, (1, 2, 4))
    assert kept.probes == 12 and {p.category for c in kept.conversations for p in c.probes} == {1, 2, 4}
    sample = sample_probes(kept, 5, seed=0)
    assert len(sample) == 5 and all(p.category in (1, 2, 4) for _, p in sample)
    assert sample == sample_probes(filter_categories(ds, (4, 2, 1)), 5, seed=0)
    assert filter_categories(ds, None) is ds
    assert parse_categories(" 4,1,2,1 ") == (1, 2, 4)
    with pytest.raises(ValueError, match="valid"):
        parse_categories("1,9")
    with pytest.raises(ValueError, match="no category"):
        parse_categories(",")
    only5 = Dataset("d", (replace(_cats(), probes=tuple(p for p in _cats().probes if p.category == 5)),))
    with pytest.raises(ValueError, match=r"categories \[5\]"):
        filter_categories(only5, (1,))


def test_cli_categories_and_prompt_style(tmp_path: Path) -> None:
    data = tiny_locomo(tmp_path / "tiny.json", turns=48)  # longer than the budget: paged
    args = build_parser().parse_args(["bench", "main", "--dataset", str(data), "--categories", "4",
                                      "--prompt-style", "compact", "--out", str(tmp_path / "o")])
    ctx, names = build_context(args)
    assert names == ["main"] and ctx.options["categories"] == [4]
    assert ctx.options["prompt_style"] == "compact"
    args = build_parser().parse_args(["bench", "main", "--dataset", str(data), "--categories", "1"])
    with pytest.raises(ValueError, match="no probe of categories"):
        build_context(args)
    with pytest.raises(SystemExit):
        build_parser().parse_args(["bench", "--prompt-style", "tiny"])
    default = build_context(build_parser().parse_args(["bench", "main", "--dataset", str(data)]))[0]
    assert "categories" not in default.options and "prompt_style" not in default.options
