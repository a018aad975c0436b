"""Tables laid out like the paper's: one row per setting, one column per dataset (and model)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from copage.eval.report.tables import Row

PAPER: dict[str, tuple[str, str, dict[str, float]]] = {
    # table: (paper metric, copage metric beside it, {row value: the paper's figure})
    "table7_boundaries": ("paper: accuracy, synthetic, GPT-4o-mini (Table 7)",
                          "copage: hit rate and routing, LLM-free",
                          {"fixed_20": 0.967, "topic_shift": 0.567}),
    "table11_formats": ("paper: accuracy on 22 controlled probes (Table 11)",
                        "copage: routing_top1 LLM-free; accuracy with a model",
                        {"minimal": 0.636}),
    "table13_generators": ("paper: E2E accuracy gain over heuristic (Table 13)",
                           "copage: routing_top1 LLM-free; accuracy with a model",
                           {"hybrid": 0.044, "llm-batch": 0.087}),
}
"""The paper's figures that copage's paper-style tables print beside their own (from
``/work/shared/REFERENCES.md``); each says which metric it is in."""

HEADLINE_PAPER: dict[str, float] = {"bookmark_recall": 2.18, "full_context": 2.02,
                                    "search_tool": 1.90, "word_overlap": 1.88, "bm25": 1.86}
"""Table 4 (LoCoMo, GPT-4o-mini, 1-5 judge score): the paper's figure per method."""
HEADLINE_PAPER_METRIC = "paper: judge score 1-5, LoCoMo, GPT-4o-mini (Table 4)"


def with_paper(name: str, rows: list[Row], row_key: str) -> list[Row]:
    """``rows`` with the paper's figure and both metrics' names after ``row_key``."""
    if name not in PAPER:
        return rows
    metric, _, figures = PAPER[name]
    out = []
    for r in rows:
        head = {row_key: r[row_key], metric: figures.get(str(r[row_key]))}
        out.append({**head, **{k: v for k, v in r.items() if k != row_key}})
    return out


def metric_note(name: str) -> str | None:
    """What the paper's column and copage's columns of table ``name`` are measured in."""
    if name not in PAPER:
        return None
    metric, ours, _ = PAPER[name]
    return f"{metric} beside {ours}: not the same metric"


def split_by_dataset(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """``rows`` grouped by dataset (one pivot per dataset instead of one wide table)."""
    out: dict[str, list[Row]] = {}
    for r in rows:
        out.setdefault(str(r["dataset"]), []).append(r)
    return out


def pivot(rows: Sequence[Row], row_key: str, metrics: Sequence[str],
          with_dataset: bool = True) -> list[Row]:
    """Rows by ``row_key``; a column ``<dataset>[/<model>] <metric>`` per dataset and metric
    (without the dataset when ``with_dataset`` is off: the table of one dataset)."""
    out: dict[Any, Row] = {}
    for r in rows:
        label = (r["dataset"] if with_dataset else "") + (
            (f"/{r['model']}" if with_dataset else str(r["model"])) if r.get("model") else "")
        row = out.setdefault(r[row_key], {row_key: r[row_key]})
        if "group" in r:
            row.setdefault("group", r["group"])
        for m in metrics:
            if m in r:
                row[f"{label} {m}".strip()] = r[m]
    return list(out.values())


def budget_pivot(rows: Sequence[Row], with_dataset: bool = True) -> list[Row]:
    """One row per method; per dataset and budget: coverage (all / any) and mean prompt tokens."""
    out: dict[Any, Row] = {}
    order = {d: i for i, d in enumerate(dict.fromkeys(r["dataset"] for r in rows))}
    for r in sorted(rows, key=lambda r: (order[r["dataset"]], int(r["budget"]))):
        label = f"{r['method']} [{r['trigger']}]" if r.get("trigger") else r["method"]
        row = out.setdefault(label, {"method": label})
        head = f"{r['dataset']} {r['budget']}" if with_dataset else f"{r['budget']}"
        row[f"{head} all"] = r.get("evidence_coverage")
        row[f"{head} any"] = r.get("evidence_coverage_any")
        row[f"{head} tokens"] = r.get("prompt_tokens_mean")
    return list(out.values())


def paper_tables(tables: dict[str, dict[str, list[Row]]], split: bool = False) -> dict[str, list[Row]]:
    """Paper-style pivots of the experiments' tables (those that ran).

    ``split``: one table per dataset, named ``<table> (<dataset>)`` (the report's
    pages); else one table with a column group per dataset (the CSV/Markdown files).
    """
    out: dict[str, list[Row]] = {}
    curves = [r for r in tables.get("main", {}).get("budget_curves") or [] if r.get("budget")]
    if curves and not split:
        out["coverage_vs_budget"] = budget_pivot(curves)
    for ds, sel in split_by_dataset(curves).items() if split else ():
        out[f"coverage_vs_budget ({ds})"] = budget_pivot(sel, with_dataset=False)

    def add(name: str, rows: Sequence[Row], row_key: str, metrics: Sequence[str]) -> None:
        if not rows:
            return
        if not split:
            out[name] = with_paper(name, pivot(rows, row_key, metrics), row_key)
            return
        for ds, sel in split_by_dataset(rows).items():
            out[f"{name} ({ds})"] = with_paper(
                name, pivot(sel, row_key, metrics, with_dataset=False), row_key)

    paging = tables.get("paging", {})
    add("table7_boundaries", paging.get("boundaries") or [], "boundary",
        ["hit_rate", "copage_hit_rate", "routing_top1", "pages_mean"])
    add("table8_policies", paging.get("policies") or [], "policy",
        ["hit_rate", "routing_top1", "belady_gap_hit_rate"])
    add("table7_boundaries_accuracy", paging.get("boundaries_model") or [], "boundary",
        ["accuracy", "copage_accuracy", "exact"])
    add("table8_10_policies_accuracy", paging.get("policies_model") or [], "policy",
        ["accuracy", "exact", "belady_gap_accuracy"])
    add("table11_formats", tables.get("formats", {}).get("formats") or [], "format",
        ["bookmark_tokens_mean", "routing_top1", "accuracy", "trigger_rate"])
    gen = tables.get("generators", {}).get("generators")
    if gen:
        add("table13_generators", [r for r in gen if r.get("boundary") == "fixed_10"], "keywords",
            ["routing_top1", "bookmark_tokens_mean", "accuracy", "trigger_rate", "recall_precision"])
        out["table14_generators_by_category"] = table14(gen)
        add("tableB_generators_fixed5", [r for r in gen if r.get("boundary") == "fixed_5"],
            "keywords", ["routing_top1", "bookmark_tokens_mean", "accuracy", "trigger_rate"])
    return out


TABLE14_LACKS = ("needs a model run: Table 14 is the accuracy of each keyword generator by "
                 "LoCoMo question category (fixed_10 + LRU, k=5), which only answers give; "
                 "run `copage bench generators --model SPEC --locomo FILE`")


def table14(gen: Sequence[Row]) -> list[Row]:
    """The paper's Table 14: per generator, accuracy by LoCoMo category (ids 1-5, as the
    dataset numbers them), on datasets with categories; or one row saying what it lacks."""
    rows = [r for r in gen if r.get("boundary") == "fixed_10" and r.get("model")
            and any(k.startswith("accuracy_cat") for k in r)]
    if not rows:
        return [{"table14": TABLE14_LACKS}]
    cats = sorted({k for r in rows for k in r if k.startswith("accuracy_cat")})
    return pivot(rows, "keywords", cats)
