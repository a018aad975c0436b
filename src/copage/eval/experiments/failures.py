"""``failures``: trigger vs right page, by fact type (paper Table 9 and section 5's failure analysis).

LLM-free: at fixed_10 + LRU, k=5 (heuristic keywords), per fact type (LoCoMo:
category, id beside its name): how many probes fault (their page is evicted, so
recall must trigger) and how often BM25 over the bookmarks routes to a needed page
(``routing_top1``, the offline stand-in for the right-page rate). With a model,
trigger rate and right-page rate per type come from the model's runs.
"""

from __future__ import annotations

from typing import Any

from copage.eval.experiments.grid import (
    breakdown,
    datasets_of,
    fixed_cell,
    for_dataset,
    group_key,
    mean,
    probe_outcomes,
)
from copage.eval.experiments.interface import BenchContext, ExperimentResult


class FailuresExperiment:
    """Failure analysis by fact type (see the module docstring)."""

    name = "failures"
    needs_model = False
    description = "faults and routing (model: trigger and right page) by fact type"

    def run(self, ctx: BenchContext) -> ExperimentResult:
        """Per-probe outcomes grouped by type."""
        cell = fixed_cell(ctx)
        per_probe: list[dict[str, Any]] = []
        for ds in datasets_of(ctx):
            per_probe += probe_outcomes(ds, for_dataset(ctx, ds, cell))
        tables: dict[str, list[dict[str, Any]]] = {"failures": breakdown(per_probe)}
        notes = [f"setting: {cell.boundary} + {cell.policy}, k={cell.k}, keywords {cell.keywords}"]
        if ctx.model is not None:
            from copage.eval.experiments.model_probe import probe_records

            recs: list[dict[str, Any]] = []
            mnotes: list[str] = []
            for ds in datasets_of(ctx):
                r, n = probe_records(ctx, self.name, [ds], [for_dataset(ctx, ds, cell)])
                recs += r
                mnotes += [x for x in n if x not in mnotes]
            notes += mnotes
            tables["failures_model"] = model_breakdown(recs)
        return ExperimentResult(self.name, tables, [], notes)


def model_breakdown(recs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per dataset x type: evicted, triggered, right page, accuracy (model records)."""
    out = []
    for key in dict.fromkeys((r["dataset"], group_key(r)) for r in recs):
        sel = [r for r in recs if (r["dataset"], group_key(r)) == key]
        need = [r for r in sel if r["needs_recall"]]
        trig = [r for r in need if r["triggered"]]
        out.append({"dataset": key[0], "type": key[1], "probes": len(sel), "needs_recall": len(need),
                    "trigger_rate": len(trig) / len(need) if need else None,
                    "right_page_rate": mean(1.0 if r["right_page"] else 0.0 for r in trig),
                    "accuracy": mean(r.get("correct") for r in sel)})
    return out


EXPERIMENT = FailuresExperiment()
