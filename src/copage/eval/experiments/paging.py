"""``paging``: the boundary x eviction grid (paper Tables 7, 8 and 10; Figures 4-5).

LLM-free, always: :func:`copage.eval.simulation.simulate` over the grid (hit rate,
Belady hit rate, routing_top1, tokens). With a model: every cell is also run
through :class:`copage.session.PagedChat` (see :mod:`.model_probe`), giving
accuracy (binary judge; exact gold-string match beside it), trigger rate and
right-page rate per cell.

Averages follow the paper: a boundary's figure is the mean over FIFO, LRU, LFU
and Belady (those in the grid); copage's policies (lrfu, adaptive, query) get
their own column, never inside the paper's average.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from copage.eval.experiments.grid import (
    COPAGE_POLICIES,
    PAPER_POLICIES,
    cells_for,
    datasets_of,
    mean,
    run_grid,
    workers,
)
from copage.eval.experiments.interface import BenchContext, ExperimentResult

_METRICS = ("hit_rate", "routing_top1", "accuracy", "exact", "trigger_rate", "right_page_rate")


def _avg(rows: Sequence[dict[str, Any]], key: str) -> float | None:
    return mean(r.get(key) for r in rows)


def boundary_table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table 7: per dataset (and model) x boundary, the paper's policy average and copage's."""
    out: list[dict[str, Any]] = []
    keys = dict.fromkeys((r["dataset"], r.get("model"), r["boundary"]) for r in rows)
    for ds, model, b in keys:
        sel = [r for r in rows if (r["dataset"], r.get("model"), r["boundary"]) == (ds, model, b)]
        paper = [r for r in sel if r["policy"] in PAPER_POLICIES]
        own = [r for r in sel if r["policy"] in COPAGE_POLICIES]
        row: dict[str, Any] = {"dataset": ds, "model": model, "boundary": b,
                               "pages_mean": _avg(sel, "pages_mean"),
                               "paper_policies": ",".join(r["policy"] for r in paper)}
        for m in _METRICS:
            if any(r.get(m) is not None for r in sel):
                row[m] = _avg(paper, m)
                row[f"copage_{m}"] = _avg(own, m)
        out.append(row)
    return out


def policy_table(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Table 8: per dataset (and model) x policy, averaged over boundaries, with the Belady gap."""
    out: list[dict[str, Any]] = []
    keys = dict.fromkeys((r["dataset"], r.get("model"), r["policy"]) for r in rows)
    for ds, model, pol in keys:
        sel = [r for r in rows if (r["dataset"], r.get("model"), r["policy"]) == (ds, model, pol)]
        row: dict[str, Any] = {"dataset": ds, "model": model, "policy": pol,
                               "group": "paper" if pol in PAPER_POLICIES else "copage"}
        for m in _METRICS:
            if any(r.get(m) is not None for r in sel):
                row[m] = _avg(sel, m)
        out.append(row)
    for ds, model in dict.fromkeys((r["dataset"], r["model"]) for r in out):
        group = [r for r in out if (r["dataset"], r["model"]) == (ds, model)]
        online = [r for r in group if r["policy"] in ("fifo", "lru", "lfu")]
        bel = [r for r in group if r["policy"] == "belady"]
        for m in ("hit_rate", "accuracy"):
            vals = [r[m] for r in online if r.get(m) is not None]
            if bel and vals and bel[0].get(m) is not None:
                for r in group:
                    r[f"belady_gap_{m}"] = bel[0][m] - max(vals) if r["policy"] == "belady" else None
    return out


class PagingExperiment:
    """The boundary x eviction grid (see the module docstring)."""

    name = "paging"
    needs_model = False
    description = "boundary x eviction grid: hit rates, Belady, routing; with a model, accuracy"

    def run(self, ctx: BenchContext) -> ExperimentResult:
        """Run the grid on every dataset (and with the model when given)."""
        rows: list[dict[str, Any]] = []
        notes: list[str] = []
        cells = cells_for(ctx)
        datasets = datasets_of(ctx)
        prog = ctx.progress
        bar = prog.start("paging grid", len(datasets)) if prog is not None else None
        for ds in datasets:
            rows += [{**r, "model": None} for r in run_grid(ds, cells, workers(ctx))]
            if prog is not None and bar is not None:
                prog.advance(bar)
        if prog is not None and bar is not None:
            prog.finish(bar)
        tables: dict[str, list[dict[str, Any]]] = {"paging": rows}
        free_rows = [{k: v for k, v in r.items() if k != "probes_skipped"} for r in rows]
        tables["boundaries"] = boundary_table(free_rows)
        tables["policies"] = policy_table(free_rows)
        if ctx.model is not None:
            from copage.eval.experiments.model_probe import run_cells

            model_rows, mnotes = run_cells(ctx, self.name, datasets, cells)
            notes += mnotes
            tables["paging_model"] = model_rows
            tables["boundaries_model"] = boundary_table(model_rows)
            tables["policies_model"] = policy_table(model_rows)
        from copage.eval.experiments.topology import topology_rows

        tables["topology"] = topology_rows(ctx, datasets)
        notes.append("paper averages use " + ", ".join(PAPER_POLICIES) + "; copage policies ("
                     + ", ".join(COPAGE_POLICIES) + ") are reported beside them (copage_* columns)")
        return ExperimentResult(self.name, tables, [], notes)


EXPERIMENT = PagingExperiment()
