"""``topology``: revisit rate per conversation against the FIFO/LRU/LFU gap (paper Figure 6).

Revisit rate of a conversation (under one boundary, probe order and placement,
the same schedule as ``copage simulate``): over the probe access sequence (each
probe accesses every page holding its evidence, probes in asking order), the
share of probe page accesses that go to a page already accessed by an earlier
probe. 0 when every probe needs a page no earlier probe needed (a forward-moving
conversation); near 1 when probes keep returning to the same pages (LoCoMo).
The paper attributes FIFO's win on synthetic data and its loss on LoCoMo to this.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from copage.core.boundaries import get_boundary
from copage.core.paginate import paginate
from copage.eval.datasets.probes import Conversation, Dataset
from copage.eval.experiments.grid import datasets_of, mean
from copage.eval.experiments.interface import BenchContext, ExperimentResult
from copage.eval.simulation import Cell, run_conversation, schedule

DEFAULT_BOUNDARY = "fixed_10"
POLICIES = ("fifo", "lru", "lfu")


def revisit_rate(conv: Conversation, cell: Cell) -> tuple[float | None, int]:
    """(revisit rate, probe page accesses) of ``conv`` under ``cell``'s boundary and schedule."""
    spans = paginate(conv.turns, get_boundary(cell.boundary))
    page_of = {conv.turns[j].id: i for i, s in enumerate(spans) for j in range(s.start, s.end)}
    seen: set[int] = set()
    again = total = 0
    for _, probe in schedule(conv, spans, cell):
        for page in sorted({page_of[e] for e in probe.evidence}):
            total += 1
            again += page in seen
            seen.add(page)
    return (again / total if total else None), total


def topology_rows(ctx: BenchContext, datasets: Sequence[Dataset]) -> list[dict[str, Any]]:
    """One row per conversation: revisit rate and FIFO/LRU/LFU hit rates at the first ``k``."""
    boundary = str(ctx.options.get("topology_boundary", DEFAULT_BOUNDARY))
    k = int(ctx.paging.k[0]) if ctx.paging.k else 5
    p = ctx.paging
    rows: list[dict[str, Any]] = []
    for ds in datasets:
        memo: dict[tuple[Any, ...], Any] = {}
        for conv in ds.conversations:
            if not conv.probes:
                continue
            base = Cell(boundary, "lru", k, "heuristic", "minimal", p.placement, p.order, ctx.seed)
            rate, accesses = revisit_rate(conv, base)
            row: dict[str, Any] = {"dataset": ds.name, "conversation": conv.id, "boundary": boundary,
                                   "k": k, "probes": len(conv.probes),
                                   "probe_page_accesses": accesses, "revisit_rate": rate}
            for pol in POLICIES:
                cell = Cell(boundary, pol, k, "heuristic", "minimal", p.placement, p.order, ctx.seed)
                run = run_conversation(conv, cell, memo)
                row[f"hit_{pol}"] = mean(1.0 if o.hit else 0.0 for o in run.outcomes)
                row["pages"] = run.pages
            fifo, lru = row.get("hit_fifo"), row.get("hit_lru")
            row["lru_minus_fifo"] = lru - fifo if lru is not None and fifo is not None else None
            rows.append(row)
    return rows


def topology_summary(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per dataset: mean revisit rate and mean hit rate of each policy."""
    out = []
    for ds in dict.fromkeys(r["dataset"] for r in rows):
        sel = [r for r in rows if r["dataset"] == ds]
        row: dict[str, Any] = {"dataset": ds, "conversations": len(sel),
                               "revisit_rate": mean(r["revisit_rate"] for r in sel)}
        for pol in POLICIES:
            row[f"hit_{pol}"] = mean(r[f"hit_{pol}"] for r in sel)
        out.append(row)
    return out


class TopologyExperiment:
    """Revisit rate vs policy hit rates (also part of ``paging``)."""

    name = "topology"
    needs_model = False
    description = "revisit rate per conversation vs FIFO/LRU/LFU hit rates (Figure 6)"

    def run(self, ctx: BenchContext) -> ExperimentResult:
        """Rows per conversation and per dataset."""
        rows = topology_rows(ctx, datasets_of(ctx))
        return ExperimentResult(self.name, {"topology": rows, "topology_summary": topology_summary(rows)},
                                notes=[__doc__.split("\n\n")[1].replace("\n", " ") if __doc__ else ""])


EXPERIMENT = TopologyExperiment()
