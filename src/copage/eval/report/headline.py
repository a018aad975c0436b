"""The report's headline table: one row per (dataset, method, trigger) of ``main``.

Columns: the units and recent window of the method's prompt, evidence coverage (LLM-free) or accuracy (with a model) with its 95%
Wilson interval, billed prompt tokens (mean and max over the probe's calls), the
share of the budget spent and on what (recent turns, bookmarks, paged-in text,
tool schema, preamble), and the probes that did not fit (counted as misses).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from copage.eval.report.paper import HEADLINE_PAPER, HEADLINE_PAPER_METRIC
from copage.eval.stats import wilson_interval

Row = dict[str, Any]

SHARES = ("recent_turns", "bookmarks", "paged_in", "tool_schema", "preamble")


def _presets() -> set[str]:
    """The synthetic presets' names (the paper's Table 4 is on LoCoMo only)."""
    from copage.eval.datasets import preset_names

    return set(preset_names())


def lead_sentences(tables: Mapping[str, Mapping[str, Sequence[Row]]]) -> list[str]:
    """The report's first lines: per (dataset, budget), which method leads, copage's default
    or the stronger BM25 baseline (sessions or pages behind copage's window), with the
    paired bootstrap over conversations (``main``'s ``leader`` table); empty without it."""
    rows = (tables.get("main") or {}).get("leader") or []
    return [f"Who leads: {r['sentence']}" for r in rows if r.get("sentence")]


def headline(tables: Mapping[str, Mapping[str, Sequence[Row]]]) -> list[Row]:
    """The headline rows (empty without ``main``)."""
    rows = (tables.get("main") or {}).get("methods") or []
    out: list[Row] = []
    for r in rows:
        model = r.get("model")
        if model is None:
            score, metric = r.get("evidence_coverage"), "evidence coverage (all)"
        else:
            score, metric = r.get("accuracy", r.get("locomo_f1")), \
                "accuracy" if r.get("accuracy") is not None else "LoCoMo F1"
        n = int(r.get("probes") or 0)
        low = high = None
        if score is not None and n and metric != "LoCoMo F1":
            ci = wilson_interval(round(float(score) * n), n)
            low, high = ci.low, ci.high
        row: Row = {"dataset": r.get("dataset"), "model": model or "LLM-free",
                    "method": r.get("method"), "trigger": r.get("trigger") or "-",
                    "units": r.get("units"),
                    "metric": metric, "score": score, "ci_low": low, "ci_high": high,
                    "billed_tokens_mean": r.get("prompt_tokens_mean"),
                    "billed_tokens_max": r.get("prompt_tokens_max"),
                    "budget_spent": r.get("budget_spent"),
                    "over_budget": r.get("over_budget"), "does_not_fit": r.get("does_not_fit")}
        for part in SHARES:
            row[f"share_{part}"] = r.get(f"share_{part}")
        paper = None if str(r.get("dataset")) in _presets() else \
            HEADLINE_PAPER.get(str(r.get("method")))
        row["paper"] = paper
        row["paper_metric"] = HEADLINE_PAPER_METRIC if paper is not None else None
        out.append(row)
    return out


def _pct(x: Any) -> str:
    return "-" if x is None else f"{100 * float(x):.0f}%"


def headline_display(rows: Sequence[Row]) -> dict[str, list[Row]]:
    """The headline rows as the report prints them: one table per (dataset, model), the
    metric named in its column, the interval in one cell, shares of the budget in %."""
    out: dict[str, list[Row]] = {}
    for r in rows:
        title = f"{r['dataset']}: {r['model']}"
        metric = str(r["metric"])
        low, high = r.get("ci_low"), r.get("ci_high")
        shown: Row = {"method": r["method"], "trigger": r["trigger"], "units": r.get("units") or "-",
                      metric: r["score"],
                      "95% CI": "-" if low is None or high is None else f"[{low:.3f}, {high:.3f}]",
                      "billed tokens mean": r.get("billed_tokens_mean"),
                      "billed tokens max": r.get("billed_tokens_max"),
                      "budget spent": _pct(r.get("budget_spent"))}
        for part in SHARES:
            shown[part.replace("_", " ")] = _pct(r.get(f"share_{part}"))
        shown["over budget"] = r.get("over_budget")
        shown["does not fit"] = r.get("does_not_fit")
        if r.get("paper") is not None:
            shown[HEADLINE_PAPER_METRIC] = r["paper"]
        out.setdefault(title, []).append(shown)
    return out
