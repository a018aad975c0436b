"""Issue 30: oracle rows are ceilings, an oracle router, baselines on copage's units and window.

Each test fails on the code before the fix: the oracle trigger fired for evidence the
speculative fill already showed, a probe whose recall did not fit reported 0 billed
tokens and no evidence (below never), there was no oracle router and no retrieval
baseline behind copage's window.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from test_bench import tiny_locomo

from copage.core.retrieval import BM25Index
from copage.core.text import content_words, query_terms
from copage.eval.datasets.probes import Conversation
from copage.eval.experiments.common import load_bench_dataset, settings_for
from copage.eval.experiments.interface import BenchContext
from copage.eval.methods import (
    COPAGE_VARIANTS,
    MethodSettings,
    coverage,
    evidence_groups,
    get_method,
    method_names,
)
from copage.eval.methods.bookmark import RECALL_NOT_MADE
from copage.eval.methods.method import DOES_NOT_FIT
from copage.eval.methods.pages import COPAGE_WINDOW, copage_window
from copage.eval.methods.readers import ORACLE_ROUTER, ORACLES
from copage.eval.methods.units import split_units, unit_text

BOOKMARK = ["bookmark_recall", *COPAGE_VARIANTS, "bookmark_recall+choose+speculative"]


def _ctx(out: Path) -> BenchContext:
    return BenchContext(datasets=[], out=out, seed=0, options={"cache": False})


def _controlled() -> tuple[list[Conversation], MethodSettings]:
    ds = load_bench_dataset("controlled")
    return list(ds.conversations[:4]), settings_for(ds, _ctx(Path("/nonexistent")))


def _shown(probe_evidence: tuple[str, ...], visible: frozenset[str]) -> set[str]:
    return {e for e in probe_evidence if e in visible}


@pytest.mark.parametrize("name", BOOKMARK)
def test_oracle_rows_are_never_below_the_never_row(name: str) -> None:
    convs, base = _controlled()
    method = get_method(name)
    for budget in (700, 1024, 2048, 4096):
        settings = replace(base, budget=budget)
        for conv in convs:
            prep = method.prepare(conv, settings)
            for probe in conv.probes:
                never = prep.build(probe, "never")
                groups = evidence_groups(conv, probe, acknowledgements=True)
                floor = coverage(groups, never.context_turn_ids)
                for trigger in ORACLES:
                    built = prep.build(probe, trigger)
                    cov = coverage(groups, built.context_turn_ids)
                    assert cov.all >= floor.all and cov.any >= floor.any, (budget, trigger, probe.id)
                    assert _shown(probe.evidence, built.context_turn_ids) >= \
                        _shown(probe.evidence, never.context_turn_ids)
                    assert built.prompt_tokens == sum(built.calls) <= budget
                    assert never.limit == DOES_NOT_FIT or built.limit != DOES_NOT_FIT


def test_a_recall_over_the_budget_is_not_made_and_the_first_call_is_billed() -> None:
    # plan_recall=False plans the budget for one answer call: a recall then goes over it
    data = load_bench_dataset("controlled")
    settings = replace(settings_for(data, _ctx(Path("/nonexistent"))), plan_recall=False,
                       budget=1024)
    seen = 0
    for conv in data.conversations[:6]:
        prep = get_method("bookmark_recall").prepare(conv, settings)
        for probe in conv.probes:
            never, rule = prep.build(probe, "never"), prep.build(probe, "rule")
            for trigger in ORACLES:
                built = prep.build(probe, trigger)
                if built.limit != RECALL_NOT_MADE:
                    continue
                seen += 1
                assert built.calls == never.calls and built.prompt_tokens == never.prompt_tokens > 0
                assert built.would_need is not None and built.would_need > settings.budget
                assert built.context_turn_ids == never.context_turn_ids
            if rule.would_need is not None:  # the model asked: a miss, its first call billed
                assert rule.prompt_tokens == never.prompt_tokens > 0 and not rule.context_turn_ids
    assert seen > 0


def test_oracle_fires_only_for_evidence_still_missing(tmp_path: Path) -> None:
    data = load_bench_dataset(str(tiny_locomo(tmp_path / "t.json", turns=80)))
    settings = MethodSettings(budget=600, boundary="fixed_10")  # pages evicted, the fill shows them
    filled_probes = 0
    for conv in data.conversations:
        prep = get_method("bookmark_recall+speculative").prepare(conv, settings)
        for probe in conv.probes:
            never = prep.build(probe, "never")
            if not prep.missing(probe, never.context_turn_ids):  # the fill or the window shows it
                filled_probes += bool(never.evicted_needed)
                for trigger in ORACLES:
                    assert prep.build(probe, trigger).calls == never.calls, (trigger, probe.id)
    assert filled_probes > 0


def test_oracle_router_recalls_the_pages_holding_the_evidence() -> None:
    convs, settings = _controlled()
    for name in ("bookmark_recall", "bookmark_recall+query", "bookmark_recall+choose",
                 "bookmark_recall+choose+tool"):
        prep_rows = 0
        for conv in convs:
            prep = get_method(name).prepare(conv, settings)
            for probe in conv.probes:
                never = prep.build(probe, "never")
                missing = prep.missing(probe, never.context_turn_ids)
                if not missing:
                    continue
                built = prep.build(probe, ORACLE_ROUTER)
                if built.would_need is None and len(missing) <= settings.max_recalls \
                        and "choose" not in name:
                    assert set(missing) <= set(str(built.routed).split(",")), (name, probe.id)
                    assert coverage(probe, built.context_turn_ids).all
                if built.routed:
                    prep_rows += 1
                    assert len(built.calls) > len(never.calls) or "choose" in name
        assert prep_rows > 0, name


def test_page_baselines_show_copages_window_and_rank_with_the_library_reader(tmp_path: Path) -> None:
    data = load_bench_dataset(str(tiny_locomo(tmp_path / "t.json", turns=80)))
    conv = data.conversations[0]
    settings = MethodSettings(budget=600, boundary="session")
    copage = get_method("bookmark_recall+copage").prepare(conv, settings)
    resident = copage.state().visible
    start, n = copage_window(conv, settings)
    assert 0 < n < len(conv.turns) and {t.id for t in conv.turns[start:]} == set(resident)
    for name in ("bm25@fixed_10", "word_overlap@fixed_5", "search_tool@fixed_10"):
        prep = get_method(name).prepare(conv, settings)
        assert prep.start == start and COPAGE_WINDOW in prep.window_label
        built = prep.build(conv.probes[0])
        assert built.prompt_tokens <= settings.budget
        assert {t.id for t in conv.turns[start:]} <= built.context_turn_ids
    prep = get_method("bm25@fixed_10").prepare(conv, settings)
    units = [u for u in split_units(conv.turns, "fixed_10") if u.start < start]
    docs = [content_words(unit_text(conv.turns, u, start)) for u in units]
    probe = conv.probes[1]
    scores = BM25Index(docs).scores(query_terms(probe.question))
    best = units[max(range(len(units)), key=lambda i: (scores[i], -i))]
    assert f"u{best.index + 1}" in str(prep.build(probe).routed).split(",")


def test_method_names_take_baseline_at_units_and_reject_bad_ones() -> None:
    assert "bm25@fixed_10" in method_names() and "search_tool@fixed_5" in method_names()
    assert method_names("bm25@fixed_7,bm25") == ["bm25@fixed_7", "bm25"]
    with pytest.raises(ValueError, match="valid: bm25, word_overlap, search_tool"):
        method_names("dense@fixed_10")
    with pytest.raises(ValueError, match="unknown units 'pagez'"):
        method_names("bm25@pagez")


# ------------------------------------------------------------------ the CLI and the leader
def test_cli_exposes_window_top_k_and_units(tmp_path: Path) -> None:
    from copage.cli.bench import build_context
    from copage.cli.main import build_parser
    from copage.eval.experiments.methods_table import default_methods

    data = tiny_locomo(tmp_path / "tiny.json", turns=48)
    args = build_parser().parse_args(["bench", "main", "--dataset", str(data), "--window", "8",
                                      "--top-k", "2", "--units", "fixed_5,sessions",
                                      "--out", str(tmp_path / "o")])
    ctx, _ = build_context(args)
    assert ctx.options["units"] == ["fixed_5", "session"]
    settings = settings_for(ctx.datasets[0], ctx)
    assert settings.window == 8 and settings.top_k == 2
    methods = default_methods(ctx.options["units"])
    assert {"bm25", "bm25@fixed_5", "bm25@session", "search_tool@fixed_5"} <= set(methods)
    assert "bm25@fixed_10" not in methods
    for bad, match in ((["--units", "pagez"], "unknown units 'pagez'"),
                       (["--window", "0"], "--window must be >= 1")):
        args = build_parser().parse_args(["bench", "main", "--dataset", str(data), *bad])
        with pytest.raises(ValueError, match=match):
            build_context(args)


def _row(method: str, conv: str, probe: int, covered: bool, trigger: str | None = None) -> dict:
    return {"dataset": "d", "budget": 1024, "method": method, "trigger": trigger,
            "conversation": conv, "probe": f"{conv}/q{probe}", "evidence_coverage": covered,
            "prompt_tokens": 900, "units": None}


def test_leader_compares_copage_with_the_stronger_bm25_row() -> None:
    from copage.eval.experiments.leader import leaders

    rows = []
    for c in range(12):
        for i in range(4):
            rows.append(_row("bookmark_recall+copage", f"c{c}", i, i < 2, "rule"))
            rows.append(_row("bookmark_recall+copage", f"c{c}", i, True, "oracle"))  # not read
            rows.append(_row("bm25", f"c{c}", i, i < 1))
            rows.append(_row("bm25@fixed_10", f"c{c}", i, i < 3))
    (lead,) = leaders(rows, B=500, seed=0)
    assert lead["bm25_best"] == "bm25@fixed_10" and lead["leader"] == "bm25@fixed_10"
    assert lead["copage_coverage"] == 0.5 and lead["bm25_coverage"] == 0.75
    assert lead["delta"] == pytest.approx(-0.25) and lead["ci_high"] < 0
    assert lead["sentence"].startswith("d at 1,024 tokens: bm25@fixed_10 leads.")
    assert "paired bootstrap resampling 12 conversations" in lead["sentence"]


def test_main_report_leads_with_who_leads_at_each_budget(tmp_path: Path) -> None:
    from copage.eval.experiments.methods_table import EXPERIMENT
    from copage.eval.report import write_report

    data = tiny_locomo(tmp_path / "tiny.json", turns=80)
    ctx = BenchContext(datasets=[load_bench_dataset(str(data))], out=tmp_path / "run", seed=0,
                       methods=["bm25", "bm25@fixed_10", "bookmark_recall+copage"],
                       options={"cache": False, "bootstrap_b": 200, "budgets": (600, 1024),
                                "budget": 600})
    res = EXPERIMENT.run(ctx)
    assert [r["budget"] for r in res.tables["leader"]] == [600, 1024]
    assert res.notes[0] == res.tables["leader"][0]["sentence"]
    md = write_report(tmp_path / "run", [res], {})["markdown"].read_text()
    assert md.index("Who leads: tiny at 600 tokens") < md.index("headline")


def test_search_tool_bills_its_first_call_when_the_answer_call_does_not_fit(tmp_path: Path) -> None:
    data = load_bench_dataset(str(tiny_locomo(tmp_path / "t.json", turns=80)))
    conv = data.conversations[0]
    seen = 0
    for budget in range(250, 600, 25):
        for name in ("search_tool", "search_tool@fixed_10"):
            prep = get_method(name).prepare(conv, MethodSettings(budget=budget, boundary="session"))
            for probe in conv.probes:
                built = prep.build(probe)
                if built.limit == DOES_NOT_FIT and built.calls:
                    seen += 1  # the first call was sent (the model searched): billed
                    assert built.prompt_tokens == built.calls[0] <= budget < built.would_need
    assert seen > 0


def test_retrieved_units_repeat_no_session_header_and_pack_on_what_they_show(
        tmp_path: Path) -> None:
    """The baselines render their units as copage's fill renders its runs: a session
    header only where the session changes from the turn shown before, and packing
    counts the units as shown (so the room saved holds more units)."""
    data = load_bench_dataset(str(tiny_locomo(tmp_path / "t.json", turns=80)))
    conv = data.conversations[0]
    prep = get_method("bm25@fixed_5").prepare(conv, MethodSettings(budget=600, boundary="session"))
    units, _ = prep.pack("tomatoes roses pruning gardening sun water winter", 10_000)
    assert len(units) >= 3
    text = prep.blocks(units)
    assert text.count("(session 1") == 1 and text.startswith("(session 1")
    picked = [prep.candidates.index(u) for u in units]
    alone = sum(prep.text_tokens[i] + 2 for i in picked)  # each unit with its own header
    assert prep._cost(picked) < alone
    assert abs(prep._cost(picked) - prep.tokenizer.count(text)) <= 2 * len(units)
    # a room that only the shown (shorter) text fits still takes them all
    again, _ = prep.pack("tomatoes roses pruning gardening sun water winter", prep._cost(picked))
    assert again == units
