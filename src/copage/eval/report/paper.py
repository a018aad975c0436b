"""Tables laid out like the paper's: one row per setting, one column per dataset (and model)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from copage.eval.report.tables import Row


def pivot(rows: Sequence[Row], row_key: str, metrics: Sequence[str]) -> list[Row]:
    """Rows by ``row_key``; a column ``<dataset>[/<model>] <metric>`` per dataset and metric."""
    out: dict[Any, Row] = {}
    for r in rows:
        label = r["dataset"] + (f"/{r['model']}" if r.get("model") else "")
        row = out.setdefault(r[row_key], {row_key: r[row_key]})
        if "group" in r:
            row.setdefault("group", r["group"])
        for m in metrics:
            if m in r:
                row[f"{label} {m}"] = r[m]
    return list(out.values())


def budget_pivot(rows: Sequence[Row]) -> list[Row]:
    """One row per method; per dataset and budget: coverage (all / any) and mean prompt tokens."""
    out: dict[Any, Row] = {}
    order = {d: i for i, d in enumerate(dict.fromkeys(r["dataset"] for r in rows))}
    for r in sorted(rows, key=lambda r: (order[r["dataset"]], int(r["budget"]))):
        row = out.setdefault(r["method"], {"method": r["method"]})
        head = f"{r['dataset']} {r['budget']}"
        row[f"{head} all"] = r.get("evidence_coverage")
        row[f"{head} any"] = r.get("evidence_coverage_any")
        row[f"{head} tokens"] = r.get("prompt_tokens_mean")
    return list(out.values())


def paper_tables(tables: dict[str, dict[str, list[Row]]]) -> dict[str, list[Row]]:
    """Paper-style pivots of the experiments' tables (those that ran)."""
    out: dict[str, list[Row]] = {}
    curves = [r for r in tables.get("main", {}).get("budget_curves") or [] if r.get("budget")]
    if curves:
        out["coverage_vs_budget"] = budget_pivot(curves)
    paging = tables.get("paging", {})
    if paging.get("boundaries"):
        out["table7_boundaries"] = pivot(paging["boundaries"], "boundary",
                                         ["hit_rate", "copage_hit_rate", "routing_top1", "pages_mean"])
    if paging.get("policies"):
        out["table8_policies"] = pivot(paging["policies"], "policy",
                                       ["hit_rate", "routing_top1", "belady_gap_hit_rate"])
    if paging.get("boundaries_model"):
        out["table7_boundaries_accuracy"] = pivot(
            paging["boundaries_model"], "boundary", ["accuracy", "copage_accuracy", "exact"])
    if paging.get("policies_model"):
        out["table8_10_policies_accuracy"] = pivot(
            paging["policies_model"], "policy", ["accuracy", "exact", "belady_gap_accuracy"])
    fm = tables.get("formats", {}).get("formats")
    if fm:
        out["table11_formats"] = pivot(fm, "format", ["bookmark_tokens_mean", "routing_top1",
                                                      "accuracy", "trigger_rate"])
    gen = tables.get("generators", {}).get("generators")
    if gen:
        out["table13_generators"] = pivot([r for r in gen if r.get("boundary") == "fixed_10"],
                                          "keywords", ["routing_top1", "bookmark_tokens_mean",
                                                       "accuracy", "trigger_rate", "recall_precision"])
        out["table14_generators_by_category"] = table14(gen)
        out["tableB_generators_fixed5"] = pivot([r for r in gen if r.get("boundary") == "fixed_5"],
                                                "keywords", ["routing_top1", "bookmark_tokens_mean",
                                                             "accuracy", "trigger_rate"])
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
